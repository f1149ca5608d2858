# expect: matches the float64 reference | not 32x64 warp tiles | 144
# The right result with lesson 07's thread layout (2 x 16 lanes per warp): no warp tiles.
import gemm_lessons  # noqa: F401  (first: it chooses the GPU, or numba's CUDA simulator)
import numpy as np
from numba import cuda, float32
from gemm_lessons.teaching import exercises
from gemm_lessons.core.float4 import load4, store4
from gemm_lessons.core.unroll import static_range, unrolled

BM, BN, BK, TM, TN = 32, 128, 8, 8, 8  # the check launches ceil(N/128) x ceil(M/32) blocks of 64 threads
WM, WN = 32, 64                        # the warp tile
LM, LN = WM // TM, WN // TN            # 4 x 8 lanes
THREADS = (BM // WM) * (BN // WN) * 32  # 64
A_STEP = THREADS // (BK // 4)           # 32: rows between a thread's float4s of A (it stages only one)
B_STEP = THREADS // (BN // 4)           # 2: four float4s of B per thread, 2 rows apart
A_ROW = BM + 4                          # padded rows of the transposed A tile (exercise 06)


@cuda.jit
@unrolled
def sgemm_ex08(A, B, C, alpha, beta):
    sAT = cuda.shared.array((BK, A_ROW), float32)
    sB = cuda.shared.array((BK, BN), float32)
    tid = cuda.threadIdx.x
    warp, lane = tid // 32, tid % 32
    row0 = cuda.blockIdx.y * BM
    col0 = cuda.blockIdx.x * BN
    M, K = A.shape
    N = B.shape[1]
    a_r = tid // (BK // 4)
    a_c = (tid % (BK // 4)) * 4
    b_r = tid // (BN // 4)
    b_c = (tid % (BN // 4)) * 4

    def row_of(i):  # the tile row of this thread's result row i (i = 0..7, a constant)
        return (tid // 16) * 4 + i % 4 + i // 4 * (BM // 2)

    def col_of(j):  # the tile column of this thread's result column j (j = 0..7, a constant)
        return (tid % 16) * 4 + j % 4 + j // 4 * (BN // 2)

    acc = cuda.local.array((TM, TN), float32)
    a = cuda.local.array(TM, float32)
    b = cuda.local.array(TN, float32)
    for i in static_range(TM):
        for j in static_range(TN):
            acc[i, j] = np.float32(0.0)
    for k0 in range(0, K, BK):
        for p in static_range(BM * BK // 4 // THREADS):
            x0 = x1 = x2 = x3 = np.float32(0.0)
            if (row0 + a_r + p * A_STEP < M) & (k0 + a_c < K):  # `&`, not `and` (lesson 07)
                x0, x1, x2, x3 = load4(A, row0 + a_r + p * A_STEP, k0 + a_c)
            sAT[a_c + 0, a_r + p * A_STEP] = x0
            sAT[a_c + 1, a_r + p * A_STEP] = x1
            sAT[a_c + 2, a_r + p * A_STEP] = x2
            sAT[a_c + 3, a_r + p * A_STEP] = x3
        for q in static_range(BK * BN // 4 // THREADS):
            y0 = y1 = y2 = y3 = np.float32(0.0)
            if (k0 + b_r + q * B_STEP < K) & (col0 + b_c < N):
                y0, y1, y2, y3 = load4(B, k0 + b_r + q * B_STEP, col0 + b_c)
            store4(sB, b_r + q * B_STEP, b_c, y0, y1, y2, y3)
        cuda.syncthreads()
        for k in range(BK):
            for i in static_range(TM):
                r = row_of(i)
                a[i] = sAT[k, r]
            for j in static_range(TN):
                c = col_of(j)
                b[j] = sB[k, c]
            for i in static_range(TM):
                for j in static_range(TN):
                    acc[i, j] += a[i] * b[j]
        cuda.syncthreads()
    for i in static_range(TM):
        r = row_of(i)
        row = row0 + r
        for j in static_range(TN):
            c = col_of(j)
            col = col0 + c
            if row < M and col < N:
                if beta == 0:
                    C[row, col] = alpha * acc[i, j]
                else:
                    C[row, col] = alpha * acc[i, j] + beta * C[row, col]
