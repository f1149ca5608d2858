# expect: Wrong result | relative error
# A wrong result: the sum leaves out the last k.
import gemm_lessons  # noqa: F401  (first: it chooses the GPU, or numba's CUDA simulator)
import numpy as np
from numba import cuda, float32

@cuda.jit
def my_naive_1d(A, B, C, alpha, beta):
    i = cuda.grid(1)
    M, N = C.shape
    if i < M * N:
        row, col = i // N, i % N
        acc = np.float32(0.0)
        for k in range(A.shape[1] - 1):  # the last k is left out
            acc += A[row, k] * B[k, col]
        C[row, col] = alpha * acc + (beta * C[row, col] if beta != 0 else np.float32(0.0))
