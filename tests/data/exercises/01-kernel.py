# Exercise 01-kernel, the teacher notebook's solution (lessons/01_naive.py):
# python -m gemm_lessons.check 01-kernel tests/data/exercises/01-kernel.py
import gemm_lessons  # noqa: F401  (first: it chooses the GPU, or numba's CUDA simulator)
import numpy as np
from numba import cuda


@cuda.jit
def my_naive_1d(A, B, C, alpha, beta):
    ### BEGIN SOLUTION
    i = cuda.grid(1)
    M, N = C.shape
    if i < M * N:
        row, col = i // N, i % N  # 32 consecutive i: neighbouring columns of one row (or two)
        acc = np.float32(0.0)
        for k in range(A.shape[1]):
            acc += A[row, k] * B[k, col]
        if beta == 0:
            C[row, col] = alpha * acc
        else:
            C[row, col] = alpha * acc + beta * C[row, col]
    ### END SOLUTION
