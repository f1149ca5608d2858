"""Lesson 01: one thread per element of C, threadIdx.x along the columns (coalesced)."""
import numpy as np
from numba import cuda

from gemm_lessons.core.array_checks import sgemm_shapes

# lesson-cell: begin
@cuda.jit
def sgemm_naive(A, B, C, alpha, beta):
    # threadIdx.x walks the columns of C: the 32 threads of a warp read 32 neighbouring
    # floats of B (one coalesced 128-byte request) and the same float of A (a broadcast).
    col = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    row = cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y
    M, K = A.shape
    N = B.shape[1]
    if row < M and col < N:  # the grid is rounded up: guard the edge threads
        acc = np.float32(0.0)
        for k in range(K):
            acc += A[row, k] * B[k, col]
        if beta == 0:  # as in BLAS, C is not read when beta == 0
            C[row, col] = alpha * acc
        else:
            C[row, col] = alpha * acc + beta * C[row, col]
# lesson-cell: end

BLOCK = (32, 8)  # 32 threads along a row of C (one warp), 8 rows: 256 threads


def sgemm(A, B, C, alpha=1.0, beta=0.0, kernel=sgemm_naive):
    """Launch one thread per element of C; ``kernel`` may be a student's edited copy."""
    M, N, K = sgemm_shapes(A, B, C)
    grid = ((N + BLOCK[0] - 1) // BLOCK[0], (M + BLOCK[1] - 1) // BLOCK[1])
    kernel[grid, BLOCK](A, B, C, np.float32(alpha), np.float32(beta))
