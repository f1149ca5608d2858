"""Bad input gets a clear error that says what to do, from every rung."""
import numpy as np
import pytest
from numba import cuda

from gemm_lessons import cublas, ladder

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


def test_transposed_view_is_refused(rung):
    with pytest.raises(ValueError, match="C-contiguous"):
        rung(dev((8, 4)).T, dev((8, 4)), dev((4, 4)))


def test_vec_names_its_constraint():
    with pytest.raises(ValueError, match="multiple of 4"):
        ladder.SGEMM["vec"](dev((8, 6)), dev((6, 8)), dev((8, 8)))
    with pytest.raises(ValueError, match="multiple of 4"):
        ladder.SGEMM["vec"](dev((8, 8)), dev((8, 5)), dev((8, 5)))
