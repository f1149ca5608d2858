# A right answer: a device function, and chained indexing (A[row][k]), which numba accepts.
import gemm_lessons  # noqa: F401  (first: it chooses the GPU, or numba's CUDA simulator)
import numpy as np
from numba import cuda, float32

@cuda.jit(device=True)
def dot(A, B, row, col):
    acc = float32(0.0)
    for k in range(A.shape[1]):
        acc += A[row][k] * B[k][col]
    return acc


@cuda.jit
def my_naive_1d(A, B, C, alpha, beta):
    i = cuda.grid(1)
    M, N = C.shape
    if i < M * N:
        row = i // N
        col = i - row * N
        acc = dot(A, B, row, col)
        if beta != 0:
            acc = alpha * acc + beta * C[row][col]
        else:
            acc = alpha * acc
        C[row][col] = acc
