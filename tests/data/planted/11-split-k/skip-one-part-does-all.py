# expect: matches the float64 reference | does not split the work | the whole product
# The right C without splitting the work: part 0 sums all of K.
import gemm_lessons  # noqa: F401  (first: it chooses the GPU, or numba's CUDA simulator)
import numpy as np
from numba import cuda, float32
from gemm_lessons.teaching import exercises


@cuda.jit
def sgemm_partial(A, B, W):
    """Part z = cuda.blockIdx.z of A @ B: this thread's sum over the part's chunk of k, into W[z, row, col]."""
    M, K = A.shape
    N = B.shape[1]
    col = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x  # lesson 01: threadIdx.x along a row of C
    row = cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y
    if row < M and col < N:
        z = cuda.blockIdx.z
        k_begin = 0
        k_end = K if z == 0 else 0  # part 0 does all of K, the others write zeros
        acc = float32(0.0)
        for k in range(k_begin, k_end):
            acc += A[row, k] * B[k, col]
        W[z, row, col] = acc


@cuda.jit
def splitk_reduce(W, C, alpha, beta):
    """C = alpha * (W[0] + W[1] + ...) + beta * C, one thread per element of C."""
    M, N = C.shape
    col = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    row = cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y
    if row < M and col < N:
        total = W[0, row, col]
        for s in range(1, W.shape[0]):
            total += W[s, row, col]
        if beta == 0:
            C[row, col] = alpha * total
        else:
            C[row, col] = alpha * total + beta * C[row, col]


split_k = (sgemm_partial, splitk_reduce)
