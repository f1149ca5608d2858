"""The syntax-tree pieces that ``@unrolled`` (core.unroll) and its register arrays
(core.register_arrays) share: the error they raise, renaming, and questions about names and
expressions."""
import ast
import copy


class UnrollError(SyntaxError):
    """A static_range or static() that cannot be expanded; names the file and line."""

    def __init__(self, message, filename, lineno, line):
        super().__init__(message, (filename, lineno, None, line))

    def __str__(self):
        return f"{self.msg}\n  File \"{self.filename}\", line {self.lineno}\n    {(self.text or '').strip()}"


class _Rename(ast.NodeTransformer):
    """Parameters replaced by their argument expressions, local names renamed."""

    def __init__(self, substitute, rename):
        self.substitute, self.rename = substitute, rename

    def visit_Name(self, node):
        if node.id in self.substitute and isinstance(node.ctx, ast.Load):
            return ast.copy_location(copy.deepcopy(self.substitute[node.id]), node)
        if node.id in self.rename:
            node.id = self.rename[node.id]
        return node


def _names(tree, skip=None):
    """Every name used or bound in ``tree``, outside the subtree ``skip``."""
    out, stack = set(), [tree]
    while stack:
        n = stack.pop()
        if n is skip:
            continue
        if isinstance(n, ast.Name):
            out.add(n.id)
        elif isinstance(n, ast.arg):
            out.add(n.arg)
        stack.extend(ast.iter_child_nodes(n))
    return out


def _base(subscript):
    while isinstance(subscript, (ast.Subscript, ast.Attribute)):
        subscript = subscript.value
    return subscript.id if isinstance(subscript, ast.Name) else None


def _stored_subscripts(node):
    targets = []
    if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
        for t in node.targets if isinstance(node, ast.Assign) else [node.target]:
            targets += [n for n in ast.walk(t) if isinstance(n, ast.Subscript)]
    return targets


def _without_effects(expr):
    """No calls but min/max/abs: evaluating it can be skipped when its value is not used."""
    return all(not isinstance(n, ast.Call) or (isinstance(n.func, ast.Name) and n.func.id in _PURE)
               for n in ast.walk(expr))


_PURE = ("min", "max", "abs")


def _walk_loop_body(body):
    """Nodes of a loop body, not descending into nested loops or functions (their own break)."""
    stack = list(body)
    while stack:
        n = stack.pop()
        yield n
        if isinstance(n, (ast.For, ast.While, ast.FunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        stack.extend(ast.iter_child_nodes(n))
