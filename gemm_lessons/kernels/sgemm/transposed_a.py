"""Lesson 05, step 3: step 2's kernel with the A tile stored transposed in shared memory.

One change to reg2d_unrolled.py: the A tile is stored as ``sAT[k, m]`` (each value written
to its transposed place on the way in), so a thread's 8 values of A for one k are neighbours,
like its 8 values of B, and both are read 16 bytes at a time: ``load4`` on a shared array is
one LDS.128 (gemm_lessons/core/float4.py).  Asked for explicitly, because whether NVVM merges
four neighbouring shared reads by itself depends on the toolchain (the H100's driver did not
here; an offline CUDA 12 compile did).
"""
import numpy as np
from numba import cuda, float32

from gemm_lessons.core.array_checks import sgemm_shapes
from gemm_lessons.core.float4 import load4
from gemm_lessons.core.jit import jit
from gemm_lessons.core.unroll import static_range, unrolled

# lesson-cell: begin
BM, BN, BK, TM, TN = 128, 128, 8, 8, 8
THREADS = (BM // TM) * (BN // TN)  # 256


@jit(max_registers=128)  # as in lesson 04: two 256-thread blocks per SM
@unrolled
def sgemm_transposed_a(A, B, C, alpha, beta):
    sAT = cuda.shared.array((BK, BM), float32)  # A tile, transposed: sAT[k, m]
    sB = cuda.shared.array((BK, BN), float32)
    tid = cuda.threadIdx.x
    row0 = cuda.blockIdx.y * BM
    col0 = cuda.blockIdx.x * BN
    M, K = A.shape
    N = B.shape[1]
    t_row = (tid // (BN // TN)) * TM  # this thread's 8x8 results, side by side: tile rows t_row..t_row+7
    t_col = (tid % (BN // TN)) * TN   # and columns t_col..t_col+7
    # the thread's results, and one k-step's column of A and row of B: every index is a
    # constant once the static_range loops are written out, so all three live in registers
    acc = cuda.local.array((TM, TN), float32)
    a = cuda.local.array(TM, float32)
    b = cuda.local.array(TN, float32)
    for i in static_range(TM):
        for j in static_range(TN):
            acc[i, j] = np.float32(0.0)
    for k0 in range(0, K, BK):
        for l in range(BM * BK // THREADS):  # 4 values of each tile per thread, 4 bytes at a time
            idx = tid + l * THREADS
            r, c = idx // BK, idx % BK
            sAT[c, r] = A[row0 + r, k0 + c] if row0 + r < M and k0 + c < K else np.float32(0.0)
        for l in range(BK * BN // THREADS):
            idx = tid + l * THREADS
            r, c = idx // BN, idx % BN
            sB[r, c] = B[k0 + r, col0 + c] if k0 + r < K and col0 + c < N else np.float32(0.0)
        cuda.syncthreads()
        for k in range(BK):
            for h in static_range(TM // 4):  # a row of the transposed A tile: 8 neighbours, two LDS.128
                a[4 * h], a[4 * h + 1], a[4 * h + 2], a[4 * h + 3] = load4(sAT, k, t_row + 4 * h)
            for h in static_range(TN // 4):  # a row of the B tile: 8 neighbours, two LDS.128
                b[4 * h], b[4 * h + 1], b[4 * h + 2], b[4 * h + 3] = load4(sB, k, t_col + 4 * h)
            for i in static_range(TM):
                for j in static_range(TN):
                    acc[i, j] += a[i] * b[j]
        cuda.syncthreads()
    for i in static_range(TM):
        row = row0 + t_row + i
        for j in static_range(TN):
            col = col0 + t_col + j
            if row < M and col < N:
                if beta == 0:
                    C[row, col] = alpha * acc[i, j]
                else:
                    C[row, col] = alpha * acc[i, j] + beta * C[row, col]
# lesson-cell: end


def sgemm(A, B, C, alpha=1.0, beta=0.0, kernel=sgemm_transposed_a):
    M, N, K = sgemm_shapes(A, B, C)
    grid = ((N + BN - 1) // BN, (M + BM - 1) // BM)
    kernel[grid, THREADS](A, B, C, np.float32(alpha), np.float32(beta))
