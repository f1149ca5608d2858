"""Compile-time unrolling for numba kernels: ``#pragma unroll`` and ``if constexpr`` for Python.

numba has no way to ask for a loop to be unrolled, and a register tile (a small local array)
only lives in registers when every index into it is a constant.  ``@unrolled`` rewrites a
function's source before numba sees it:

    @jit(max_registers=128)
    @unrolled
    def kernel(A, B, C):
        acc = cuda.local.array((TM, TN), float32)
        for i in static_range(TM):          # written out TM times, i a constant in each copy
            for j in static_range(TN):
                acc[i, j] = 0.0             # -> acc_0_0 = float32(0.0), acc_0_1 = ... (see below)
        if static(STAGES == 2):             # decided now: only the chosen branch is kept
            ...

* ``for v in static_range(stop)`` / ``static_range(start, stop[, step])``: the bounds must be
  compile-time ints (literals, globals, closure variables of a factory function, enclosing
  static loop variables); the body is repeated with ``v`` replaced by each value, and constant
  arithmetic that involves it is folded (``acc[4 * p + 1, j]`` becomes ``acc[9, 3]``).  No
  ``break``/``continue``/``else`` directly inside: they would mean something else once unrolled.
* ``if static(cond):`` / ``elif`` / ``else``, and ``x if static(cond) else y``: ``cond`` is
  evaluated now and only the chosen branch is kept.  ``static(expr)`` anywhere else becomes the
  constant ``expr``.
* A local array (``cuda.local.array`` with a constant shape) whose every use, once the loops
  are written out, is an element at constant indices becomes one variable per element:
  ``acc[1, 2]`` is written ``acc_1_2`` (what the compiler does to keep it in registers, done
  early, so numba types a few hundred variables instead of thousands of array accesses; the
  machine code is the same, the compile about 4x faster for lessons 07-08:
  experiments/compile_time/).  A store is cast to the array's type unless the value visibly
  has it.  An array indexed at run time, or passed whole to a function, stays an array.
* A function defined inside the decorated one (a helper, like a C++ lambda that captures by
  reference) is written out where it is called, as ``helper(args)`` or ``target = helper(args)``:
  its parameters become the arguments (evaluated once, first, unless they are plain expressions
  of names, constants and min/max/abs; a constant argument is static inside it), its
  ``return value`` becomes ``target = value``, and its local names get a ``_helper`` suffix where
  they would collide.  (numba can inline such closures itself, but lesson 08's kernel then took
  minutes to compile instead of seconds.)
* Outside ``@unrolled`` (a plain Python call, the simulator without the decorator),
  ``static_range`` is ``range`` and ``static`` returns its argument: the function means the same.

``@unrolled`` must be the innermost decorator (it reads the function's source: a module, a
Jupyter cell, a function defined inside a factory function all work).  It returns a plain
Python function compiled from the expanded source under a file name of its own, registered in
``linecache``: tracebacks, the CUDA simulator and the bank tracer point at lines of the expanded
code, which ``expanded_source(fn)`` returns (also ``fn.__unrolled_source__``).
"""
import ast
import copy
import inspect
import itertools
import linecache
import textwrap
import types

from gemm_lessons.core.register_arrays import _RegisterArrays
from gemm_lessons.core.unroll_ast import (UnrollError, _Rename, _base, _names, _stored_subscripts, _walk_loop_body,
                                         _without_effects)

__all__ = ["unrolled", "static_range", "static", "expanded_source", "UnrollError"]


def static_range(*args):
    """``range`` whose loop ``@unrolled`` writes out (plain ``range`` when not unrolled)."""
    return range(*args)


def static(value):
    """Marks a condition or value ``@unrolled`` evaluates at expansion time (identity otherwise)."""
    return value


_counter = itertools.count(1)
_CONSTANT_TYPES = (bool, int, float)


