import dataclasses

import numpy as np
import pytest
from numba import cuda

from gemm_lessons.kernels import ladder
from gemm_lessons.measure import problems
from gemm_lessons import sgemm
from gemm_lessons.kernels.sgemm import naive

rng = np.random.default_rng(7)


def mats(M, N, K):
    return (rng.uniform(-1, 1, (M, K)).astype(np.float32), rng.uniform(-1, 1, (K, N)).astype(np.float32),
            rng.uniform(-1, 1, (M, N)).astype(np.float32))


def rel(x, ref):
    return np.linalg.norm(x - ref) / np.linalg.norm(ref)


@pytest.mark.parametrize("shape", [(33, 45, 19), (8, 12, 16), (1, 1, 1)])
def test_numpy_in_numpy_out_any_shape(shape):
    M, N, K = shape
    A, B, C0 = mats(M, N, K)
    out = sgemm(A, B)
    assert isinstance(out, np.ndarray) and out.shape == (M, N)
    assert rel(out, A.astype(np.float64) @ B) < problems.tolerance(K)
    C = C0.copy()
    res = sgemm(A, B, C, alpha=1.5, beta=-0.5)
    assert res is C
    assert rel(C, 1.5 * (A.astype(np.float64) @ B) - 0.5 * C0) < problems.tolerance(K)


def test_device_arrays_in_place_with_padding():
    A, B, C0 = mats(20, 18, 7)  # K and N not multiples of 4: padded behind the scenes
    A_d, B_d, C_d = cuda.to_device(A), cuda.to_device(B), cuda.to_device(C0)
    assert sgemm(A_d, B_d, C_d, alpha=2.0, beta=1.0) is C_d
    assert rel(C_d.copy_to_host(), 2.0 * (A.astype(np.float64) @ B) + C0) < problems.tolerance(7)


def test_uses_the_last_rung_by_default_and_accepts_another():
    A, B, _ = mats(9, 8, 4)
    calls = []

    def launch(*a, **k):
        calls.append(1)
        return naive.sgemm(*a, **k)

    sgemm(A, B, rung=dataclasses.replace(ladder.SGEMM["naive"], launch=launch))
    assert calls


def test_clear_errors():
    A, B, C = mats(4, 4, 4)
    with pytest.raises(TypeError, match="astype"):
        sgemm(A.astype(np.float64), B)
    with pytest.raises(ValueError, match="inner dimensions"):
        sgemm(A, B[:3])
    with pytest.raises(ValueError, match="needs a C"):
        sgemm(A, B, beta=1.0)
    with pytest.raises(TypeError, match="all as NumPy"):
        sgemm(A, cuda.to_device(B))
    assert sgemm(np.zeros((0, 4), np.float32), B).shape == (0, 4)  # empty: BLAS (test_contract.py)


def test_is_the_package_level_sgemm():
    import gemm_lessons
    from gemm_lessons.library import api

    assert gemm_lessons.sgemm is api.sgemm
