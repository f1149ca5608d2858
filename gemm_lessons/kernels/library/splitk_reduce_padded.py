"""Split-K's second kernel for the padded plan: the parts 16 bytes at a time, C one float at a time.

The padded plan's split kernel writes its partial sums into a workspace W whose rows are N4
floats (N rounded up to a multiple of 4; C-contiguous, 16-byte aligned), so W can be read as
splitk_reduce_wide.py reads it: each thread adds four neighbouring columns of every part with
16-byte loads.  C itself is N floats wide and may be strided, so its (up to) four values are
written one float at a time, as splitk_reduce.py writes them; W's padded columns are read and
dropped.  Near 1000 (999x1001x1003, split 4, an H200 under Nsight Compute) this kernel takes
7.9-8.1 µs where the one-float reduction took 16.3-16.6, the largest part of the padded plan's
time after its product (experiments/shape_classes/near_1000_probe.py).  The same order of the sums (part 0 first) and
the same expression for C as splitk_reduce.py: the same bits when beta is 0, one rounding apart
at most with beta (tests/library/test_device_arrays.py).
"""
from numba import cuda

from gemm_lessons.core.float4 import load4

THREADS = 128  # per block, each thread four columns of a row of W


@cuda.jit
def sgemm_splitk_reduce_padded(W, C, alpha, beta):
    M, N = C.shape
    splits = W.shape[0] // M
    col = (cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x) * 4
    if col >= N:
        return
    for row in range(cuda.blockIdx.y, M, cuda.gridDim.y):
        t0, t1, t2, t3 = load4(W, row, col)
        for s in range(1, splits):
            v0, v1, v2, v3 = load4(W, s * M + row, col)
            t0 += v0
            t1 += v1
            t2 += v2
            t3 += v3
        if beta == 0:  # C is not read (it may hold anything, NaN included)
            C[row, col] = alpha * t0
            if col + 1 < N:
                C[row, col + 1] = alpha * t1
            if col + 2 < N:
                C[row, col + 2] = alpha * t2
            if col + 3 < N:
                C[row, col + 3] = alpha * t3
        else:
            C[row, col] = alpha * t0 + beta * C[row, col]
            if col + 1 < N:
                C[row, col + 1] = alpha * t1 + beta * C[row, col + 1]
            if col + 2 < N:
                C[row, col + 2] = alpha * t2 + beta * C[row, col + 2]
            if col + 3 < N:
                C[row, col + 3] = alpha * t3 + beta * C[row, col + 3]


def grid(M, N):
    """The launch's blocks for an M x N C (W's rows are N rounded up to 4 floats)."""
    return ((N + 3) // 4 + THREADS - 1) // THREADS, min(M, 65535)
