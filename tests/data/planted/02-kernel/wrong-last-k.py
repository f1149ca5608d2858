# expect: Wrong result | relative error
# A wrong result: the last k of every slice is left out.
import gemm_lessons  # noqa: F401  (first: it chooses the GPU, or numba's CUDA simulator)
import numpy as np
from numba import cuda, float32

BM, BN, BK = 8, 32, 32  # a BM x BN tile of C per block, slices of BK; blocks of BN x BM threads


@cuda.jit
def my_tiled(A, B, C, alpha, beta):
    sA = cuda.shared.array((BM, BK), float32)
    sB = cuda.shared.array((BK, BN), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    row = cuda.blockIdx.y * BM + ty  # this thread computes C[row, col]
    col = cuda.blockIdx.x * BN + tx
    M, K = A.shape
    N = B.shape[1]
    acc = np.float32(0.0)
    for k0 in range(0, K, BK):
        sA[ty, tx] = A[row, k0 + tx] if row < M and k0 + tx < K else np.float32(0.0)
        for l in range(BK // BM):
            r = ty + l * BM
            sB[r, tx] = B[k0 + r, col] if k0 + r < K and col < N else np.float32(0.0)
        cuda.syncthreads()
        for k in range(BK - 1):  # the last k of every slice is left out
            acc += sA[ty, k] * sB[k, tx]
        cuda.syncthreads()
    if row < M and col < N:
        C[row, col] = alpha * acc + (beta * C[row, col] if beta != 0 else np.float32(0.0))


my_tiled.tile = (BM, BN, BK)  # the check's launch reads the tile shape from here
