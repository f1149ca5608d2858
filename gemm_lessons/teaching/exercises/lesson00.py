"""Lesson 00's exercises: the FLOP count and the arithmetic intensity of an SGEMM."""
from gemm_lessons.model import counting
from gemm_lessons.teaching.exercises.core import _number, exercise


FLOPS_00 = (300, 200, 100)  # M, N, K of 00-flops: a shape the lesson's table does not print
INTENSITY_00 = (4096, 4096, 512)  # M, N, K of 00-intensity (beta = 0): not square, not in the table


@exercise("00-flops", "K multiplies and K-1 adds per element, then alpha*, beta* and one more add.")
def check_flop_count(ans):
    M, N, K = FLOPS_00
    return _number(ans, counting.sgemm_flops(M, N, K, alpha_beta=True),
                   f"the FLOP count of alpha*A@B + beta*C for M={M}, N={N}, K={K}")


@exercise("00-intensity", "FLOP = 2MNK; bytes = 4 x (MK + KN + MN) when beta == 0.")
def check_arithmetic_intensity(ans):
    M, N, K = INTENSITY_00
    return _number(ans, counting.sgemm_intensity(M, N, K),
                   f"the arithmetic intensity of a {M}x{N}x{K} SGEMM with beta = 0 (FLOP per byte)")
