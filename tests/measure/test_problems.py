import numpy as np
import pytest
from numba import cuda

import gemm_lessons as gl
from gemm_lessons.measure import problems
from gemm_lessons.kernels.sgemm import naive


def _launch_then(post):
    """A rung that runs the naive kernel and then damages C on the host side."""
    def rung(A, B, C, alpha=1.0, beta=0.0):
        naive.sgemm(A, B, C, alpha, beta)
        host = C.copy_to_host()
        post(host)
        C.copy_to_device(host)
    return rung


def test_correct_kernel_passes_with_alpha_beta():
    res = gl.check(naive.sgemm, 37, 21, 19, alpha=1.5, beta=-0.5)
    assert res.passed and "PASS" in res.message()


def test_unwritten_elements_are_caught():
    def skip_last_row(A, B, C, alpha=1.0, beta=0.0):
        M = A.shape[0]
        naive.sgemm(A[: M - 1], B, C[: M - 1], alpha, beta)
    res = gl.check(skip_last_row, 20, 17, 9)
    assert not res.passed
    assert res.unwritten == 17 and res.first_bad == (19, 0)
    assert "never written" in res.message()


def test_wrong_values_are_caught():
    def add_one(h):
        h[3, 4] += 1.0
    res = gl.check(_launch_then(add_one), 20, 17, 9)
    assert not res.passed and res.rel_error > res.tol and res.first_bad == (3, 4)


def test_reading_c_when_beta_is_zero_is_caught():
    @cuda.jit
    def reads_c(A, B, C, alpha, beta):
        col = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
        row = cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y
        if row < C.shape[0] and col < C.shape[1]:
            acc = np.float32(0.0)
            for k in range(A.shape[1]):
                acc += A[row, k] * B[k, col]
            C[row, col] = alpha * acc + beta * C[row, col]  # NaN * 0 is NaN
    res = gl.check(lambda A, B, C, alpha, beta: naive.sgemm(A, B, C, alpha, beta, kernel=reads_c), 9, 8, 7)
    assert not res.passed


def test_nan_and_inf_inputs_propagate():
    p = problems.SgemmProblem(9, 8, 7)
    p.A[2, 3] = np.nan
    p.B[1, 5] = np.inf
    p.A_d = cuda.to_device(p.A)
    p.B_d = cuda.to_device(p.B)
    out = p.run(naive.sgemm)
    res = problems.compare("naive", out, p.reference, 1.0, 0.0, 7)
    assert res.passed, res.message()
    assert np.isnan(out[2]).all()

    def finite_everywhere(h):
        h[~np.isfinite(h)] = 0.0
    p2 = p.run(_launch_then(finite_everywhere))
    res2 = problems.compare("zeroed", p2, p.reference, 1.0, 0.0, 7)
    assert not res2.passed and res2.missing_nonfinite > 0


def test_poison_is_a_nan_no_arithmetic_makes():
    assert np.isnan(problems.POISON)
    inf, zero = np.float32(np.inf), np.float32(0)
    with np.errstate(invalid="ignore"):
        for made in (zero * inf, inf - inf, np.float32(np.nan) + zero):
            assert np.isnan(made) and made.view(np.uint32) != problems.POISON_BITS


def test_problem_rejects_bad_sizes():
    with pytest.raises(ValueError, match="positive"):
        problems.SgemmProblem(0, 3, 3)
    with pytest.raises(ValueError, match="positive"):
        problems.SgemmProblem(2.5, 3, 3)


def test_tolerance_grows_with_k():
    assert problems.tolerance(4096) > problems.tolerance(16) > 0
    assert problems.tolerance(4096) < 1e-3
