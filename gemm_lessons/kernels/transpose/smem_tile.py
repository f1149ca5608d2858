"""Lesson 09: transpose through a shared-memory tile, with or without padding."""
import functools

from numba import cuda, float32

from gemm_lessons.core.array_checks import transpose_shapes

# lesson-cell: begin
def make_transpose_tile(TILE=32, ROWS=32, PAD=0):
    """A TILE x TILE tile per block, TILE x ROWS threads (each moves TILE/ROWS elements).
    PAD extra columns shift each tile row by PAD banks: with PAD=1 a column of the tile
    falls into 32 different banks instead of one."""
    WIDTH = TILE + PAD  # a shared-array shape must be a constant: computed here, not inside

    @cuda.jit
    def transpose_tile(src, dst):
        tile = cuda.shared.array((TILE, WIDTH), float32)
        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y
        r0 = cuda.blockIdx.y * TILE
        c0 = cuda.blockIdx.x * TILE
        rows, cols = src.shape
        for j in range(0, TILE, ROWS):  # read rows of src: coalesced
            r, c = r0 + ty + j, c0 + tx
            if r < rows and c < cols:
                tile[ty + j, tx] = src[r, c]
        cuda.syncthreads()
        for j in range(0, TILE, ROWS):  # write rows of dst: coalesced; read a tile COLUMN
            r, c = c0 + ty + j, r0 + tx  # dst is cols x rows
            if r < cols and c < rows:
                dst[r, c] = tile[tx, ty + j]

    transpose_tile.block = (TILE, ROWS)
    transpose_tile.tile = TILE
    return transpose_tile
# lesson-cell: end


@functools.lru_cache(maxsize=None)
def kernel_for(TILE=32, ROWS=32, PAD=0):
    return make_transpose_tile(TILE, ROWS, PAD)


def transpose(src, dst, kernel=None, TILE=32, ROWS=32, PAD=0):
    rows, cols = transpose_shapes(src, dst)
    kernel = kernel or kernel_for(TILE, ROWS, PAD)
    T = kernel.tile
    kernel[((cols + T - 1) // T, (rows + T - 1) // T), kernel.block](src, dst)
