"""gl.sgemm's and library.transpose's contract (issue 34): no silent wrong answer, and help()
says what is promised.  Aliasing is refused on every call path, empty products follow BLAS,
transposed operands get advice that works, and each public docstring names its contract's
sections.  Small shapes (the simulator is slow); nothing here needs the simulator, so all of it
runs on a GPU too, except the one test that needs a foreign (__cuda_array_interface__) array."""
import itertools
import pydoc

import numpy as np
import pytest
from numba import cuda

import gemm_lessons as gl
from gemm_lessons import library
from gemm_lessons.kernels import ladder
from gemm_lessons.library import device_arrays, device_transpose, memory
from gemm_lessons.library.dispatch import Plan

from conftest import requires_gpu

rng = np.random.default_rng(34)
M, N, K = 8, 12, 5
OVERLAP = "overlaps .*C = None allocates one"


def rand(*shape):
    return rng.uniform(-1, 1, shape).astype(np.float32)


def ref(A, B, C=None, alpha=1.0, beta=0.0):
    out = alpha * (A.astype(np.float64) @ B)
    return out if C is None else out + beta * C.astype(np.float64)


def no_launch(monkeypatch):
    """Make every library launch fail: what runs afterwards must launch nothing."""
    def boom(*a, **k):
        raise AssertionError("launched a kernel")

    monkeypatch.setattr(device_arrays, "_launcher", boom)
    monkeypatch.setattr(device_transpose, "_transpose_launcher", boom)
    monkeypatch.setattr(device_arrays, "_RUNS", {})


# ---- aliasing: C sharing memory with A or B ------------------------------------------------
@pytest.mark.parametrize("call", [gl.sgemm, library.sgemm], ids=["gl.sgemm", "library.sgemm"])
def test_output_that_is_an_input_is_refused(call):
    S = cuda.to_device(rand(M, M))
    B = cuda.to_device(rand(M, M))
    with pytest.raises(ValueError, match=f"C {OVERLAP}") as e:
        call(S, B, S)
    assert "C overlaps A" in str(e.value) and "already overwritten" in str(e.value)
    with pytest.raises(ValueError, match="C overlaps B"):
        call(B, S, S, 1.0, 1.0)
    with pytest.raises(ValueError, match="C overlaps A"):
        call(S, S, S)


