"""A candidate for the padded plan's copy (kernels/library/pad_copy.py moves one float per thread):
four neighbouring floats of a destination row per thread, read one at a time (a source row need
not start on a 16-byte boundary) and written with one 16-byte store (a destination row is a
multiple of 4 floats long, in a fresh, aligned workspace).  A block loops over rows with the
grid's y as its stride, so the launch chooses how many rows each block copies.
"""
import numpy as np
from numba import cuda

from gemm_lessons.core.float4 import load1, store4

THREADS = 128


@cuda.jit
def pad_copy4(src, dst):
    rows, cols = src.shape
    col = 4 * (cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x)
    if col >= dst.shape[1]:
        return
    for row in range(cuda.blockIdx.y, dst.shape[0], cuda.gridDim.y):
        v0 = v1 = v2 = v3 = np.float32(0.0)
        if row < rows:
            if col < cols:
                v0 = load1(src, row, col)
            if col + 1 < cols:
                v1 = load1(src, row, col + 1)
            if col + 2 < cols:
                v2 = load1(src, row, col + 2)
            if col + 3 < cols:
                v3 = load1(src, row, col + 3)
        store4(dst, row, col, v0, v1, v2, v3)


def grid(rows, cols4, rows_per_block=1):
    """Blocks for a rows x cols4 dst, each block copying ``rows_per_block`` rows (about)."""
    return (cols4 // 4 + THREADS - 1) // THREADS, min(65535, (rows + rows_per_block - 1) // rows_per_block)
