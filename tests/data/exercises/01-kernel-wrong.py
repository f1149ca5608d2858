# Exercise 01-kernel, wrong: the right result, but consecutive i walk down a column of C (the
# uncoalesced mapping), so a warp reads 32 rows of A.
import gemm_lessons  # noqa: F401  (first: it chooses the GPU, or numba's CUDA simulator)
import numpy as np
from numba import cuda


@cuda.jit
def my_naive_1d(A, B, C, alpha, beta):
    i = cuda.grid(1)
    M, N = C.shape
    if i < M * N:
        row, col = i % M, i // M
        acc = np.float32(0.0)
        for k in range(A.shape[1]):
            acc += A[row, k] * B[k, col]
        if beta == 0:
            C[row, col] = alpha * acc
        else:
            C[row, col] = alpha * acc + beta * C[row, col]
