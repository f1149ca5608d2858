"""Lesson 09: 64x64 tiles moved 16 bytes at a time (LDG.128 in, STG.128 out)."""
import functools

from numba import cuda, float32

from ..arrays import transpose_shapes
from ..sgemm.wide import load4, require_wide_alignment, store4

# lesson-cell: begin
def make_transpose_wide(TILE=64, PAD=1):
    """16 x 16 threads move a 64 x 64 tile: each thread reads four float4 along src rows and
    writes four float4 along dst rows, gathering them from a column of the shared tile."""
    WIDTH = TILE + PAD
    T4 = TILE // 4  # 16 threads span one tile row in float4s
    STEPS = TILE // T4  # 4 rows per thread

    @cuda.jit
    def transpose_wide(src, dst):
        tile = cuda.shared.array((TILE, WIDTH), float32)
        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y
        r0 = cuda.blockIdx.y * TILE
        c0 = cuda.blockIdx.x * TILE
        rows, cols = src.shape
        for p in range(STEPS):
            r, c = r0 + ty + p * T4, c0 + 4 * tx
            if r < rows and c < cols:  # cols % 4 == 0: a float4 is all in or all out
                v0, v1, v2, v3 = load4(src, r, c)
                tile[ty + p * T4, 4 * tx] = v0
                tile[ty + p * T4, 4 * tx + 1] = v1
                tile[ty + p * T4, 4 * tx + 2] = v2
                tile[ty + p * T4, 4 * tx + 3] = v3
        cuda.syncthreads()
        for p in range(STEPS):
            r, c = c0 + ty + p * T4, r0 + 4 * tx  # dst is cols x rows
            if r < cols and c < rows:
                j = ty + p * T4
                store4(dst, r, c, tile[4 * tx, j], tile[4 * tx + 1, j], tile[4 * tx + 2, j], tile[4 * tx + 3, j])

    transpose_wide.tile = TILE
    transpose_wide.block = (T4, T4)
    return transpose_wide
# lesson-cell: end


@functools.lru_cache(maxsize=None)
def kernel_for(TILE=64, PAD=1):
    return make_transpose_wide(TILE, PAD)


def transpose(src, dst, kernel=None):
    rows, cols = transpose_shapes(src, dst)
    require_wide_alignment(("src", src), ("dst", dst))
    kernel = kernel or kernel_for()
    T = kernel.tile
    kernel[((cols + T - 1) // T, (rows + T - 1) // T), kernel.block](src, dst)