def expanded_source(fn):
    """The source ``@unrolled`` compiled for ``fn`` (a function, or a numba kernel of one)."""
    for f in (fn, getattr(fn, "py_func", None), getattr(fn, "fn", None)):
        if f is not None and hasattr(f, "__unrolled_source__"):
            return f.__unrolled_source__
    raise TypeError(f"{fn!r} was not made by @unrolled")


def unrolled(fn):
    """Expand the static_range loops and static() branches of ``fn`` (see the module docstring)."""
    filename, first_line, lines, node = _parsed_source(fn)
    closure = {name: cell.cell_contents for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ())
               if _has_contents(cell)}
    expander = _Expander(fn.__globals__, closure, node, filename, first_line - 1, lines)
    node = expander.generic_visit(node)
    _RegisterArrays(expander).scalarize(node)
    _fill_empty_blocks(node)
    ast.fix_missing_locations(node)
    text = ast.unparse(node) + "\n"

    name = f"<unrolled {fn.__qualname__} #{next(_counter)}>"
    linecache.cache[name] = (len(text), None, text.splitlines(True), name)
    # Compiled inside a factory whose parameters are fn's free variables, so that the names the
    # expanded body still reads from the closure stay closure variables, sharing fn's cells.
    factory = ast.parse(f"def __unroll_factory__({', '.join(fn.__code__.co_freevars)}):\n    pass\n")
    factory.body[0].body = ast.parse(text).body + [ast.Return(ast.Name(fn.__name__, ast.Load()))]
    ast.fix_missing_locations(factory)
    module_code = compile(factory, name, "exec")
    factory_code = next(c for c in module_code.co_consts if isinstance(c, types.CodeType))
    code = next(c for c in factory_code.co_consts if isinstance(c, types.CodeType) and c.co_name == fn.__name__)
    cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
    new = types.FunctionType(code, fn.__globals__, fn.__name__, fn.__defaults__,
                             tuple(cells[v] for v in code.co_freevars))
    new.__kwdefaults__ = fn.__kwdefaults__
    new.__qualname__, new.__module__, new.__doc__ = fn.__qualname__, fn.__module__, fn.__doc__
    new.__unrolled_source__ = text
    new.__unrolled_from__ = fn
    return new


_parsed = {}  # code -> (file, first line, lines, tree): a factory's kernel is parsed once


def _parsed_source(fn):
    """The function's source, read the first time (later calls do not see edits of the file,
    like the function's code object)."""
    key = (fn.__code__, fn.__code__.co_filename)  # equal code in two notebook cells: two entries
    if key not in _parsed:
        lines, first_line = inspect.getsourcelines(fn)
        tree = ast.parse(textwrap.dedent("".join(lines)))
        node = tree.body[0]
        if not isinstance(node, ast.FunctionDef) or node.name != fn.__name__:
            raise TypeError(f"@unrolled: could not find the source of {fn.__qualname__} (was its file "
                            "edited after it was imported? then restart Python)")
        node.decorator_list = []
        _parsed[key] = (inspect.getsourcefile(fn) or fn.__code__.co_filename, first_line, lines, node)
    filename, first_line, lines, node = _parsed[key]
    return filename, first_line, lines, copy.deepcopy(node)


def _has_contents(cell):
    try:
        cell.cell_contents
    except ValueError:
        return False
    return True


def _local_names(fn_node):
    """Arguments and every name the function (or a function inside it) assigns: run-time values."""
    names = set()
    for n in ast.walk(fn_node):
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            names.add(n.id)
        elif isinstance(n, ast.arg):  # of the function and of functions defined inside it
            names.add(n.arg)
        elif isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n is not fn_node:
            names.add(n.name)
    return names


def _fill_empty_blocks(tree):
    for n in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            block = getattr(n, field, None)
            if isinstance(block, list) and not block and (field == "body" or isinstance(n, ast.Try)):
                block.append(ast.Pass())


