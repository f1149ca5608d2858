"""Split-K's second kernel, 16 bytes at a time, for the wide kernel's plans.

splitk_reduce.py adds the parts one float per thread, which any C allows.  Where the wide
kernel ran, C is C-contiguous and 16-byte aligned and N a multiple of 4, so each thread here
adds four neighbouring columns with 16-byte loads and stores (float4.py): a quarter of the
threads and of the load and store instructions for the same bytes.  Under Nsight Compute at
1024^3 (experiments/ncu_vs_cublas/) the one-float kernel took a quarter of gl.sgemm's time on
the GPU, next to the product's kernel.  Same order of the sums (part 0 first) as
splitk_reduce.py: the same bits when beta is 0; with beta, the compiler may fuse alpha * total +
beta * C into one FMA differently in the two kernels, a difference of one rounding
(tests/library/test_device_arrays.py).  Either kernel gives the same bits on every call.
"""
from numba import cuda

from gemm_lessons.core.float4 import load4, store4

THREADS = 128  # per block, each thread four columns of a row of C


@cuda.jit
def sgemm_splitk_reduce_wide(W, C, alpha, beta):
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
            store4(C, row, col, alpha * t0, alpha * t1, alpha * t2, alpha * t3)
        else:
            o0, o1, o2, o3 = load4(C, row, col)
            store4(C, row, col, alpha * t0 + beta * o0, alpha * t1 + beta * o1,
                   alpha * t2 + beta * o2, alpha * t3 + beta * o3)


def grid(M, N):
    return (N // 4 + THREADS - 1) // THREADS, min(M, 65535)
