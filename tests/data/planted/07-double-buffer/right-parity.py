# A right answer: one slice per trip, the buffer chosen by the slice's parity.
import gemm_lessons  # noqa: F401  (first: it chooses the GPU, or numba's CUDA simulator)
import numpy as np
from numba import cuda, float32
from gemm_lessons.teaching import exercises
from gemm_lessons.core.float4 import load4, store4
from gemm_lessons.core.unroll import static_range, unrolled

BM, BN, BK, TM, TN = 64, 64, 8, 8, 8  # the check launches ceil(N/64) x ceil(M/64) blocks of 64 threads
THREADS = (BM // TM) * (BN // TN)     # 64
A_LOADS = BM * BK // 4 // THREADS     # 2 float4s of A per thread per slice, A_STEP rows apart
A_STEP = THREADS // (BK // 4)
B_LOADS = BK * BN // 4 // THREADS     # 2 float4s of B, B_STEP rows apart
B_STEP = THREADS // (BN // 4)
A_ROW = BM + 4                        # padded rows of the transposed A tile (exercise 06)


@cuda.jit
@unrolled
def sgemm_ex07(A, B, C, alpha, beta):
    sAT0 = cuda.shared.array((BK, A_ROW), float32)  # buffer 0
    sB0 = cuda.shared.array((BK, BN), float32)
    sAT1 = cuda.shared.array((BK, A_ROW), float32)  # buffer 1
    sB1 = cuda.shared.array((BK, BN), float32)
    tid = cuda.threadIdx.x
    row0 = cuda.blockIdx.y * BM
    col0 = cuda.blockIdx.x * BN
    M, K = A.shape
    N = B.shape[1]
    tc = tid % (BN // TN)
    t_row = (tid // (BN // TN)) * TM
    a_r = tid // (BK // 4)
    a_c = (tid % (BK // 4)) * 4
    b_r = tid // (BN // 4)
    b_c = (tid % (BN // 4)) * 4
    acc = cuda.local.array((TM, TN), float32)
    a = cuda.local.array(TM, float32)
    b = cuda.local.array(TN, float32)
    xa = cuda.local.array((A_LOADS, 4), float32)  # a slice on its way from global to shared memory
    xb = cuda.local.array((B_LOADS, 4), float32)
    for i in static_range(TM):
        for j in static_range(TN):
            acc[i, j] = np.float32(0.0)

    def col_of(j):  # exercise 06's split: 4 columns in each half of the tile
        return tc * 4 + j % 4 + j // 4 * (BN // 2)

    def load_slice(k0):  # global -> registers (zeros outside A and B)
        for p in static_range(A_LOADS):
            xa[p, 0] = xa[p, 1] = xa[p, 2] = xa[p, 3] = np.float32(0.0)
            if (row0 + a_r + p * A_STEP < M) & (k0 + a_c < K):  # `&`, not `and`: one condition, no branch
                xa[p, 0], xa[p, 1], xa[p, 2], xa[p, 3] = load4(A, row0 + a_r + p * A_STEP, k0 + a_c)
        for q in static_range(B_LOADS):
            xb[q, 0] = xb[q, 1] = xb[q, 2] = xb[q, 3] = np.float32(0.0)
            if (k0 + b_r + q * B_STEP < K) & (col0 + b_c < N):
                xb[q, 0], xb[q, 1], xb[q, 2], xb[q, 3] = load4(B, k0 + b_r + q * B_STEP, col0 + b_c)

    def store_slice(sA, sB):  # registers -> one buffer
        for p in static_range(A_LOADS):
            for d in static_range(4):
                sA[a_c + d, a_r + p * A_STEP] = xa[p, d]
        for q in static_range(B_LOADS):
            store4(sB, b_r + q * B_STEP, b_c, xb[q, 0], xb[q, 1], xb[q, 2], xb[q, 3])

    def compute(sA, sB):  # the BK k-steps of one slice, from one buffer
        for k in static_range(BK):
            for i in static_range(TM):
                a[i] = sA[k, t_row + i]
            for j in static_range(TN):
                c = col_of(j)
                b[j] = sB[k, c]
            for i in static_range(TM):
                for j in static_range(TN):
                    acc[i, j] += a[i] * b[j]

    load_slice(0)
    store_slice(sAT0, sB0)
    cuda.syncthreads()
    for k0 in range(0, K, BK):
        load_slice(k0 + BK)  # in flight during the compute
        if (k0 // BK) % 2 == 0:
            compute(sAT0, sB0)
            store_slice(sAT1, sB1)
        else:
            compute(sAT1, sB1)
            store_slice(sAT0, sB0)
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
