"""Lesson 05: A stored transposed in shared memory, and 128-bit loads everywhere.

Same 128x128x8 block and 8x8 results per thread as lesson 04, with three changes:
  * the A tile is stored transposed (sAT[k, m]) so a thread's 8 values of A for one k are
    contiguous, like its 8 values of B: two LDS.128 each instead of eight LDS.32;
  * global memory is read and C written 16 bytes at a time (LDG.128 / STG.128, see gemm_lessons/core/float4.py);
  * the k-step body is written out in full at compile time (``static_range`` loops,
    gemm_lessons/core/unroll.py): 64 accumulators in a register tile indexed only by constants,
    because NVVM does not fully unroll the loop nest of lesson 04 and numba has no
    ``#pragma unroll``; the loop over the BK k-steps stays a loop (lesson 05 times writing
    it out too: ``unroll_k`` in make_sgemm_vec).
"""
import numpy as np
from numba import cuda, float32

from gemm_lessons.core.array_checks import sgemm_shapes
from gemm_lessons.core.float4 import load4, require_wide_alignment, store4
from gemm_lessons.core.unroll import static, static_range, unrolled

# lesson-cell: begin
BM, BN, BK, TM, TN = 128, 128, 8, 8, 8
THREADS = (BM // TM) * (BN // TN)  # 256
assert BM * BK == 4 * THREADS and BK * BN == 4 * THREADS  # one float4 of each tile per thread


def make_sgemm_vec(unroll_k=False, split=False):
    """unroll_k: write out the k-loop too (lesson 05 times it against the loop).
    split: a thread's 8x8 results are four 4x4 pieces, BM/2 rows and BN/2 columns apart
    (lesson 06): then 8 neighbouring threads read 128 contiguous bytes."""
    ROW_GAP = BM // 2 if split else 4  # rows from a thread's first 4 result rows to its next 4
    COL_GAP = BN // 2 if split else 4  # ... and columns
    SPAN = 4 if split else TM          # rows (columns) between neighbouring threads' first results

    @cuda.jit
    @unrolled
    def sgemm_vec(A, B, C, alpha, beta):
        sAT = cuda.shared.array((BK, BM), float32)  # A tile, transposed: sAT[k, m]
        sB = cuda.shared.array((BK, BN), float32)
        tid = cuda.threadIdx.x
        row0 = cuda.blockIdx.y * BM
        col0 = cuda.blockIdx.x * BN
        M, K = A.shape
        N = B.shape[1]
        t_row = (tid // (BN // TN)) * SPAN  # first row and column of this thread's results
        t_col = (tid % (BN // TN)) * SPAN
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
            for k in static_range(BK) if static(unroll_k) else range(BK):
                for h in static_range(TM // 4):  # 8 + 8 shared values: 2 + 2 LDS.128
                    a[4 * h], a[4 * h + 1], a[4 * h + 2], a[4 * h + 3] = load4(sAT, k, t_row + h * ROW_GAP)
                for h in static_range(TN // 4):
                    b[4 * h], b[4 * h + 1], b[4 * h + 2], b[4 * h + 3] = load4(sB, k, t_col + h * COL_GAP)
                for i in static_range(TM):  # ... then 64 fused multiply-adds
                    for j in static_range(TN):
                        acc[i, j] += a[i] * b[j]
            cuda.syncthreads()
        for i in static_range(TM):
            row = row0 + t_row + (i % 4 + i // 4 * ROW_GAP)
            if row < M:
                for j in static_range(0, TN, 4):
                    col = col0 + t_col + j // 4 * COL_GAP
                    if col < N:
                        if beta == 0:
                            store4(C, row, col, alpha * acc[i, j], alpha * acc[i, j + 1],
                                   alpha * acc[i, j + 2], alpha * acc[i, j + 3])
                        else:
                            o0, o1, o2, o3 = load4(C, row, col)
                            store4(C, row, col, alpha * acc[i, j] + beta * o0, alpha * acc[i, j + 1] + beta * o1,
                                   alpha * acc[i, j + 2] + beta * o2, alpha * acc[i, j + 3] + beta * o3)

    return sgemm_vec
# lesson-cell: end


sgemm_vec = make_sgemm_vec()
sgemm_vec_unrolled_k = make_sgemm_vec(unroll_k=True)
sgemm_vec_split = make_sgemm_vec(split=True)


def sgemm(A, B, C, alpha=1.0, beta=0.0, kernel=sgemm_vec):
    M, N, K = sgemm_shapes(A, B, C)
    require_wide_alignment(("A", A), ("B", B), ("C", C))
    grid = ((N + BN - 1) // BN, (M + BM - 1) // BM)
    kernel[grid, THREADS](A, B, C, np.float32(alpha), np.float32(beta))
