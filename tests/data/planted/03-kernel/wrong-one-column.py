# expect: Wrong result
# A wrong result: every accumulator uses the same column of sB.
import gemm_lessons  # noqa: F401  (first: it chooses the GPU, or numba's CUDA simulator)
import numpy as np
from numba import cuda, float32

def make_my_reg1d_rows(BM=32, BN=32, BK=8, TN=4):
    THREADS = BM * BN // TN
    assert THREADS == BM * BK == BK * BN, "each thread stages exactly one value of each tile"

    @cuda.jit
    def my_reg1d_rows(A, B, C, alpha, beta):
        sA = cuda.shared.array((BM, BK), float32)
        sB = cuda.shared.array((BK, BN), float32)
        acc = cuda.local.array(TN, float32)
        for j in range(TN):
            acc[j] = 0.0
        tid = cuda.threadIdx.x
        row0, col0 = cuda.blockIdx.y * BM, cuda.blockIdx.x * BN
        M, K = A.shape
        N = B.shape[1]
        t_row, t_col = tid // (BN // TN), (tid % (BN // TN)) * TN  # this thread's row, first column
        for k0 in range(0, K, BK):
            r, c = row0 + tid // BK, k0 + tid % BK
            sA[tid // BK, tid % BK] = A[r, c] if r < M and c < K else np.float32(0.0)
            r, c = k0 + tid // BN, col0 + tid % BN
            sB[tid // BN, tid % BN] = B[r, c] if r < K and c < N else np.float32(0.0)
            cuda.syncthreads()
            for k in range(BK):
                a = sA[t_row, k]
                for j in range(TN):
                    acc[j] += a * sB[k, t_col]  # the same column for all TN results
            cuda.syncthreads()
        row = row0 + t_row
        for j in range(TN):
            col = col0 + t_col + j
            if row < M and col < N:
                C[row, col] = alpha * acc[j] + (beta * C[row, col] if beta != 0 else np.float32(0.0))

    my_reg1d_rows.tile = (BM, BN, BK, TN)  # the check's launch reads the tile shape from here
    return my_reg1d_rows
