# expect: matches the float64 reference | loads from sB | conflicts
# The right result with the padding but 8 contiguous columns per thread: the loads from sB conflict.
import gemm_lessons  # noqa: F401  (first: it chooses the GPU, or numba's CUDA simulator)
import numpy as np
from numba import cuda, float32
from gemm_lessons.teaching import exercises
from gemm_lessons.core.float4 import load4, store4
from gemm_lessons.core.unroll import static_range, unrolled

BM, BN, BK, TM, TN = 64, 64, 8, 8, 8  # the check launches ceil(N/64) x ceil(M/64) blocks of 64 threads
THREADS = (BM // TM) * (BN // TN)     # 64
A_STEP = THREADS // (BK // 4)         # 32: a thread stages rows a_r and a_r + 32 of the A tile
B_STEP = THREADS // (BN // 4)         # 4: ... and rows b_r and b_r + 4 of the B tile
PAD = 4
A_ROW = BM + PAD                      # floats per row of sAT (a shared shape must be a constant)


@cuda.jit
@unrolled
def sgemm_ex06(A, B, C, alpha, beta):
    sAT = cuda.shared.array((BK, A_ROW), float32)  # the A tile, transposed and padded: sAT[k, m]
    sB = cuda.shared.array((BK, BN), float32)
    tid = cuda.threadIdx.x
    row0 = cuda.blockIdx.y * BM
    col0 = cuda.blockIdx.x * BN
    M, K = A.shape
    N = B.shape[1]
    tc = tid % (BN // TN)             # this thread's place among the 8 threads across the tile
    t_row = (tid // (BN // TN)) * TM  # its 8 rows of results: t_row..t_row+7
    a_r = tid // (BK // 4)
    a_c = (tid % (BK // 4)) * 4
    b_r = tid // (BN // 4)
    b_c = (tid % (BN // 4)) * 4

    def col_of(j):  # the tile column of this thread's result column j (j = 0..7, a constant)
        return tc * TN + j

    acc = cuda.local.array((TM, TN), float32)
    a = cuda.local.array(TM, float32)
    b = cuda.local.array(TN, float32)
    for i in static_range(TM):
        for j in static_range(TN):
            acc[i, j] = np.float32(0.0)
    for k0 in range(0, K, BK):
        for p in static_range(BM * BK // 4 // THREADS):
            x0 = x1 = x2 = x3 = np.float32(0.0)
            if row0 + a_r + p * A_STEP < M and k0 + a_c < K:
                x0, x1, x2, x3 = load4(A, row0 + a_r + p * A_STEP, k0 + a_c)
            sAT[a_c + 0, a_r + p * A_STEP] = x0
            sAT[a_c + 1, a_r + p * A_STEP] = x1
            sAT[a_c + 2, a_r + p * A_STEP] = x2
            sAT[a_c + 3, a_r + p * A_STEP] = x3
        for q in static_range(BK * BN // 4 // THREADS):
            y0 = y1 = y2 = y3 = np.float32(0.0)
            if k0 + b_r + q * B_STEP < K and col0 + b_c < N:
                y0, y1, y2, y3 = load4(B, k0 + b_r + q * B_STEP, col0 + b_c)
            store4(sB, b_r + q * B_STEP, b_c, y0, y1, y2, y3)
        cuda.syncthreads()
        for k in range(BK):
            for i in static_range(TM):
                a[i] = sAT[k, t_row + i]
            for j in static_range(TN):
                c = col_of(j)
                b[j] = sB[k, c]
            for i in static_range(TM):
                for j in static_range(TN):
                    acc[i, j] += a[i] * b[j]
        cuda.syncthreads()
    for i in static_range(TM):
        row = row0 + t_row + i
        for j in static_range(TN):
            c = col_of(j)
            col = col0 + c
            if row < M and col < N:
                if beta == 0:
                    C[row, col] = alpha * acc[i, j]
                else:
                    C[row, col] = alpha * acc[i, j] + beta * C[row, col]
