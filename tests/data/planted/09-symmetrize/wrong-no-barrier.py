# expect: race | syncthreads
# A wrong result: no barrier between staging the tile and reading it.
import gemm_lessons  # noqa: F401  (first: it chooses the GPU, or numba's CUDA simulator)
import numpy as np
from numba import cuda, float32
from gemm_lessons.teaching import exercises

TILE, ROWS = 32, 8  # the check launches ceil(n/32) x ceil(n/32) blocks of 32 x 8 threads
# numba needs a shared array's shape as constants (numbers or globals like TILE, not an
# expression such as TILE + 1, which the simulator accepts but a GPU compile rejects)


@cuda.jit
def symmetrize(src, dst):
    tile = cuda.shared.array((TILE, 33), float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    r0 = cuda.blockIdx.y * TILE
    c0 = cuda.blockIdx.x * TILE
    n = src.shape[0]
    for j in range(0, TILE, ROWS):
        r, c = c0 + ty + j, r0 + tx
        if r < n and c < n:
            tile[ty + j, tx] = src[r, c]
    for j in range(0, TILE, ROWS):
        r, c = r0 + ty + j, c0 + tx
        if r < n and c < n:
            dst[r, c] = src[r, c] + tile[tx, ty + j]
