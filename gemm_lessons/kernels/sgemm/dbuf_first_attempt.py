"""Lesson 07: double buffering on top of lesson 06's kernel.

While the threads compute from one shared-memory buffer, the next slice of A and B is already
on its way from global memory into registers; after the compute it goes into the *other*
buffer.  One barrier per slice instead of two, and the global-load latency hides behind 512
FMAs.  The price: 8 more registers per thread and twice the shared memory.

Two versions:
  * ``sgemm_dbuf_indexed`` (below): the first attempt, lesson 06's kernel with a buffer index
    ``buf`` in front of every shared index.  Measured on an H100 it was *slower* than lesson 06:
    the runtime index cost registers and NVVM no longer merged the shared loads into LDS.128.
  * the rung, ``DBUF_CONFIG``: the same idea in warptile.py's kernel (two separate shared
    arrays, two slices per loop trip, explicit 128-bit shared loads, loads without branches),
    with lesson 06's lane layout: 2 x 16 lanes per warp, 8x8 results per thread.
"""
import numpy as np
from numba import cuda, float32

from gemm_lessons.core.array_checks import sgemm_shapes
from gemm_lessons.kernels.sgemm.vec import BK, BM, BN, THREADS, TM, TN
from gemm_lessons.kernels.sgemm.warptile import TileConfig
from gemm_lessons.kernels.sgemm.warptile import sgemm as warptile_sgemm
from gemm_lessons.core.float4 import load4, require_wide_alignment, store4
from gemm_lessons.core.unroll import static_range, unrolled

# lesson-cell: begin
GAP = BM // 2  # lesson 06's split: a thread's 8x8 results are four 4x4 pieces, 64 rows (columns) apart
assert BM == BN and TM == TN == 8


@cuda.jit
@unrolled
def sgemm_dbuf_indexed(A, B, C, alpha, beta):
    sAT = cuda.shared.array((2, BK, BM), float32)  # two buffers of the transposed A tile
    sB = cuda.shared.array((2, BK, BN), float32)
    tid = cuda.threadIdx.x
    row0 = cuda.blockIdx.y * BM
    col0 = cuda.blockIdx.x * BN
    M, K = A.shape
    N = B.shape[1]
    t_row = (tid // (BN // TN)) * 4
    t_col = (tid % (BN // TN)) * 4
    a_r = tid // (BK // 4)
    a_c = (tid % (BK // 4)) * 4
    b_r = tid // (BN // 4)
    b_c = (tid % (BN // 4)) * 4
    acc = cuda.local.array((TM, TN), float32)  # registers: indexed by constants only
    a = cuda.local.array(TM, float32)
    b = cuda.local.array(TN, float32)
    for i in static_range(TM):
        for j in static_range(TN):
            acc[i, j] = np.float32(0.0)
    # prologue: slice 0 into buffer 0
    x0 = x1 = x2 = x3 = y0 = y1 = y2 = y3 = np.float32(0.0)
    if (row0 + a_r < M) & (a_c < K):
        x0, x1, x2, x3 = load4(A, row0 + a_r, a_c)
    if (b_r < K) & (col0 + b_c < N):
        y0, y1, y2, y3 = load4(B, b_r, col0 + b_c)
    sAT[0, a_c + 0, a_r] = x0
    sAT[0, a_c + 1, a_r] = x1
    sAT[0, a_c + 2, a_r] = x2
    sAT[0, a_c + 3, a_r] = x3
    sB[0, b_r, b_c + 0] = y0
    sB[0, b_r, b_c + 1] = y1
    sB[0, b_r, b_c + 2] = y2
    sB[0, b_r, b_c + 3] = y3
    cuda.syncthreads()
    buf = 0
    for k0 in range(0, K, BK):
        nxt = k0 + BK
        # the next slice's global loads start now and land in registers during the compute
        x0 = x1 = x2 = x3 = y0 = y1 = y2 = y3 = np.float32(0.0)
        if (row0 + a_r < M) & (nxt + a_c < K):
            x0, x1, x2, x3 = load4(A, row0 + a_r, nxt + a_c)
        if (nxt + b_r < K) & (col0 + b_c < N):
            y0, y1, y2, y3 = load4(B, nxt + b_r, col0 + b_c)
        for k in range(BK):  # lesson 06's k-step read element by element, the buffer index in front of each
            for i in static_range(TM):
                a[i] = sAT[buf, k, t_row + (i % 4 + i // 4 * GAP)]
            for j in static_range(TN):
                b[j] = sB[buf, k, t_col + (j % 4 + j // 4 * GAP)]
            for i in static_range(TM):
                for j in static_range(TN):
                    acc[i, j] += a[i] * b[j]
        if nxt < K:  # into the buffer nobody reads during this slice
            sAT[1 - buf, a_c + 0, a_r] = x0
            sAT[1 - buf, a_c + 1, a_r] = x1
            sAT[1 - buf, a_c + 2, a_r] = x2
            sAT[1 - buf, a_c + 3, a_r] = x3
            sB[1 - buf, b_r, b_c + 0] = y0
            sB[1 - buf, b_r, b_c + 1] = y1
            sB[1 - buf, b_r, b_c + 2] = y2
            sB[1 - buf, b_r, b_c + 3] = y3
        cuda.syncthreads()  # one barrier: the new buffer is complete, the old one free
        buf = 1 - buf
    for i in static_range(TM):
        row = row0 + t_row + (i % 4 + i // 4 * GAP)
        if row < M:
            for j in static_range(0, TN, 4):
                col = col0 + t_col + j // 4 * GAP
                if col < N:
                    if beta == 0:
                        store4(C, row, col, alpha * acc[i, j], alpha * acc[i, j + 1],
                               alpha * acc[i, j + 2], alpha * acc[i, j + 3])
                    else:
                        o0, o1, o2, o3 = load4(C, row, col)
                        store4(C, row, col, alpha * acc[i, j] + beta * o0, alpha * acc[i, j + 1] + beta * o1,
                               alpha * acc[i, j + 2] + beta * o2, alpha * acc[i, j + 3] + beta * o3)
# lesson-cell: end


# The rung: lesson 06's lane layout (a warp covers 16 rows x 128 columns as 2 x 16 lanes),
# 128x128x8 block, 8x8 results per thread, 128 registers, and now two shared buffers.
DBUF_CONFIG = TileConfig(BM=128, BN=128, BK=8, WM=16, WN=128, TM=8, TN=8, stages=2, max_registers=128)


def sgemm(A, B, C, alpha=1.0, beta=0.0):
    warptile_sgemm(A, B, C, alpha, beta, config=DBUF_CONFIG)


def sgemm_indexed(A, B, C, alpha=1.0, beta=0.0, kernel=sgemm_dbuf_indexed):
    M, N, K = sgemm_shapes(A, B, C)
    require_wide_alignment(("A", A), ("B", B), ("C", C))
    grid = ((N + BN - 1) // BN, (M + BM - 1) // BM)
    kernel[grid, THREADS](A, B, C, np.float32(alpha), np.float32(beta))
