"""Lesson 04: 2-D register tiling: each thread computes a TM x TN outer product."""
import functools

import numpy as np
from numba import cuda, float32

from gemm_lessons.core.array_checks import sgemm_shapes
from gemm_lessons.core.jit import jit

# lesson-cell: begin
def make_sgemm_reg2d(BM=128, BN=128, BK=8, TM=8, TN=8, SPREAD=True, MAX_REGISTERS=128):
    """BM x BN tile of C per block, TM x TN results per thread.  With SPREAD, a thread's
    TM rows are BM//TM apart and its TN columns BN//TN apart (instead of side by side), so
    that the threads of a warp read neighbouring shared-memory words (lesson 06 says why).
    MAX_REGISTERS caps registers per thread so that two 256-thread blocks fit on an SM."""
    THREADS = (BM // TM) * (BN // TN)
    A_LOADS = BM * BK // THREADS  # values of the A tile each thread stages
    B_LOADS = BK * BN // THREADS
    ACC = TM * TN  # array shapes must be compile-time constants: computed here
    ROW_STEP = BM // TM if SPREAD else 1
    COL_STEP = BN // TN if SPREAD else 1
    ROW_SPAN = 1 if SPREAD else TM
    COL_SPAN = 1 if SPREAD else TN

    @jit(max_registers=MAX_REGISTERS)  # cuda.jit; the cap is dropped on the simulator
    def sgemm_reg2d(A, B, C, alpha, beta):
        sA = cuda.shared.array((BM, BK), float32)
        sB = cuda.shared.array((BK, BN), float32)
        acc = cuda.local.array(ACC, float32)
        a_reg = cuda.local.array(TM, float32)
        b_reg = cuda.local.array(TN, float32)
        for i in range(ACC):
            acc[i] = 0.0
        tid = cuda.threadIdx.x
        row0 = cuda.blockIdx.y * BM
        col0 = cuda.blockIdx.x * BN
        M, K = A.shape
        N = B.shape[1]
        # this thread owns rows t_row + i*ROW_STEP and columns t_col + j*COL_STEP of the tile
        t_row = (tid // (BN // TN)) * ROW_SPAN
        t_col = (tid % (BN // TN)) * COL_SPAN
        for k0 in range(0, K, BK):
            for l in range(A_LOADS):  # consecutive threads stage consecutive values
                idx = tid + l * THREADS
                r, c = idx // BK, idx % BK
                sA[r, c] = A[row0 + r, k0 + c] if row0 + r < M and k0 + c < K else np.float32(0.0)
            for l in range(B_LOADS):
                idx = tid + l * THREADS
                r, c = idx // BN, idx % BN
                sB[r, c] = B[k0 + r, col0 + c] if k0 + r < K and col0 + c < N else np.float32(0.0)
            cuda.syncthreads()
            for k in range(BK):
                for i in range(TM):  # a column of the A tile and a row of the B tile ...
                    a_reg[i] = sA[t_row + i * ROW_STEP, k]
                for j in range(TN):
                    b_reg[j] = sB[k, t_col + j * COL_STEP]
                for i in range(TM):  # ... make TM*TN products from TM+TN shared reads
                    for j in range(TN):
                        acc[i * TN + j] += a_reg[i] * b_reg[j]
            cuda.syncthreads()
        for i in range(TM):
            row = row0 + t_row + i * ROW_STEP
            for j in range(TN):
                col = col0 + t_col + j * COL_STEP
                if row < M and col < N:
                    if beta == 0:
                        C[row, col] = alpha * acc[i * TN + j]
                    else:
                        C[row, col] = alpha * acc[i * TN + j] + beta * C[row, col]

    sgemm_reg2d.tile = (BM, BN, BK, TM, TN)
    return sgemm_reg2d
# lesson-cell: end


@functools.lru_cache(maxsize=None)
def kernel_for(BM=128, BN=128, BK=8, TM=8, TN=8, SPREAD=True, MAX_REGISTERS=128):
    return make_sgemm_reg2d(BM, BN, BK, TM, TN, SPREAD, MAX_REGISTERS)


sgemm_reg2d = kernel_for()


def sgemm(A, B, C, alpha=1.0, beta=0.0, kernel=sgemm_reg2d):
    M, N, K = sgemm_shapes(A, B, C)
    BM, BN, BK, TM, TN = kernel.tile
    grid = ((N + BN - 1) // BN, (M + BM - 1) // BM)
    kernel[grid, (BM // TM) * (BN // TN)](A, B, C, np.float32(alpha), np.float32(beta))
