"""gemm_lessons.core.unroll: static_range loops written out, static() branches chosen, at decoration time."""
import linecache
import traceback

import numpy as np
import pytest
from numba import cuda, float32

from gemm_lessons.core.unroll import UnrollError, expanded_source, static, static_range, unrolled

from conftest import requires_offline_sass, requires_simulator

N = 3  # a module-level constant, read by static_range below


def test_a_loop_is_written_out_with_the_variable_replaced():
    @unrolled
    def f(x):
        s = 0
        for i in static_range(N):
            s += x[i] * i
        return s

    src = expanded_source(f)
    assert "static_range" not in src and "for " not in src
    assert [line.strip() for line in src.splitlines()[2:5]] == ["s += x[0] * 0", "s += x[1] * 1", "s += x[2] * 2"]
    assert f([1, 2, 3]) == 8


def test_nesting_bounds_from_outer_variables_and_folding():
    TM, TN = 2, 4

    @unrolled
    def f(acc):
        for p in static_range(TM):
            for j in static_range(p, TN, 2):  # an inner bound from the outer loop variable
                acc[4 * p + 1, j] = p * TN + j
        return acc

    src = expanded_source(f)
    assert "acc[1, 0] = 0" in src and "acc[5, 3] = 7" in src and "acc[5, 1] = 5" in src
    assert src.count("acc[") == 4  # p=0: j in 0, 2; p=1: j in 1, 3
    assert f(np.zeros((8, 4), int))[5, 3] == 7


