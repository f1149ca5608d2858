"""Bad input gets a clear error that says what to do, from every rung."""
import numpy as np
import pytest
from numba import cuda

from gemm_lessons.core import array_checks
from gemm_lessons.measure import cublas
from gemm_lessons.kernels import ladder

ALL = {**ladder.SGEMM, **ladder.VARIANTS}
f32 = np.float32


def dev(shape, dtype=f32, order="C"):
    return cuda.to_device(np.zeros(shape, dtype=dtype, order=order))


@pytest.fixture(params=list(ALL) + ["cublas"])
def rung(request):
    return cublas.sgemm if request.param == "cublas" else ALL[request.param]


def test_host_arrays_are_refused_with_a_hint(rung):
    with pytest.raises(TypeError, match="cuda.to_device"):
        rung(np.zeros((4, 4), f32), dev((4, 4)), dev((4, 4)))


@pytest.mark.parametrize("dtype", [np.float64, np.int32, np.float16])
def test_wrong_dtype(rung, dtype):
    with pytest.raises(TypeError, match="float32"):
        rung(dev((4, 4), dtype), dev((4, 4)), dev((4, 4)))


@pytest.mark.parametrize("shape", [(16,), (2, 4, 4)])
def test_wrong_rank(rung, shape):
    with pytest.raises(ValueError, match="2-D"):
        rung(dev(shape), dev((4, 4)), dev((4, 4)))


def test_mismatched_inner_dimensions(rung):
    with pytest.raises(ValueError, match="inner dimensions"):
        rung(dev((4, 8)), dev((12, 4)), dev((4, 4)))


def test_wrong_output_shape(rung):
    with pytest.raises(ValueError, match="C must be 4x8"):
        rung(dev((4, 4)), dev((4, 8)), dev((8, 4)))


def test_zero_sized(rung):
    with pytest.raises(ValueError, match="at least 1"):
        rung(dev((0, 4)), dev((4, 4)), dev((0, 4)))


def test_fortran_order_is_refused(rung):
    with pytest.raises(ValueError, match="C-contiguous"):
        rung(dev((4, 8), order="F"), dev((8, 4)), dev((4, 4)))


def _transposed(shape):
    """``.T`` of a random device array: a strided view on the simulator, but a transposed
    C-contiguous copy on a real GPU (numba-cuda's DeviceNDArray.T)."""
    host = np.random.default_rng(0).standard_normal(shape).astype(f32)
    t = cuda.to_device(host).T
    return t, host.T, array_checks._is_c_contiguous(t)


def test_transposed_device_array_is_refused_or_right(rung):
    A, A_host, contiguous = _transposed((8, 4))
    B_host = np.random.default_rng(1).standard_normal((8, 4)).astype(f32)
    C = dev((4, 4))
    if not contiguous:  # a view: refused with the hint to copy
        with pytest.raises(ValueError, match="C-contiguous"):
            rung(A, cuda.to_device(B_host), C)
    else:  # a copy: nothing to refuse, and the product is right
        rung(A, cuda.to_device(B_host), C)
        np.testing.assert_allclose(C.copy_to_host(), A_host @ B_host, rtol=1e-5, atol=1e-5)


def test_vec_names_its_constraint():
    with pytest.raises(ValueError, match="multiple of 4"):
        ladder.SGEMM["vec"](dev((8, 6)), dev((6, 8)), dev((8, 8)))
    with pytest.raises(ValueError, match="multiple of 4"):
        ladder.SGEMM["vec"](dev((8, 8)), dev((8, 5)), dev((8, 5)))


def test_strided_view_is_refused(rung):
    with pytest.raises(ValueError, match="C-contiguous"):
        rung(dev((4, 16))[:, ::2], dev((8, 4)), dev((4, 4)))


# ---- transpose rungs ---------------------------------------------------------------------
@pytest.fixture(params=list(ladder.TRANSPOSE) + ["cublas"])
def trung(request):
    return cublas.transpose if request.param == "cublas" else ladder.TRANSPOSE[request.param]


def test_transpose_wrong_dtype(trung):
    with pytest.raises(TypeError, match="float32"):
        trung(dev((4, 8), np.float64), dev((8, 4)))


def test_transpose_mismatched_shapes(trung):
    with pytest.raises(ValueError, match="dst must be 8x4"):
        trung(dev((4, 8)), dev((4, 8)))


def test_transpose_non_contiguous(trung):
    with pytest.raises(ValueError, match="C-contiguous"):
        trung(dev((4, 8), order="F"), dev((8, 4)))


def test_transposed_source_is_refused_or_right(trung):
    src, src_host, contiguous = _transposed((8, 4))
    dst = dev((8, 4))
    if not contiguous:
        with pytest.raises(ValueError, match="C-contiguous"):
            trung(src, dst)
    else:
        trung(src, dst)
        np.testing.assert_array_equal(dst.copy_to_host(), src_host.T)


def test_wide_transpose_names_its_constraint():
    with pytest.raises(ValueError, match="multiple of 4"):
        ladder.TRANSPOSE["wide"](dev((6, 8)), dev((8, 6)))


# ---- too large for the GPU: refused before anything is allocated -------------------------
def test_problem_too_large_for_the_gpu_is_refused_before_allocation(monkeypatch):
    from gemm_lessons.core import backend as _backend, array_checks
    from gemm_lessons.measure import problems

    class FakeContext:
        def get_memory_info(self):
            return 2 * 2**30, 80 * 2**30  # 2 GiB free of 80

    monkeypatch.setattr(_backend, "SIMULATOR", False)
    monkeypatch.setattr(cuda, "current_context", lambda: FakeContext(), raising=False)
    with pytest.raises(MemoryError, match="GiB free"):
        problems.SgemmProblem(40000, 40000, 40000)  # 19 GiB of operands
    with pytest.raises(MemoryError, match="choose smaller sizes"):
        array_checks.require_fits_on_device(3 * 2**30, "three matrices")
    array_checks.require_fits_on_device(2**30, "one matrix")  # fits: no error
