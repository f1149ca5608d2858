"""gl.sgemm's padded plan: copy a matrix into a larger one, zeros around it.

The wide kernel (warptile.py) moves 16 bytes at a time, so it needs K and N multiples of 4,
C-contiguous arrays and 16-byte-aligned data.  For a large product whose shape or arrays do not
allow that, the library copies B, and A where its rows cannot take 16-byte loads, into
zero-padded workspaces whose sides are multiples of 4 (K4 x N4 and M x K4, K4 and N4 rounded up),
and runs the wide kernel from them straight into C (warptile's ragged_c writes C one float at a
time).  The zeros add nothing to the product: a padded column of A meets a padded row of B.  The
copies move 2 x K*N floats (and 2 x M*K with A) more than the product itself, which pays where
the product is large: the dispatch model (gemm_lessons.library.dispatch) charges their bytes at
the measured copy bandwidth against the slower any-shape kernel.  This kernel moves one float per
thread: at 4096 x 50257 x 768 Nsight Compute timed B's copy at about 1.3 TB/s, a third of the
float4 copy's rate the model charges (experiments/shape_classes).

One thread per element of ``dst``: consecutive threads take consecutive columns (coalesced
reads and writes), the grid's y covers rows, a grid-stride loop the rows past 65535.  Every
element of dst is written on every call, so a reused workspace needs no clearing.
"""
import numpy as np
from numba import cuda

THREADS = 128  # per block, along a row of dst


# lesson-cell: begin
@cuda.jit
def pad_copy(src, dst):
    rows, cols = src.shape
    col = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if col >= dst.shape[1]:
        return
    for row in range(cuda.blockIdx.y, dst.shape[0], cuda.gridDim.y):
        if row < rows and col < cols:
            dst[row, col] = src[row, col]
        else:
            dst[row, col] = np.float32(0.0)
# lesson-cell: end


def grid(rows, cols):
    """The launch's blocks for a rows x cols dst."""
    return (cols + THREADS - 1) // THREADS, min(rows, 65535)
