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

__all__ = ["unrolled", "static_range", "static", "expanded_source", "UnrollError"]


def static_range(*args):
    """``range`` whose loop ``@unrolled`` writes out (plain ``range`` when not unrolled)."""
    return range(*args)


def static(value):
    """Marks a condition or value ``@unrolled`` evaluates at expansion time (identity otherwise)."""
    return value


class UnrollError(SyntaxError):
    """A static_range or static() that cannot be expanded; names the file and line."""

    def __init__(self, message, filename, lineno, line):
        super().__init__(message, (filename, lineno, None, line))

    def __str__(self):
        return f"{self.msg}\n  File \"{self.filename}\", line {self.lineno}\n    {(self.text or '').strip()}"


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


class _RegisterArrays:
    """A local array whose every use is an element at constant indices (after expansion) is
    written as one variable per element: ``acc = cuda.local.array((2, 2), float32)`` becomes
    ``acc_0_0 = float32(0)`` ... and ``acc[1, 0] += x`` becomes ``acc_1_0 += x``.  This is what
    the compiler would do to keep the array in registers (scalar replacement of aggregates), done
    before numba sees the code: numba then types and lowers a few variables instead of thousands
    of array accesses, and lesson 08's kernel compiles in seconds, not half a minute, to the same
    machine code.  A store is cast to the array's type (as storing into the array would), unless
    the value already has it (elements of such arrays, their sums and products, ``dtype(...)``)."""

    def __init__(self, expander):
        self.expander = expander
        self.temps = 0  # _value_1, _value_2, ...: the values of chained stores

    def scalarize(self, fn_node):
        declared = {}
        for n in ast.walk(fn_node):
            if (isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name)
                    and self._is_local_array(n.value)):
                name = n.targets[0].id
                declared[name] = None if name in declared else n  # declared twice: leave it alone
        taken = _names(fn_node)
        self.arrays = {}  # name -> (shape, dtype expression, dtype name, element names)
        for name, decl in declared.items():
            spec = decl and self._spec(decl)
            if spec and self._only_constant_elements(fn_node, name, decl, spec[0]):
                shape, dtype_expr, dtype_name = spec
                elements = {}
                for idx in itertools.product(*(range(s) for s in shape)):
                    element = "_".join([name, *map(str, idx)])
                    while element in taken:
                        element += "_"
                    taken.add(element)
                    elements[idx] = element
                self.arrays[name] = (decl, dtype_expr, dtype_name, elements, shape)
        self.element_types = {e: dtype_name for _, _, dtype_name, elements, _ in self.arrays.values()
                              for e in elements.values()}
        if self.arrays:
            before = copy.deepcopy(fn_node)
            self._rewrite_blocks(fn_node)
            self._drop_dead_zeros(fn_node)
            if any(isinstance(n, ast.Name) and n.id in self.arrays for n in ast.walk(fn_node)):
                # a use this rewrite does not know (it would read an array that no longer
                # exists): keep every array an array, as written
                fn_node.__dict__.update(before.__dict__)

    def _is_local_array(self, call):
        """``cuda.local.array(...)`` (matched by name: the simulator's cuda module has no
        ``local`` outside a running kernel), with ``cuda`` numba's cuda module."""
        f = call.func if isinstance(call, ast.Call) else None
        if not (isinstance(f, ast.Attribute) and f.attr == "array" and isinstance(f.value, ast.Attribute)
                and f.value.attr == "local" and isinstance(f.value.value, ast.Name)):
            return False
        root = f.value.value.id
        module = self.expander.closure.get(root, self.expander.globals.get(root))
        return root not in self.expander.local_names and getattr(module, "__name__", "").startswith("numba")

    def _spec(self, decl):
        call = decl.value
        args = list(call.args) + [None] * (2 - len(call.args))
        keywords = {k.arg: k.value for k in call.keywords}
        shape_expr, dtype_expr = args[0] or keywords.get("shape"), args[1] or keywords.get("dtype")
        if shape_expr is None or dtype_expr is None or len(call.args) + len(keywords) != 2:
            return None
        try:
            shape = self.expander.evaluate(shape_expr, "shape")
            dtype = self.expander.evaluate(dtype_expr, "dtype")
        except UnrollError:
            return None
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        if not all(isinstance(s, int) and s > 0 for s in shape) or len(shape) == 0:
            return None
        if any(isinstance(n, ast.Name) and n.id in self.expander.local_names for n in ast.walk(dtype_expr)):
            return None
        return shape, dtype_expr, str(getattr(dtype, "name", dtype))

    @staticmethod
    def _index(subscript, shape):
        s = subscript.slice
        parts = s.elts if isinstance(s, ast.Tuple) else [s]
        if len(parts) != len(shape):
            return None
        idx = []
        for p, size in zip(parts, shape):
            if not (isinstance(p, ast.Constant) and type(p.value) is int and 0 <= p.value < size):
                return None
            idx.append(p.value)
        return tuple(idx)

    def _only_constant_elements(self, fn_node, name, decl, shape):
        subscripts = {id(n.value) for n in ast.walk(fn_node) if isinstance(n, ast.Subscript)
                      and isinstance(n.value, ast.Name) and n.value.id == name and self._index(n, shape)}
        for n in ast.walk(fn_node):
            if isinstance(n, ast.Name) and n.id == name and n is not decl.targets[0] and id(n) not in subscripts:
                return False
        return True

    # ---- rewriting
    def _rewrite_blocks(self, node):
        for field in ("body", "orelse", "finalbody"):
            block = getattr(node, field, None)
            if isinstance(block, list):
                new = []
                for stmt in block:
                    new.extend(self._statement(stmt))
                setattr(node, field, new)
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.stmt, ast.ExceptHandler)):
                self._rewrite_blocks(child)

    def _drop_dead_zeros(self, node):
        """Drop ``x = dtype(0)`` where the same block assigns x again before anything reads it
        (the usual case: the kernel initializes its accumulators itself)."""
        for field in ("body", "orelse", "finalbody"):
            block = getattr(node, field, None)
            if isinstance(block, list):
                dead = set()
                for i, stmt in enumerate(block):
                    name = getattr(stmt, "zero_of", None)
                    if name is None:
                        continue
                    for later in block[i + 1:]:
                        if (isinstance(later, ast.Assign) and len(later.targets) == 1
                                and isinstance(later.targets[0], ast.Name) and later.targets[0].id == name
                                and name not in _names(later.value)):
                            dead.add(id(stmt))
                            break
                        if name in _names(later):
                            break
                block[:] = [s for s in block if id(s) not in dead]
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.stmt, ast.ExceptHandler)):
                self._drop_dead_zeros(child)

    def _element(self, node):
        """(array name, element name) if node is an element of a scalarized array."""
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id in self.arrays:
            elements, shape = self.arrays[node.value.id][3:]
            return node.value.id, elements[self._index(node, shape)]
        return None

    def _statement(self, stmt):
        for decl, dtype_expr, _, elements, _ in self.arrays.values():
            if stmt is decl:
                zeros = [ast.copy_location(ast.Assign([ast.Name(e, ast.Store())], self._cast(dtype_expr, ast.Constant(0))),
                                           stmt) for e in elements.values()]
                for z in zeros:
                    z.zero_of = z.targets[0].id
                return zeros
        casts = []
        if (isinstance(stmt, ast.Assign) and len(stmt.targets) > 1
                and any(self._element(t) or isinstance(t, ast.Tuple) for t in stmt.targets)):
            # a = b = value: one assignment per target, the value evaluated once
            value, out = stmt.value, []
            if not (isinstance(value, ast.Constant) or self._dtype_of(value)) or not _without_effects_or_cast(value):
                self.temps += 1
                temp = f"_value_{self.temps}"
                out.append(ast.copy_location(ast.Assign([ast.Name(temp, ast.Store())], self._loads(value)), stmt))
                value = ast.Name(temp, ast.Load())
            for t in stmt.targets:
                out.extend(self._statement(ast.copy_location(ast.Assign([t], copy.deepcopy(value)), stmt)))
            return out
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            target, value = stmt.targets[0], stmt.value
            if self._element(target):
                array, element = self._element(target)
                value = self._loads(value)
                if self._dtype_of(value) != self.arrays[array][2]:
                    value = self._cast(self.arrays[array][1], value)
                return [ast.copy_location(ast.Assign([ast.Name(element, ast.Store())], value), stmt)]
            if isinstance(target, ast.Tuple):
                elts, result_type = [], self._result_type(value)
                for t in target.elts:
                    hit = self._element(t)
                    if hit:
                        elts.append(ast.Name(hit[1], ast.Store()))
                        if result_type != self.arrays[hit[0]][2]:
                            casts.append(hit)
                    else:
                        elts.append(t)
                target.elts = elts
        elif isinstance(stmt, ast.AugAssign) and self._element(stmt.target):
            array, element = self._element(stmt.target)
            value = self._loads(stmt.value)
            if (self._dtype_of(value) == self.arrays[array][2]
                    and isinstance(stmt.op, (ast.Add, ast.Sub, ast.Mult))):
                return [ast.copy_location(ast.AugAssign(ast.Name(element, ast.Store()), stmt.op, value), stmt)]
            combined = ast.BinOp(ast.Name(element, ast.Load()), stmt.op, value)
            return [ast.copy_location(ast.Assign([ast.Name(element, ast.Store())],
                                                 self._cast(self.arrays[array][1], combined)), stmt)]
        stmt = self._loads(stmt)
        out = [stmt]
        for array, element in casts:
            out.append(ast.copy_location(ast.Assign([ast.Name(element, ast.Store())], self._cast(
                self.arrays[array][1], ast.Name(element, ast.Load()))), stmt))
        return out

    def _loads(self, node):
        """Elements read inside ``node`` (not in nested statements) replaced by their variables."""
        owner = self

        class Loads(ast.NodeTransformer):
            def visit_Subscript(self, n):
                hit = owner._element(n)
                if hit and isinstance(n.ctx, ast.Load):
                    return ast.copy_location(ast.Name(hit[1], ast.Load()), n)
                return self.generic_visit(n)

            def generic_visit(self, n):
                if n is not node and isinstance(n, (ast.stmt, ast.ExceptHandler)):
                    return n  # nested statements are rewritten as statements
                return super().generic_visit(n)

        return Loads().visit(node)

    def _cast(self, dtype_expr, value):
        return ast.Call(copy.deepcopy(dtype_expr), [value], [])

    def _dtype_of(self, expr):
        """The type name of ``expr`` when it is evident from the source, else None."""
        if isinstance(expr, ast.Name):
            return self.element_types.get(expr.id)
        if isinstance(expr, ast.BinOp) and isinstance(expr.op, (ast.Add, ast.Sub, ast.Mult)):
            left, right = self._dtype_of(expr.left), self._dtype_of(expr.right)
            return left if left == right and left in _FLOATS else None
        if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.USub):
            return self._dtype_of(expr.operand)
        if isinstance(expr, ast.Call) and len(expr.args) == 1 and not expr.keywords:
            f = self._callee(expr)
            name = getattr(f, "name", None) if not isinstance(f, type) else getattr(f, "__name__", None)
            return name if name in _FLOATS + ("int32", "int64", "bool") else None
        return None

    def _callee(self, call):
        """The function a call names (a global, closure or module attribute), or None."""
        if not all(isinstance(n, (ast.Name, ast.Attribute, ast.Load)) for n in ast.walk(call.func)):
            return None
        try:
            return self.expander.evaluate(call.func, "function")
        except UnrollError:
            return None

    def _result_type(self, value):
        """The type of every value a call returns, when the function declares it with a
        ``result_type`` attribute (float4.load4: "float32"); else None."""
        if isinstance(value, ast.Call):
            return getattr(self._callee(value), "result_type", None)
        return None


_FLOATS = ("float32", "float64")


def _without_effects_or_cast(expr):
    """A constant, a name, or a cast of one (``np.float32(0.0)``): safe to evaluate once per target."""
    if isinstance(expr, (ast.Constant, ast.Name)):
        return True
    return (isinstance(expr, ast.Call) and len(expr.args) == 1 and not expr.keywords
            and isinstance(expr.args[0], (ast.Constant, ast.Name)))


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
