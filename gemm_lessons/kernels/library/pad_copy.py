"""gl.sgemm's padded plan: copy a matrix into a larger one, zeros around it.

The wide kernel (warptile.py) moves 16 bytes at a time, so it needs K and N multiples of 4,
C-contiguous arrays and 16-byte-aligned data.  For a large product whose shape or arrays do not
allow that, the library copies B, and A where its rows cannot take 16-byte loads, into
zero-padded workspaces whose sides are multiples of 4 (K4 x N4 and M x K4, K4 and N4 rounded up),
and runs the wide kernel from them straight into C (warptile's ragged_c writes C one float at a
time).  The zeros add nothing to the product: a padded column of A meets a padded row of B.  The
copies move 2 x K*N floats (and 2 x M*K with A) more than the product itself, which pays where
the product is large: the dispatch model (gemm_lessons.library.dispatch) charges their bytes at
the measured copy bandwidth against the slower any-shape kernel.

Each thread makes four neighbouring floats of a row of ``dst``: it reads them one at a time (a
source row need not start on a 16-byte boundary, nor be contiguous) and writes them with one
16-byte store (a destination row is a multiple of 4 floats long, in an aligned workspace).  On
an H200 that copies at 3.6-4.1 TB/s, a float4 copy's rate, where one float per thread, read and
written, reached 1.3 TB/s (experiments/shape_classes, the padded-parts probe).  Consecutive
threads take consecutive groups of four (coalesced), the grid's y covers rows, a grid-stride loop
the rows past 65535.  Every element of dst is written on every call, so a reused workspace needs
no clearing.
"""
import numpy as np
from numba import cuda

from gemm_lessons.core.float4 import load1, store4

THREADS = 128  # per block, four floats of a row of dst each


# lesson-cell: begin
@cuda.jit
def pad_copy(src, dst):
    rows, cols = src.shape
    col = 4 * (cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x)  # dst's columns col .. col + 3
    if col >= dst.shape[1]:
        return
    for row in range(cuda.blockIdx.y, dst.shape[0], cuda.gridDim.y):
        v0 = v1 = v2 = v3 = np.float32(0.0)  # zeros outside the source
        if row < rows:
            if col < cols:
                v0 = load1(src, row, col)
            if col + 1 < cols:
                v1 = load1(src, row, col + 1)
            if col + 2 < cols:
                v2 = load1(src, row, col + 2)
            if col + 3 < cols:
                v3 = load1(src, row, col + 3)
        store4(dst, row, col, v0, v1, v2, v3)  # one 16-byte store
# lesson-cell: end


def grid(rows, cols):
    """The launch's blocks for a rows x cols dst (cols a multiple of 4)."""
    if cols % 4:
        raise ValueError(f"pad_copy writes rows of 4-float groups: dst has {cols} columns, not a multiple of 4")
    return (cols // 4 + THREADS - 1) // THREADS, min(rows, 65535)