def test_folding_keeps_runtime_expressions_and_named_constants():
    STEP = 64

    @unrolled
    def f(row0):
        out = []
        for i in static_range(2):
            out.append(row0 + i * STEP + STEP // 2)  # i * STEP folds; STEP // 2 has no loop variable
        return out

    src = expanded_source(f)
    assert "row0 + 0 + STEP // 2" in src and "row0 + 64 + STEP // 2" in src
    assert f(1) == [33, 97]


def test_static_if_elif_else_and_expressions():
    def make(guard, stages):
        @unrolled
        def f(x):
            if static(guard == "if"):
                y = x + 1
            elif static(guard == "select"):
                y = x + 2
            else:
                y = x + 3
            if static(stages == 2):
                y = y * 10
            return y if static(stages == 1) else -y

        return f

    assert [make(g, 1)(0) for g in ("if", "select", "and")] == [1, 2, 3]
    assert make("select", 2)(0) == -20
    src = expanded_source(make("and", 2))
    assert "static" not in src and "x + 1" not in src and "x + 2" not in src and "x + 3" in src
    assert "return -y" in src


def test_static_value_and_empty_blocks():
    def make(n):
        @unrolled
        def f():
            total = static(sum(range(n)))  # any value computed at expansion time
            for i in static_range(n):
                total += i
            if static(n > 100):
                total = 0
            return total

        return f

    assert make(4)() == 12
    assert make(0)() == 0  # an empty static_range is no code at all
    assert "total = 6" in expanded_source(make(4))


def test_closure_variables_stay_live_closure_variables():
    def factory(scale):
        def helper(v):
            return v * scale

        @unrolled
        def f(x):
            return helper(x) + scale  # runtime reads of closure variables still work

        return f

    f = factory(3)
    assert f(2) == 9
    assert "helper" in f.__code__.co_freevars and "scale" in f.__code__.co_freevars


def test_an_undecorated_function_means_the_same():
    def f(x):
        s = 0
        for i in static_range(1, 6, 2):
            if static(i > 1):
                s += x * i
        return s

    assert f(2) == unrolled(f)(2) == 16


def test_errors_name_the_line():
    def runtime_bound(n):
        for i in static_range(n):  # n is an argument: not known at expansion time
            pass

    with pytest.raises(UnrollError) as e:
        unrolled(runtime_bound)
    assert "static_range bound `n` uses n" in str(e.value)
    assert e.value.lineno == runtime_bound.__code__.co_firstlineno + 1
    assert e.value.filename == __file__ and "static_range(n)" in e.value.text

    def float_bound():
        for i in static_range(2.5):
            pass

    with pytest.raises(UnrollError, match="not a compile-time int"):
        unrolled(float_bound)

    def bad_static(x):
        if static(x > 0):
            pass

    with pytest.raises(UnrollError, match=r"static\(\) `x > 0` uses x"):
        unrolled(bad_static)

    def undefined():
        if static(NOT_DEFINED):  # noqa: F821
            pass

    with pytest.raises(UnrollError, match="NameError"):
        unrolled(undefined)

    def breaks():
        for k in range(4):
            for i in static_range(2):
                if k == i:
                    break

    with pytest.raises(UnrollError, match="break inside a static_range loop"):
        unrolled(breaks)

    def assigns():
        for i in static_range(2):
            i = 3  # noqa: F841

    with pytest.raises(UnrollError, match="assigned in the loop body"):
        unrolled(assigns)


def test_tracebacks_and_linecache_point_at_the_expanded_source():
    @unrolled
    def f(x):
        for i in static_range(3):
            x = x / (2 - i)  # i == 2 divides by zero
        return x

    with pytest.raises(ZeroDivisionError) as e:
        f(1.0)
    frame = e.traceback[-1]
    assert frame.path == f.__code__.co_filename and f.__code__.co_filename.startswith("<unrolled")
    assert linecache.getline(f.__code__.co_filename, frame.lineno + 1).strip() == "x = x / 0"
    assert "x = x / 0" in "".join(traceback.format_exception(e.value))


@requires_simulator
def test_a_register_tile_kernel_and_a_device_helper_run_on_the_simulator():
    TM = 4

    @cuda.jit(device=True)
    @unrolled
    def dot_row(acc, i, a, b):
        for j in static_range(TM):
            acc[i, j] += a * b[j]

    @cuda.jit
    @unrolled
    def outer(a, b, out):
        acc = cuda.local.array((TM, TM), float32)
        for i in static_range(TM):
            for j in static_range(TM):
                acc[i, j] = 0.0
        for i in static_range(TM):
            dot_row(acc, i, a[i], b)
        for i in static_range(TM):
            for j in static_range(TM):
                out[i, j] = acc[i, j]

    a, b = np.arange(4, dtype=np.float32), np.arange(4, dtype=np.float32) + 1
    out = np.zeros((4, 4), np.float32)
    outer[1, 1](a, b, out)
    np.testing.assert_array_equal(out, np.outer(a, b))
    assert "acc[3, 3] = out" not in expanded_source(outer) and "out[3, 3] = acc[3, 3]" in expanded_source(outer)


@requires_offline_sass
def test_compiles_for_a_gpu():
    from numba import types

    @unrolled
    def kernel(out):
        acc = cuda.local.array(4, float32)
        for i in static_range(4):
            acc[i] = i
        for i in static_range(4):
            out[cuda.threadIdx.x, i] = acc[i]

    ptx, _ = cuda.compile_ptx(kernel, types.void(types.float32[:, ::1]), cc=(9, 0))
    body = ptx.split("{", 1)[1]
    assert ".local" not in body and "__local_depot" not in body  # the local array lives in registers


def test_helpers_defined_inside_are_written_out_where_called():
    TM = 4

    @unrolled
    def f(x, out):
        acc = [0] * 8
        total = 100  # also a name inside the helper: renamed there

        def piece(p, scale):  # p is a constant at every call: static inside
            total = 0
            for d in static_range(4):
                acc[4 * p + d] = x[4 * p + d] * scale
                total += acc[4 * p + d]
            if static(p == 0):
                return total
            return -total

        for p in static_range(TM // 2):
            out[p] = piece(p, x[0] + 1)
        piece(1, 2)  # a statement: the returned value is dropped
        return acc, total

    x, out = list(range(8)), [0, 0]
    acc, total = f(x, out)
    assert acc == [0, 1, 2, 3, 8, 10, 12, 14] and total == 100 and out == [6, -22]
    src = expanded_source(f)
    assert "def piece" not in src and "acc[7] = x[7] * 2" in src and "total_piece = 0" in src
    assert "scale = x[0] + 1" not in src and "acc[1] = x[1] * (x[0] + 1)" in src  # pure arguments stand in
    assert "out[0] = total_piece" in src and "out[1] = -total_piece" in src


def test_helper_arguments_are_evaluated_once_and_early_returns_keep_the_rest():
    calls = []

    def counted(v):
        calls.append(v)
        return v

    @unrolled
    def f(a):
        def clamp(v, hi):
            if v > hi:
                return hi
            v2 = v * 2
            return v2 // 2

        return_value = clamp(counted(a), 10)
        return return_value

    assert f(3) == 3 and f(12) == 10 and calls == [3, 12]
    assert "v = counted(a)" in expanded_source(f)


def test_helper_errors():
    def in_expression(x):
        def h(v):
            return v

        return h(x) + 1

    with pytest.raises(UnrollError, match="call it as a statement"):
        unrolled(in_expression)

    def no_value(x):
        def h(v):
            if v:
                return 1

        y = h(x)
        return y

    with pytest.raises(UnrollError, match="does not return a value on every path"):
        unrolled(no_value)

    def runtime_static(x):
        def h(v):
            if static(v > 0):
                pass

        h(x)

    with pytest.raises(UnrollError, match=r"static\(\) `x > 0` uses x"):
        unrolled(runtime_static)


def test_a_function_defined_in_a_jupyter_cell():
    interactiveshell = pytest.importorskip("IPython.core.interactiveshell")
    shell = interactiveshell.InteractiveShell.instance()
    result = shell.run_cell(
        "from gemm_lessons.core.unroll import unrolled, static_range\n"
        "N = 3\n"
        "@unrolled\n"
        "def cell_f(x):\n"
        "    s = 0\n"
        "    for i in static_range(N):\n"
        "        s += x[i]\n"
        "    return s\n")
    assert result.success
    f = shell.user_ns["cell_f"]
    assert f([1, 2, 3]) == 6 and expanded_source(f).count("s += x[") == 3


def _local_array_stub():
    """A stand-in for ``cuda.local.array`` in plain Python (the simulator's exists only inside
    a running kernel): a module named numba..., as @unrolled recognizes it by name."""
    import types as pytypes

    fake = pytypes.ModuleType("numba.fake_cuda")
    fake.local = pytypes.SimpleNamespace(array=lambda shape, dtype: np.zeros(shape, np.dtype(str(dtype))))
    return fake


def test_register_arrays_become_one_variable_per_element():
    fake_cuda = _local_array_stub()

    @unrolled
    def f(x):
        acc = fake_cuda.local.array((2, 2), float32)
        for i in static_range(2):
            for j in static_range(2):
                acc[i, j] = np.float32(0.0)
        for i in static_range(2):
            for j in static_range(2):
                acc[i, j] += x[i] * x[j]      # x: an argument, of unknown type -> cast
        return acc[1, 0] + acc[1, 1]

    src = expanded_source(f)
    assert "acc[" not in src and "local.array" not in src
    assert "acc_1_0 = np.float32(0.0)" in src
    assert "float32(0)" not in src  # the kernel's own zeros make the declaration's zeros dead
    assert "acc_1_0 = float32(acc_1_0 + x[1] * x[0])" in src
    assert f(np.array([1.0, 2.0])) == 6.0 and isinstance(f(np.array([1.0, 2.0])), np.float32)


def test_a_store_of_the_arrays_own_type_needs_no_cast():
    fake_cuda = _local_array_stub()

    @unrolled
    def f(x):
        a = fake_cuda.local.array(2, float32)
        acc = fake_cuda.local.array(1, float32)
        a[0], a[1] = x[0], x[1]               # a tuple store: cast afterwards
        acc[0] = float32(0)
        acc[0] += a[0] * a[1]                 # float32 * float32: no cast
        return acc[0]

    src = expanded_source(f)
    assert "a_0, a_1 = (x[0], x[1])" in src and "a_0 = float32(a_0)" in src
    assert "acc_0 += a_0 * a_1" in src
    assert f(np.array([2.0, 3.0])) == 6.0


def test_arrays_with_a_runtime_index_or_passed_whole_stay_arrays():
    fake_cuda = _local_array_stub()

    def use(arr):
        return arr[0]

    @unrolled
    def f(k):
        r = fake_cuda.local.array(4, float32)   # runtime index: stays an array
        w = fake_cuda.local.array(4, float32)   # passed whole to a function: stays an array
        z = fake_cuda.local.array(2, float32)   # read before written: keeps its zeros
        for i in static_range(4):
            r[i] = i
            w[i] = 2 * i
        return r[k] + use(w) + z[1]

    src = expanded_source(f)
    assert "r[k]" in src and "r[3] = 3" in src and "w[3] = 6" in src
    assert "z_1 = float32(0)" in src and "z_0" in src
    assert f(2) == 2.0


def test_chained_assignments_and_unknown_uses():
    fake_cuda = _local_array_stub()

    @unrolled
    def f(x):
        r = fake_cuda.local.array(3, float32)
        r[0] = r[1] = r[2] = np.float32(0.0)   # a chained store: one assignment per element
        r[1] = r[2] = x * 2                    # the value evaluated once
        return r[0] + r[1] + r[2]

    src = expanded_source(f)
    assert "r[" not in src and "r_0 = np.float32(0.0)" in src and "_value_1 = x * 2" in src
    assert f(1.5) == 6.0

    @unrolled
    def g(x):
        r = fake_cuda.local.array(2, float32)
        r[0] = x
        r[1] = x
        for v in r:        # a use the rewrite does not handle (iteration): r stays an array
            x += v
        return x

    assert "r[0] = x" in expanded_source(g) and g(1.0) == 3.0
