# expect: matches the float64 reference | 16-byte | transposed tile
# The right result with the A tile not transposed: the k-step's loads of A are 4-byte, not 16-byte.
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


@cuda.jit
@unrolled
def sgemm_ex05(A, B, C, alpha, beta):
    sAT = cuda.shared.array((BM, BK), float32)  # the A tile, transposed: sAT[k, m]
    sB = cuda.shared.array((BK, BN), float32)
    tid = cuda.threadIdx.x
    row0 = cuda.blockIdx.y * BM
    col0 = cuda.blockIdx.x * BN
    M, K = A.shape
    N = B.shape[1]
    t_row = (tid // (BN // TN)) * TM  # this thread's 8x8 results: tile rows t_row.., columns t_col..
    t_col = (tid % (BN // TN)) * TN
    a_r = tid // (BK // 4)            # the float4s of A this thread stages: tile rows a_r + p * A_STEP,
    a_c = (tid % (BK // 4)) * 4       #   columns a_c..a_c+3 of the slice
    b_r = tid // (BN // 4)            # ... and of B: rows b_r + q * B_STEP, columns b_c..b_c+3
    b_c = (tid % (BN // 4)) * 4
    acc = cuda.local.array((TM, TN), float32)
    a = cuda.local.array(TM, float32)
    b = cuda.local.array(TN, float32)
    for i in static_range(TM):
        for j in static_range(TN):
            acc[i, j] = np.float32(0.0)
    for k0 in range(0, K, BK):
        for p in static_range(BM * BK // 4 // THREADS):  # 2 float4s of A per thread
            x0 = x1 = x2 = x3 = np.float32(0.0)
            if row0 + a_r + p * A_STEP < M and k0 + a_c < K:  # K % 4 == 0: a float4 is all in or all out
                x0, x1, x2, x3 = load4(A, row0 + a_r + p * A_STEP, k0 + a_c)
            sAT[a_r + p * A_STEP, a_c + 0] = x0  # NOT transposed: sAT[m, k]
            sAT[a_r + p * A_STEP, a_c + 1] = x1
            sAT[a_r + p * A_STEP, a_c + 2] = x2
            sAT[a_r + p * A_STEP, a_c + 3] = x3
        for q in static_range(BK * BN // 4 // THREADS):  # 2 float4s of B per thread
            y0 = y1 = y2 = y3 = np.float32(0.0)
            if k0 + b_r + q * B_STEP < K and col0 + b_c < N:
                y0, y1, y2, y3 = load4(B, k0 + b_r + q * B_STEP, col0 + b_c)
            store4(sB, b_r + q * B_STEP, b_c, y0, y1, y2, y3)  # store4 takes a shared array too (b_c % 4 == 0)
        cuda.syncthreads()
        for k in range(BK):
            for i in static_range(TM):  # A[row0 + t_row + i, k0 + k]
                a[i] = sAT[t_row + i, k]
            for j in static_range(TN):
                b[j] = sB[k, t_col + j]
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
