"""Lesson 09: 64x64 tiles moved 16 bytes at a time (LDG.128 in, STG.128 out)."""
import functools

from numba import cuda, float32

from gemm_lessons.core.array_checks import transpose_shapes
from gemm_lessons.core.float4 import load4, require_wide_alignment, store4

# lesson-cell: begin
def make_transpose_wide(TILE=64, ROWS=16, PAD=1, DIAGONAL=False):
    """TILE/4 x ROWS threads move a TILE x TILE tile: each thread reads float4s along src rows
    and writes float4s along dst rows, gathering each from a column of the shared tile.
    DIAGONAL visits the tiles in a skewed order, so that blocks running at the same time
    do not all read (or write) the same rows of memory."""
    WIDTH = TILE + PAD
    T4 = TILE // 4  # threads spanning one tile row in float4s
    STEPS = TILE // ROWS  # rows per thread

    @cuda.jit
    def transpose_wide(src, dst):
        tile = cuda.shared.array((TILE, WIDTH), float32)
        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y
        bx, by = cuda.blockIdx.x, cuda.blockIdx.y
        if DIAGONAL:  # a bijection of block indices: row of tiles by, skewed column
            gx, gy = cuda.gridDim.x, cuda.gridDim.y
            bid = bx + gx * by
            by = bid % gy
            bx = (bid // gy + by) % gx
        r0 = by * TILE
        c0 = bx * TILE
        rows, cols = src.shape
        for p in range(STEPS):
            r, c = r0 + ty + p * ROWS, c0 + 4 * tx
            if r < rows and c < cols:  # cols % 4 == 0: a float4 is all in or all out
                v0, v1, v2, v3 = load4(src, r, c)
                tile[ty + p * ROWS, 4 * tx] = v0
                tile[ty + p * ROWS, 4 * tx + 1] = v1
                tile[ty + p * ROWS, 4 * tx + 2] = v2
                tile[ty + p * ROWS, 4 * tx + 3] = v3
        cuda.syncthreads()
        for p in range(STEPS):
            r, c = c0 + ty + p * ROWS, r0 + 4 * tx  # dst is cols x rows
            if r < cols and c < rows:
                j = ty + p * ROWS
                store4(dst, r, c, tile[4 * tx, j], tile[4 * tx + 1, j], tile[4 * tx + 2, j], tile[4 * tx + 3, j])

    transpose_wide.tile = TILE
    transpose_wide.block = (T4, ROWS)
    return transpose_wide
# lesson-cell: end


@functools.lru_cache(maxsize=None)
def kernel_for(TILE=64, ROWS=16, PAD=1, DIAGONAL=False):
    return make_transpose_wide(TILE, ROWS, PAD, DIAGONAL)


def transpose(src, dst, kernel=None):
    rows, cols = transpose_shapes(src, dst)
    require_wide_alignment(("src", src), ("dst", dst))
    kernel = kernel or kernel_for()
    T = kernel.tile
    kernel[((cols + T - 1) // T, (rows + T - 1) // T), kernel.block](src, dst)