def test_overlapping_views_are_refused_and_disjoint_column_blocks_are_not():
    """Views of one matrix: C over columns A also covers is refused; C over other columns (the
    same row stride, interleaved byte ranges, no element in common) runs and is right."""
    big_h = rand(M, 3 * K + 3)
    big = cuda.to_device(big_h)
    B_h = rand(K, K)
    B = cuda.to_device(B_h)
    with pytest.raises(ValueError, match="C overlaps A"):
        gl.sgemm(big[:, :K], B, big[:, K - 1:2 * K - 1])  # one column in common
    with pytest.raises(ValueError, match="C overlaps B"):
        gl.sgemm(cuda.to_device(rand(K, K)), big[:K, 2:K + 2], big[:K, K + 1:2 * K + 1])
    C = big[:, K:2 * K]  # right next to A's columns: allowed
    assert gl.sgemm(big[:, :K], B, C) is C
    out = big.copy_to_host()
    np.testing.assert_allclose(out[:, K:2 * K], ref(big_h[:, :K], B_h), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(out[:, :K], big_h[:, :K])  # A untouched
    np.testing.assert_array_equal(out[:, 2 * K:], big_h[:, 2 * K:])


def test_rows_of_one_matrix_as_separate_operands():
    """A and C as row blocks of one array: refused where they share a row, right where not."""
    big_h = rand(2 * M, M)
    big = cuda.to_device(big_h)
    B_h = rand(M, M)
    with pytest.raises(ValueError, match="C overlaps A"):
        gl.sgemm(big[:M], cuda.to_device(B_h), big[M - 1:2 * M - 1])
    gl.sgemm(big[:M], cuda.to_device(B_h), big[M:])
    np.testing.assert_allclose(big.copy_to_host()[M:], ref(big_h[:M], B_h), rtol=1e-5, atol=1e-5)


def test_inputs_may_overlap_each_other():
    """A and B are only read: the same array for both is fine (A @ A)."""
    S_h = rand(M, M)
    S = cuda.to_device(S_h)
    np.testing.assert_allclose(gl.sgemm(S, S).copy_to_host(), ref(S_h, S_h), rtol=1e-5, atol=1e-5)


def test_overlap_is_checked_on_the_fast_path_itself(monkeypatch):
    """Valid arrays never reach the slow checks: the fast path refuses aliasing on its own, for
    the wide layout (aligned, multiples of 4) and the strided one."""
    def slow(*a, **k):
        raise AssertionError("took the slow path")

    monkeypatch.setattr(device_arrays, "_checked_call", slow)
    S = cuda.to_device(rand(8, 8))
    with pytest.raises(ValueError, match="C overlaps A"):
        library.sgemm(S, cuda.to_device(rand(8, 8)), S)  # wide
    big = cuda.to_device(rand(8, 20))
    with pytest.raises(ValueError, match="C overlaps B"):
        library.sgemm(cuda.to_device(rand(8, 8)), big[:, 1:9], big[:, 5:13])  # strided rows


def test_overlap_is_refused_on_every_other_path():
    """plan_of, run_plan (the benchmark's), a ladder rung through gl.sgemm, NumPy arrays."""
    S = cuda.to_device(rand(8, 8))
    B = cuda.to_device(rand(8, 8))
    with pytest.raises(ValueError, match="C overlaps A"):
        library.plan_of(S, B, S)
    with pytest.raises(ValueError, match="C overlaps B"):
        library.run_plan(Plan("any_shape", "64x64"), B, S, S)
    with pytest.raises(ValueError, match="C overlaps A"):
        gl.sgemm(S, B, S, rung=ladder.SGEMM["naive"])
    S_h, B_h = rand(8, 8), rand(8, 8)
    with pytest.raises(ValueError, match=f"C {OVERLAP}"):
        gl.sgemm(S_h, B_h, S_h)
    big = rand(8, 16)
    with pytest.raises(ValueError, match="C overlaps B"):
        gl.sgemm(S_h, big[:, :8], big[:, 4:12])
    C = big[:, 8:]  # NumPy views without an element in common: fine
    gl.sgemm(S_h, big[:, :8], C)
    np.testing.assert_allclose(C, ref(S_h, big[:, :8]), rtol=1e-5, atol=1e-5)


@requires_gpu
def test_overlap_is_refused_for_foreign_device_arrays():
    """Arrays known only by __cuda_array_interface__ (CuPy, PyTorch) are wrapped by the slow path
    and checked like numba's."""
    class Foreign:
        def __init__(self, x):
            self.__cuda_array_interface__ = x.__cuda_array_interface__
            self.keep = x

    S = cuda.to_device(rand(8, 8))
    with pytest.raises(ValueError, match="C overlaps A"):
        gl.sgemm(Foreign(S), Foreign(cuda.to_device(rand(8, 8))), Foreign(S))
    with pytest.raises(ValueError, match="dst overlaps src"):
        library.transpose(Foreign(S), Foreign(S))


def test_transpose_in_place_is_refused():
    x = rand(16, 16)
    s = cuda.to_device(x)
    with pytest.raises(ValueError, match="dst overlaps src.*dst = None allocates one"):
        library.transpose(s, s)
    np.testing.assert_array_equal(s.copy_to_host(), x)  # refused before anything ran


def test_transpose_into_an_overlapping_piece_of_one_buffer_is_refused():
    """src and dst as C-contiguous pieces of one flat buffer: overlapping, refused; adjacent, right."""
    flat_h = rand(3 * 32)
    flat = cuda.to_device(flat_h)
    src = flat[:32].reshape(4, 8)
    with pytest.raises(ValueError, match="dst overlaps src"):
        library.transpose(src, flat[28:60].reshape(8, 4))
    library.transpose(src, flat[32:64].reshape(8, 4))
    np.testing.assert_array_equal(flat.copy_to_host()[32:64].reshape(8, 4), flat_h[:32].reshape(4, 8).T)


def _bytes(p, s, w, r):
    return set(itertools.chain.from_iterable(range(p + i * s, p + i * s + w) for i in range(r)))


def test_row_overlap_arithmetic_is_exact():
    """_rows_meet (integer arithmetic on pointers and strides) against the sets of bytes, for
    equal and different row strides, single rows, and rows that overlap themselves."""
    cases = 0
    for sx, sy in ((16, 16), (12, 20), (8, 28), (40, 16), (4, 4)):
        for wx, wy in ((8, 8), (4, 12), (16, 4)):
            for rx, ry in ((1, 1), (1, 3), (3, 1), (3, 4)):
                for py in range(0, 80, 4):
                    want = bool(_bytes(32, sx, wx, rx) & _bytes(py, sy, wy, ry))
                    assert memory._rows_meet(32, sx, wx, rx, py, sy, wy, ry) == want, \
                        (sx, sy, wx, wy, rx, ry, py)
                    cases += 1
    assert cases > 1000


# ---- empty products: BLAS -----------------------------------------------------------------
@pytest.mark.parametrize("shape", [(0, N, K), (M, 0, K), (0, 0, 0)])
def test_empty_output_returns_c_and_launches_nothing(monkeypatch, shape):
    m, n, k = shape
    no_launch(monkeypatch)
    A, B = np.zeros((m, k), np.float32), np.zeros((k, n), np.float32)
    out = gl.sgemm(A, B)
    assert isinstance(out, np.ndarray) and out.shape == (m, n) and out.dtype == np.float32
    C = np.zeros((m, n), np.float32)
    assert gl.sgemm(A, B, C, 2.0, 3.0) is C
    A_d, B_d, C_d = cuda.to_device(A), cuda.to_device(B), cuda.device_array((m, n), np.float32)
    for call in (gl.sgemm, library.sgemm):
        assert call(A_d, B_d, C_d, 2.0, 3.0) is C_d
        assert tuple(call(A_d, B_d).shape) == (m, n)
    assert gl.sgemm(A_d, B_d, C_d, rung=ladder.SGEMM["naive"]) is C_d


@pytest.mark.parametrize("beta", [0.0, 1.0, -1.5])
def test_k_zero_gives_beta_times_c(beta):
    """K = 0: C = beta * C, alpha ignored (NaN here), C not read when beta is 0 (NaN there)."""
    A, B = np.zeros((M, 0), np.float32), np.zeros((0, N), np.float32)
    C0 = rand(M, N)
    C0[0, 0] = np.nan if beta == 0 else C0[0, 0]
    want = np.zeros((M, N), np.float32) if beta == 0 else np.float32(beta) * C0
    C = C0.copy()
    assert gl.sgemm(A, B, C, alpha=np.nan, beta=beta) is C
    np.testing.assert_array_equal(C, want)
    for call in (gl.sgemm, library.sgemm):
        C_d = cuda.to_device(C0)
        assert call(cuda.to_device(A), cuda.to_device(B), C_d, np.nan, beta) is C_d
        np.testing.assert_array_equal(C_d.copy_to_host(), want)


def test_k_zero_on_a_strided_view_writes_only_the_view():
    big_h = rand(M, N + 6)
    big = cuda.to_device(big_h)
    library.sgemm(cuda.device_array((M, 0), np.float32), cuda.device_array((0, N), np.float32),
                  big[:, 3:N + 3], 1.0, 2.0)
    out = big.copy_to_host()
    np.testing.assert_array_equal(out[:, 3:N + 3], np.float32(2.0) * big_h[:, 3:N + 3])
    np.testing.assert_array_equal(np.delete(out, np.s_[3:N + 3], axis=1), np.delete(big_h, np.s_[3:N + 3], axis=1))


def test_k_zero_without_c_is_a_zero_matrix():
    A, B = np.zeros((M, 0), np.float32), np.zeros((0, N), np.float32)
    np.testing.assert_array_equal(gl.sgemm(A, B), np.zeros((M, N), np.float32))
    C_d = library.sgemm(cuda.to_device(A), cuda.to_device(B))
    np.testing.assert_array_equal(C_d.copy_to_host(), np.zeros((M, N), np.float32))
    np.testing.assert_array_equal(gl.sgemm(A, B, rung=ladder.SGEMM["warptile"]), np.zeros((M, N), np.float32))
    assert library.plan_of(cuda.to_device(A), cuda.to_device(B)) is None
    with pytest.raises(ValueError, match="needs a C"):
        gl.sgemm(A, B, beta=1.0)


def test_k_zero_with_beta_one_launches_nothing(monkeypatch):
    no_launch(monkeypatch)
    C0 = rand(M, N)
    C_d = cuda.to_device(C0)
    library.sgemm(cuda.device_array((M, 0), np.float32), cuda.device_array((0, N), np.float32), C_d, 5.0, 1.0)
    np.testing.assert_array_equal(C_d.copy_to_host(), C0)


@pytest.mark.parametrize("shape", [(0, 4), (4, 0), (0, 0)])
def test_transpose_of_an_empty_matrix_is_a_no_op(monkeypatch, shape):
    no_launch(monkeypatch)
    src = cuda.device_array(shape, np.float32)
    assert tuple(library.transpose(src).shape) == shape[::-1]
    dst = cuda.device_array(shape[::-1], np.float32)
    assert library.transpose(src, dst) is dst
    with pytest.raises(ValueError, match="dst must be"):
        library.transpose(src, cuda.device_array((1, 1), np.float32))


# ---- transposed operands: refused with advice that works ------------------------------------
@pytest.mark.parametrize("name", ["A", "B", "C"])
def test_transposed_device_operand_gets_advice_that_works(name):
    """A column-major (F-order) device array, as cuda.to_device(np.asfortranarray(x)) makes on a
    GPU and on the simulator: refused; the call the message names gives a C-contiguous copy
    with which the product is right."""
    ops = {"A": rand(M, K), "B": rand(K, N), "C": rand(M, N)}
    dev = {n: cuda.to_device(x) for n, x in ops.items()}
    dev[name] = cuda.to_device(np.asfortranarray(ops[name]))
    with pytest.raises(ValueError, match=fr"{name} is a transposed \(column-major, F-order\) array") as e:
        gl.sgemm(dev["A"], dev["B"], dev["C"], 1.0, 0.5)
    assert f"gemm_lessons.library.transpose({name}.T)" in str(e.value)
    if name == "C":
        assert "C = None allocates one" in str(e.value)
    fixed = library.transpose(dev[name].T)  # what the message says to do
    assert fixed.is_c_contiguous()
    dev[name] = fixed
    gl.sgemm(dev["A"], dev["B"], dev["C"], 1.0, 0.5)
    np.testing.assert_allclose(dev["C"].copy_to_host(), ref(ops["A"], ops["B"], ops["C"], 1.0, 0.5),
                               rtol=1e-5, atol=1e-5)


def test_dot_t_of_a_device_array_is_refused_with_advice_or_right():
    """numba's DeviceNDArray.T: a C-contiguous copy on a GPU (taken), a view on the simulator
    (refused, with advice that works)."""
    A_h, X_h = rand(M, K), rand(N, K)
    A, B = cuda.to_device(A_h), cuda.to_device(X_h).T
    try:
        out = gl.sgemm(A, B).copy_to_host()
    except ValueError as e:
        assert "library.transpose(B.T)" in str(e)
        out = gl.sgemm(A, library.transpose(B.T)).copy_to_host()
    np.testing.assert_allclose(out, ref(A_h, X_h.T), rtol=1e-5, atol=1e-5)


def test_numpy_transposed_views_are_taken():
    A_h, Bt_h, C_h = rand(K, M), rand(N, K), np.asfortranarray(rand(M, N))
    C0 = C_h.copy()
    assert gl.sgemm(A_h.T, Bt_h.T, C_h, 2.0, -1.0) is C_h
    np.testing.assert_allclose(C_h, ref(A_h.T, Bt_h.T, C0, 2.0, -1.0), rtol=1e-5, atol=1e-5)


def test_other_strided_operands_and_c_rows_overlapping_themselves():
    dev = cuda.device_array
    A, B = dev((M, K), np.float32), dev((K, N), np.float32)
    with pytest.raises(ValueError, match="rows are not contiguous.*np.ascontiguousarray.*cuda.to_device"):
        gl.sgemm(dev((M, 2 * K), np.float32)[:, ::2], B)
    with pytest.raises(ValueError, match="rows are not contiguous"):
        gl.sgemm(A, dev((K, N), np.float32)[::-1])  # reversed rows
    with pytest.raises(ValueError, match="rows, 48 bytes each, overlap each other.*C = None allocates one"):
        gl.sgemm(A, B, _rows_overlapping(M, N))


def _rows_overlapping(m, n):
    """An m x n device view whose rows overlap each other (a row stride of 8 bytes)."""
    if gl.SIMULATOR:
        flat = np.zeros(m * n, np.float32)
        return device_arrays._DeviceArray(np.lib.stride_tricks.as_strided(flat, (m, n), (8, 4)))
    from numba.cuda.cudadrv.devicearray import DeviceNDArray

    base = cuda.to_device(np.zeros(m * n, np.float32))
    return DeviceNDArray((m, n), (8, 4), np.float32, gpu_data=base.gpu_data)


def test_transposed_transpose_operands_get_advice_that_works():
    x = rand(4, 6)
    src_f = cuda.to_device(np.asfortranarray(x))  # F-order: src.T is x.T, C-contiguous
    with pytest.raises(ValueError, match=r"src is a transposed.*Use src\.T, or dst\.copy_to_device\(src\.T\)"):
        library.transpose(src_f)
    dst = cuda.device_array((6, 4), np.float32)
    dst.copy_to_device(src_f.T)  # the advice
    np.testing.assert_array_equal(dst.copy_to_host(), x.T)
    with pytest.raises(ValueError, match=r"dst is a transposed.*dst = None allocates one"):
        library.transpose(cuda.to_device(x), cuda.to_device(np.asfortranarray(x.T)))


# ---- help() states the contract --------------------------------------------------------------
SECTIONS = ("Shapes", "Dtypes", "Layouts", "Alignment", "Aliasing", "Asynchrony", "Errors")


@pytest.mark.parametrize("fn", [gl.sgemm, library.sgemm, library.transpose],
                         ids=["gl.sgemm", "library.sgemm", "library.transpose"])
def test_each_public_docstring_states_the_contract(fn):
    doc = fn.__doc__
    lines = [line.strip() for line in doc.splitlines()]
    for section in SECTIONS:
        assert section in lines, f"{fn.__module__}.{fn.__name__}: no {section!r} section"
    for words in ("float32", "16-byte", "default stream", "returns once", "overlap", "TypeError",
                  "ValueError", "C-contiguous", "F-order"):
        assert words in doc, f"{fn.__module__}.{fn.__name__} does not mention {words!r}"
    assert "Aliasing" in pydoc.render_doc(fn, renderer=pydoc.plaintext)  # what help() prints
    if fn is not library.transpose:
        for words in ("BLAS", "K = 0", "beta * C", "library.transpose(B.T)"):
            assert words in doc
    else:
        assert "no-op" in doc
    if fn is gl.sgemm:
        assert "copied back" in doc and "NumPy" in doc
