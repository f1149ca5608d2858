"""``@unrolled``'s second pass: a local array indexed only at constants becomes one variable per
element (what the compiler does to keep it in registers, done before numba types the code; see
core.unroll's docstring)."""
import ast
import copy
import itertools

from gemm_lessons.core.unroll_ast import UnrollError, _names


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
