"""Lesson 09: naive transpose: coalesced reads, strided writes."""
from numba import cuda

from gemm_lessons.core.array_checks import transpose_shapes

# lesson-cell: begin
@cuda.jit
def transpose_naive(src, dst):
    # threadIdx.x walks the columns of src: a warp reads 128 contiguous bytes of a row,
    # but writes 32 floats that are a whole dst row apart: 32 sectors for 128 bytes
    c = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    r = cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y
    rows, cols = src.shape
    if r < rows and c < cols:
        dst[c, r] = src[r, c]
# lesson-cell: end

BLOCK = (32, 8)


def transpose(src, dst, kernel=transpose_naive):
    rows, cols = transpose_shapes(src, dst)
    grid = ((cols + BLOCK[0] - 1) // BLOCK[0], (rows + BLOCK[1] - 1) // BLOCK[1])
    kernel[grid, BLOCK](src, dst)
