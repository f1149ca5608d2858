"""Lesson 03: 1-D register tiling: each thread computes TM results down a column of C."""
import functools

import numpy as np
from numba import cuda, float32

from gemm_lessons.core.array_checks import sgemm_shapes

# lesson-cell: begin
def make_sgemm_reg1d(BM=128, BN=128, BK=8, TM=16):
    """BM x BN tile of C per block, BK-wide slices of K, TM results per thread."""
    THREADS = BM * BN // TM
    assert THREADS == BM * BK == BK * BN, "each thread stages exactly one value of each tile"

    @cuda.jit
    def sgemm_reg1d(A, B, C, alpha, beta):
        sA = cuda.shared.array((BM, BK), float32)
        sB = cuda.shared.array((BK, BN), float32)
        acc = cuda.local.array(TM, float32)  # stays in registers: every index is a constant
        for i in range(TM):
            acc[i] = 0.0
        tid = cuda.threadIdx.x
        row0 = cuda.blockIdx.y * BM
        col0 = cuda.blockIdx.x * BN
        M, K = A.shape
        N = B.shape[1]
        a_r, a_c = tid // BK, tid % BK  # which value of the A tile this thread stages
        b_r, b_c = tid // BN, tid % BN  # ... and of the B tile
        t_row, t_col = tid // BN, tid % BN  # this thread computes C[t_row*TM : +TM, t_col]
        for k0 in range(0, K, BK):
            r, c = row0 + a_r, k0 + a_c
            sA[a_r, a_c] = A[r, c] if r < M and c < K else np.float32(0.0)
            r, c = k0 + b_r, col0 + b_c
            sB[b_r, b_c] = B[r, c] if r < K and c < N else np.float32(0.0)
            cuda.syncthreads()
            for k in range(BK):
                b = sB[k, t_col]  # one shared-memory read, reused TM times from a register
                for i in range(TM):
                    acc[i] += sA[t_row * TM + i, k] * b
            cuda.syncthreads()
        col = col0 + t_col
        for i in range(TM):
            row = row0 + t_row * TM + i
            if row < M and col < N:
                if beta == 0:
                    C[row, col] = alpha * acc[i]
                else:
                    C[row, col] = alpha * acc[i] + beta * C[row, col]

    sgemm_reg1d.tile = (BM, BN, BK, TM)
    return sgemm_reg1d
# lesson-cell: end


@functools.lru_cache(maxsize=None)
def kernel_for(BM=128, BN=128, BK=8, TM=16):
    return make_sgemm_reg1d(BM, BN, BK, TM)


sgemm_reg1d = kernel_for()


def sgemm(A, B, C, alpha=1.0, beta=0.0, kernel=sgemm_reg1d):
    M, N, K = sgemm_shapes(A, B, C)
    BM, BN, BK, TM = kernel.tile
    grid = ((N + BN - 1) // BN, (M + BM - 1) // BM)
    kernel[grid, BM * BN // TM](A, B, C, np.float32(alpha), np.float32(beta))
