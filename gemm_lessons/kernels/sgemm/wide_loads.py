"""Lesson 05, step 4: step 3's kernel with the tiles staged by 16-byte global loads (LDG.128).

One change to transposed_a.py: each thread fetches one float4 of the A tile and one of the
B tile per slice with ``load4`` (gemm_lessons/core/float4.py: one LDG.128 each) instead of four
4-byte loads of each.  The price: every row must start on a 16-byte boundary, so K and N must
be multiples of 4 (ValueError otherwise).  C is still written 4 bytes at a time.
"""
import numpy as np
from numba import cuda, float32

from gemm_lessons.core.array_checks import sgemm_shapes
from gemm_lessons.core.float4 import load4, require_wide_alignment
from gemm_lessons.core.jit import jit
from gemm_lessons.core.unroll import static_range, unrolled

# lesson-cell: begin
BM, BN, BK, TM, TN = 128, 128, 8, 8, 8
THREADS = (BM // TM) * (BN // TN)  # 256
assert BM * BK == 4 * THREADS and BK * BN == 4 * THREADS  # one float4 of each tile per thread


@jit(max_registers=128)  # as in lesson 04: two 256-thread blocks per SM
@unrolled
def sgemm_wide_loads(A, B, C, alpha, beta):
    sAT = cuda.shared.array((BK, BM), float32)  # A tile, transposed: sAT[k, m]
    sB = cuda.shared.array((BK, BN), float32)
    tid = cuda.threadIdx.x
    row0 = cuda.blockIdx.y * BM
    col0 = cuda.blockIdx.x * BN
    M, K = A.shape
    N = B.shape[1]
    t_row = (tid // (BN // TN)) * TM  # this thread's 8x8 results, side by side: tile rows t_row..t_row+7
    t_col = (tid % (BN // TN)) * TN   # and columns t_col..t_col+7
    a_r = tid // (BK // 4)            # the float4 of the A tile this thread stages
    a_c = (tid % (BK // 4)) * 4
    b_r = tid // (BN // 4)            # ... and of the B tile
    b_c = (tid % (BN // 4)) * 4
    # the thread's results, and one k-step's column of A and row of B: every index is a
    # constant once the static_range loops are written out, so all three live in registers
    acc = cuda.local.array((TM, TN), float32)
    a = cuda.local.array(TM, float32)
    b = cuda.local.array(TN, float32)
    for i in static_range(TM):
        for j in static_range(TN):
            acc[i, j] = np.float32(0.0)
    for k0 in range(0, K, BK):
        # K and N are multiples of 4, so a float4 lies wholly inside or wholly outside
        # one condition (& rather than `and`): the load is predicated, not branched around (lesson 07)
        if (row0 + a_r < M) & (k0 + a_c < K):
            x0, x1, x2, x3 = load4(A, row0 + a_r, k0 + a_c)
        else:
            x0 = x1 = x2 = x3 = np.float32(0.0)
        sAT[a_c + 0, a_r] = x0  # transposing on the way in: four 4-byte stores
        sAT[a_c + 1, a_r] = x1
        sAT[a_c + 2, a_r] = x2
        sAT[a_c + 3, a_r] = x3
        if (k0 + b_r < K) & (col0 + b_c < N):
            y0, y1, y2, y3 = load4(B, k0 + b_r, col0 + b_c)
        else:
            y0 = y1 = y2 = y3 = np.float32(0.0)
        sB[b_r, b_c + 0] = y0  # four scalar stores (the SASS: NVVM does not merge them here)
        sB[b_r, b_c + 1] = y1
        sB[b_r, b_c + 2] = y2
        sB[b_r, b_c + 3] = y3
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


def sgemm(A, B, C, alpha=1.0, beta=0.0, kernel=sgemm_wide_loads):
    M, N, K = sgemm_shapes(A, B, C)
    require_wide_alignment(("A", A), ("B", B))  # C is written 4 bytes at a time: any alignment
    grid = ((N + BN - 1) // BN, (M + BM - 1) // BM)
    kernel[grid, THREADS](A, B, C, np.float32(alpha), np.float32(beta))
