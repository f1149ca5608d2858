"""A transpose for even sides: every load and store 8 bytes wide.

`wide` (lesson 09) moves 16 bytes at a time, so both row lengths must be multiples of 4. Where
both are even but one is not a multiple of 4 (8192 x 8190), every row still starts on an 8-byte
boundary, so the same tile moves two neighbours per access: a warp reads 32 float2s, 256
neighbouring bytes of one src row, and writes 256 neighbouring bytes of one dst row. No float is
written alone and no tile is read twice, where `aligned_stores` (16-byte accesses on the arrays
seen flat) stages 3 extra src rows per tile and writes the ends of dst rows a float at a time.
library.transpose uses it where rows % 4 == 0 and cols % 4 == 2: where dst's rows start off 16
bytes (rows % 4 == 2) it was slower than aligned_stores (experiments/transpose_pairs/).

Shared memory: lane tx writes tile[t, 2tx] and reads tile[2tx, j]; with rows TILE + 1 floats
apart both are 2-way bank conflicts (lanes tx and tx + 16 share a bank), as in `wide`.
"""
import functools

from numba import cuda, float32

from gemm_lessons.core.array_checks import transpose_shapes
from gemm_lessons.core.float4 import load2, require_aligned_bases, store2


def make_transpose_pairs(TILE=64, ROWS=16, PAD=1):
    """TILE/2 x ROWS threads move a TILE x TILE tile, two neighbours of a row per access."""
    if TILE % 2 or TILE % ROWS:
        raise ValueError(f"pairs needs TILE even and a multiple of ROWS: got TILE={TILE}, ROWS={ROWS}.")
    WIDTH = TILE + PAD
    T2 = TILE // 2  # threads spanning one tile row, two floats each
    STEPS = TILE // ROWS  # rows per thread

    @cuda.jit
    def transpose_pairs(src, dst):
        tile = cuda.shared.array((TILE, WIDTH), float32)
        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y
        r0 = cuda.blockIdx.y * TILE
        c0 = cuda.blockIdx.x * TILE
        rows, cols = src.shape
        c = c0 + 2 * tx  # cols is even: a pair is all in or all out
        for p in range(STEPS):
            t = ty + p * ROWS
            if (r0 + t < rows) & (c < cols):
                v0, v1 = load2(src, r0 + t, c)
                tile[t, 2 * tx] = v0
                tile[t, 2 * tx + 1] = v1
        cuda.syncthreads()
        d = r0 + 2 * tx  # dst row c0 + j holds column c0 + j of src; rows is even
        for p in range(STEPS):
            j = ty + p * ROWS
            if (c0 + j < cols) & (d < rows):
                store2(dst, c0 + j, d, tile[2 * tx, j], tile[2 * tx + 1, j])

    transpose_pairs.tile = TILE
    transpose_pairs.block = (T2, ROWS)
    return transpose_pairs


@functools.lru_cache(maxsize=None)
def kernel_for(TILE=64, ROWS=16, PAD=1):
    return make_transpose_pairs(TILE, ROWS, PAD)


def require_pairs(src, dst):
    """ValueError unless both sides are even and both arrays start on an 8-byte boundary (then
    every row of both does)."""
    rows, cols = transpose_shapes(src, dst)
    if rows % 2 or cols % 2:
        raise ValueError(f"pairs moves 2 floats (8 bytes) at a time, so both sides must be even: src is {rows} x {cols}.")
    require_aligned_bases(("src", src), ("dst", dst), boundary=8)
    return rows, cols


def transpose(src, dst, TILE=64, ROWS=16, kernel=None):
    """dst = src.T for float32, C-contiguous device arrays src (rows x cols) and dst (cols x rows),
    rows and cols even, both starting on 8-byte boundaries."""
    rows, cols = require_pairs(src, dst)
    kernel = kernel or kernel_for(TILE, ROWS)
    T = kernel.tile
    grid = ((cols + T - 1) // T, (rows + T - 1) // T)
    if grid[1] > 65535:
        raise ValueError(f"src has {rows} rows: at most {65535 * T} fit one launch's grid (gridDim.y <= 65535).")
    kernel[grid, kernel.block](src, dst)
