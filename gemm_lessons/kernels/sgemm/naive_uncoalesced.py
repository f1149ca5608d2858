"""Lesson 01, the wrong way round: threadIdx.x along the rows of C (uncoalesced)."""
import numpy as np
from numba import cuda

from gemm_lessons.core.array_checks import sgemm_shapes

# lesson-cell: begin
@cuda.jit
def sgemm_naive_uncoalesced(A, B, C, alpha, beta):
    # threadIdx.x walks the ROWS of C: a warp's 32 threads read 32 floats of A that are K
    # floats apart (32 separate sectors) and write C with a stride of N floats.
    row = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    col = cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y
    M, K = A.shape
    N = B.shape[1]
    if row < M and col < N:
        acc = np.float32(0.0)
        for k in range(K):
            acc += A[row, k] * B[k, col]
        if beta == 0:
            C[row, col] = alpha * acc
        else:
            C[row, col] = alpha * acc + beta * C[row, col]
# lesson-cell: end

BLOCK = (32, 8)


def sgemm(A, B, C, alpha=1.0, beta=0.0, kernel=sgemm_naive_uncoalesced):
    M, N, K = sgemm_shapes(A, B, C)
    grid = ((M + BLOCK[0] - 1) // BLOCK[0], (N + BLOCK[1] - 1) // BLOCK[1])
    kernel[grid, BLOCK](A, B, C, np.float32(alpha), np.float32(beta))
