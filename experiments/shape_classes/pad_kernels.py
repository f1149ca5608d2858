"""The padded plan's first copy kernel, kept to compare (the library's, kernels/library/pad_copy.py,
writes four floats per thread with one 16-byte store): one float per thread, read and written.
On an H200 it copied at 1.3 TB/s where the four-float copy reached 3.6-4.1 TB/s
(padded-parts-probe-nvidia-h200.json, commit ddaf3af, where the four-float form was this folder's
candidate ``pad_copy4``).  One thread per element of ``dst``: consecutive threads take consecutive
columns, the grid's y covers rows, a grid-stride loop the rows past 65535.

``pad_copy_pair`` (near_1000_probe.py) does the library's two copies, A's and B's, in one launch:
the grid's z picks the pair, so the padded plan near 1000 has three launches instead of four.
"""
import numpy as np
from numba import cuda

from gemm_lessons.kernels.library import pad_copy

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


@cuda.jit
def pad_copy_pair(src0, dst0, src1, dst1):
    """pad_copy (kernels/library/pad_copy.py) of src0 into dst0 (blockIdx.z 0) and of src1 into
    dst1 (blockIdx.z 1), four floats per thread, one 16-byte store each."""
    if cuda.blockIdx.z == 0:
        _copy4(src0, dst0)
    else:
        _copy4(src1, dst1)


_copy4 = cuda.jit(device=True)(pad_copy.pad_copy.py_func)


def pair_grid(shape0, shape1):
    """The launch's blocks for dst shapes shape0 and shape1 (columns multiples of 4): the larger of
    pad_copy.grid's two, z = 2."""
    (x0, y0), (x1, y1) = pad_copy.grid(*shape0), pad_copy.grid(*shape1)
    return max(x0, x1), max(y0, y1), 2
