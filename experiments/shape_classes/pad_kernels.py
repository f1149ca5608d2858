"""The padded plan's first copy kernel, kept to compare (the library's, kernels/library/pad_copy.py,
writes four floats per thread with one 16-byte store): one float per thread, read and written.
On an H200 it copied at 1.3 TB/s where the four-float copy reached 3.6-4.1 TB/s
(padded-parts-probe-nvidia-h200.json, commit ddaf3af, where the four-float form was this folder's
candidate ``pad_copy4``).  One thread per element of ``dst``: consecutive threads take consecutive
columns, the grid's y covers rows, a grid-stride loop the rows past 65535.
"""
import numpy as np
from numba import cuda

THREADS = 128


@cuda.jit
def pad_copy1(src, dst):
    rows, cols = src.shape
    col = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if col >= dst.shape[1]:
        return
    for row in range(cuda.blockIdx.y, dst.shape[0], cuda.gridDim.y):
        if row < rows and col < cols:
            dst[row, col] = src[row, col]
        else:
            dst[row, col] = np.float32(0.0)


def grid(rows, cols):
    return (cols + THREADS - 1) // THREADS, min(rows, 65535)