class _Expander(ast.NodeTransformer):
    def __init__(self, globals_, closure, fn_node, filename, line_offset, lines):
        self.globals, self.closure, self.local_names = globals_, closure, _local_names(fn_node)
        self.filename, self.line_offset, self.lines = filename, line_offset, lines
        self.loop_values = {}  # static loop variable -> its value in the copy being expanded
        self.helpers = {}  # inline helper name -> its FunctionDef
        self.inlining = []  # helpers being written out, innermost last
        helpers = [n for n in ast.walk(fn_node) if isinstance(n, ast.FunctionDef) and n is not fn_node]
        # a helper's own names that appear anywhere else in the function get a suffix when inlined
        self.outside = {h.name: _names(fn_node, skip=h) for h in helpers}
        # arrays a helper may write (subscript stores, arrays passed to calls): an argument that
        # reads one of them is evaluated once, before the helper's body, like any call argument
        self.written = {_base(t) for h in helpers for n in ast.walk(h) for t in _stored_subscripts(n)}
        self.written |= {a.id for h in helpers for n in ast.walk(h) if isinstance(n, ast.Call)
                         for a in n.args if isinstance(a, ast.Name)}

    # ---- evaluation at expansion time
    def error(self, node, message):
        line = getattr(node, "lineno", 1)
        text = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
        return UnrollError(message, self.filename, self.line_offset + line, text)

    def evaluate(self, expr, what):
        runtime = sorted({n.id for n in ast.walk(expr) if isinstance(n, ast.Name)
                          and n.id in self.local_names and n.id not in self.loop_values})
        if runtime:
            raise self.error(expr, f"{what} `{ast.unparse(expr)}` uses {', '.join(runtime)}, "
                                   "a variable of the function (known only at run time)")
        try:
            return eval(compile(ast.Expression(expr), self.filename, "eval"), self.globals,
                        {**self.closure, **self.loop_values})
        except Exception as e:
            raise self.error(expr, f"{what} `{ast.unparse(expr)}` cannot be evaluated at expansion "
                                   f"time: {type(e).__name__}: {e}") from None

    def _is_call_of(self, node, marker):
        if not (isinstance(node, ast.Call) and isinstance(node.func, (ast.Name, ast.Attribute))):
            return False
        names = [n.id for n in ast.walk(node.func) if isinstance(n, ast.Name)]
        if any(n in self.local_names for n in names):
            return False
        try:
            return eval(compile(ast.Expression(node.func), "<unroll>", "eval"), self.globals,
                        dict(self.closure)) is marker
        except Exception:
            return False

    def _static_argument(self, call):
        if len(call.args) != 1 or call.keywords:
            raise self.error(call, "static() takes exactly one argument")
        return self.evaluate(call.args[0], "static()")

    # ---- statements
    def visit_For(self, node):
        node.iter = self.visit(node.iter)
        if not self._is_call_of(node.iter, static_range):
            return self.generic_visit(node)
        if node.iter.keywords or not 1 <= len(node.iter.args) <= 3:
            raise self.error(node, "static_range takes 1 to 3 positional arguments, like range")
        bounds = [self.evaluate(a, "static_range bound") for a in node.iter.args]
        for a, b in zip(node.iter.args, bounds):
            if not isinstance(b, int) or isinstance(b, bool):
                raise self.error(a, f"static_range bound `{ast.unparse(a)}` is {b!r}, not a compile-time int")
        if not isinstance(node.target, ast.Name):
            raise self.error(node, "a static_range loop variable must be a single name")
        if node.orelse:
            raise self.error(node, "a static_range loop cannot have an else: block")
        var = node.target.id
        for n in _walk_loop_body(node.body):
            if isinstance(n, (ast.Break, ast.Continue)):
                raise self.error(n, f"{type(n).__name__.lower()} inside a static_range loop: once "
                                    "the loop is written out it would leave the enclosing loop instead")
        for n in itertools.chain.from_iterable(ast.walk(s) for s in node.body):
            if isinstance(n, ast.Name) and n.id == var and not isinstance(n.ctx, ast.Load):
                raise self.error(n, f"the static_range loop variable {var} is assigned in the loop body")
        out = []
        saved = self.loop_values.get(var, _MISSING)
        for value in range(*bounds):
            self.loop_values[var] = value
            for stmt in copy.deepcopy(node.body):
                result = self.visit(stmt)
                out.extend(result if isinstance(result, list) else [result] if result is not None else [])
        if saved is _MISSING:
            self.loop_values.pop(var, None)
        else:
            self.loop_values[var] = saved
        return out

    def visit_If(self, node):
        if not self._is_call_of(node.test, static):
            return self.generic_visit(node)
        chosen = node.body if self._static_argument(node.test) else node.orelse
        out = []
        for stmt in chosen:
            result = self.visit(stmt)
            out.extend(result if isinstance(result, list) else [result] if result is not None else [])
        return out

    # ---- inline helpers: functions defined inside the function, written out where called
    def visit_FunctionDef(self, node):
        a = node.args
        if node.decorator_list or a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs or a.defaults:
            raise self.error(node, f"inline helper {node.name}: plain positional parameters only, "
                                   "no decorators or defaults")
        for n in ast.walk(node):
            if n is not node and isinstance(n, (ast.FunctionDef, ast.Lambda, ast.Yield, ast.YieldFrom,
                                                 ast.Global, ast.Nonlocal, ast.ClassDef)):
                raise self.error(n, f"inline helper {node.name}: no nested functions, yield, global "
                                    "or nonlocal")
        self.helpers[node.name] = node
        return None  # the definition itself disappears: every call is written out

    def _helper_call(self, value):
        if (isinstance(value, ast.Call) and isinstance(value.func, ast.Name)
                and value.func.id in self.helpers):
            return value
        return None

    def visit_Expr(self, node):
        call = self._helper_call(node.value)
        return self._inline(call, None) if call else self.generic_visit(node)

    def visit_Assign(self, node):
        call = self._helper_call(node.value)
        if call and len(node.targets) == 1:
            return self._inline(call, self.visit(node.targets[0]))
        return self.generic_visit(node)

    def _inline(self, call, target):
        fdef = self.helpers[call.func.id]
        name = fdef.name
        if name in self.inlining:
            raise self.error(call, f"inline helper {name} calls itself")
        params = [p.arg for p in fdef.args.args]
        if call.keywords and any(k.arg is None for k in call.keywords):
            raise self.error(call, f"inline helper {name}: no **arguments")
        args = dict(zip(params, [self.visit(a) for a in call.args]))
        args.update({k.arg: self.visit(k.value) for k in call.keywords})
        if len(call.args) > len(params) or set(args) != set(params):
            raise self.error(call, f"inline helper {name} takes ({', '.join(params)})")
        body = copy.deepcopy(fdef.body)
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            body = body[1:]  # the docstring
        assigned = {n.id for s in body for n in ast.walk(s)
                    if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
        rename = {v: f"{v}_{name}" for v in assigned | set(params) if v in self.outside[name]}
        substitute, temps = {}, []
        for p in params:  # in order: arguments are evaluated left to right
            if p not in assigned and self._substitutable(args[p]):
                substitute[p] = args[p]
            else:
                temps.append(ast.copy_location(ast.Assign([ast.Name(rename.get(p, p), ast.Store())], args[p]), call))
        for expr in substitute.values():
            if isinstance(expr, ast.Constant) and isinstance(expr.value, _CONSTANT_TYPES):
                expr.static = True  # a literal argument folds inside the helper like a loop variable
        body = [_Rename(substitute, rename).visit(s) for s in body]
        self.inlining.append(name)
        try:
            out = []
            for stmt in body:
                result = self.visit(stmt)
                out.extend(result if isinstance(result, list) else [result] if result is not None else [])
            out, returns = self._returns_to(out, target, fdef)
        finally:
            self.inlining.pop()
        if target is not None and not returns:
            raise self.error(call, f"inline helper {name} does not return a value on every path")
        used = {n.id for s in out for n in ast.walk(s) if isinstance(n, ast.Name)}
        temps = [t for t in temps if t.targets[0].id in used or not _without_effects(t.value)]
        return temps + out

    def _substitutable(self, expr):
        """An argument without calls (but min, max, abs), whose value the helper's body cannot
        change: it can stand in for its parameter wherever the body reads it."""
        if not _without_effects(expr):
            return False
        for n in ast.walk(expr):
            if isinstance(n, (ast.NamedExpr, ast.Lambda, ast.Starred, ast.comprehension)):
                return False
            if isinstance(n, ast.Subscript) and _base(n) in self.written:
                return False
        return True

    def _returns_to(self, stmts, target, fdef):
        """Statements with every ``return value`` turned into ``target = value`` (the rest of
        the body moves into the branch that does not return); True if every path returned."""
        out = []
        for idx, s in enumerate(stmts):
            if isinstance(s, ast.Return):
                if s.value is not None and target is not None:
                    out.append(ast.copy_location(ast.Assign([copy.deepcopy(target)], s.value), s))
                elif s.value is not None and not _without_effects(s.value):
                    out.append(ast.copy_location(ast.Expr(s.value), s))
                return out, True
            if isinstance(s, ast.If) and any(isinstance(n, ast.Return) for n in ast.walk(s)):
                rest = stmts[idx + 1:]
                body, r1 = self._returns_to(s.body + copy.deepcopy(rest), target, fdef)
                orelse, r2 = self._returns_to(s.orelse + copy.deepcopy(rest), target, fdef)
                s.body, s.orelse = body or [ast.Pass()], orelse
                out.append(s)
                return out, r1 and r2
            if any(isinstance(n, ast.Return) for n in ast.walk(s)):
                raise self.error(s, f"inline helper {fdef.name}: return only outside loops")
            out.append(s)
        return out, False

    # ---- expressions
    def visit_IfExp(self, node):
        if self._is_call_of(node.test, static):
            return self.visit(node.body if self._static_argument(node.test) else node.orelse)
        return self.generic_visit(node)

    def visit_Call(self, node):
        if self._is_call_of(node, static):
            return self._constant(self._static_argument(node), node)
        return self.generic_visit(node)

    def visit_Name(self, node):
        if node.id in self.helpers:
            raise self.error(node, f"inline helper {node.id}: call it as a statement, "
                                   f"`{node.id}(...)`, or as `target = {node.id}(...)`")
        if node.id in self.loop_values and isinstance(node.ctx, ast.Load):
            return self._constant(self.loop_values[node.id], node)
        return node

    def _constant(self, value, node):
        c = ast.copy_location(ast.Constant(value), node)
        c.static = True
        return c

    def _fold(self, node):
        """Fold an operation whose operands are all constants, one of them static."""
        node = self.generic_visit(node)
        leaves = [n for n in ast.iter_child_nodes(node) if isinstance(n, ast.expr)]
        if not any(getattr(n, "static", False) for n in leaves):
            return node
        for n in leaves:
            if isinstance(n, ast.Constant) and isinstance(n.value, _CONSTANT_TYPES):
                continue
            if (isinstance(n, ast.Name) and n.id not in self.local_names
                    and isinstance(self.closure.get(n.id, self.globals.get(n.id)), _CONSTANT_TYPES)):
                continue
            return node
        try:
            value = eval(compile(ast.Expression(node), "<unroll>", "eval"), self.globals, dict(self.closure))
        except Exception:  # e.g. a division by zero: leave it for run time
            return node
        return self._constant(value, node) if isinstance(value, _CONSTANT_TYPES) else node

    visit_BinOp = visit_UnaryOp = visit_Compare = visit_BoolOp = _fold


_MISSING = object()
