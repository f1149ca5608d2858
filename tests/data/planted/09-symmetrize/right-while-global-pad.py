# A right answer: a while loop for the staging, the padded width as a global.
import gemm_lessons  # noqa: F401  (first: it chooses the GPU, or numba's CUDA simulator)
import numpy as np
from numba import cuda, float32
from gemm_lessons.teaching import exercises

TILE, ROWS = 32, 8
PADDED = TILE + 1  # a global: a constant for numba
# numba needs a shared array's shape as constants (numbers or globals like TILE, not an
# expression such as TILE + 1, which the simulator accepts but a GPU compile rejects)


@cuda.jit
def symmetrize(src, dst):
    tile = cuda.shared.array((TILE, PADDED), float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    r0 = cuda.blockIdx.y * TILE
    c0 = cuda.blockIdx.x * TILE
    n = src.shape[0]
    j = ty
    while j < TILE:
        if c0 + j < n and r0 + tx < n:
            tile[j, tx] = src[c0 + j, r0 + tx]
        j += ROWS
    cuda.syncthreads()
    for j in range(0, TILE, ROWS):
        r, c = r0 + ty + j, c0 + tx
        if r < n and c < n:
            dst[r, c] = tile[tx, ty + j] + src[r, c]
