"""The library's transpose for every shape: lesson 09's `wide` kernel, with each side 16 bytes
wide only where that side's rows allow it.

`wide` reads float4s along rows of src and writes float4s along rows of dst, so both row
lengths must be multiples of 4 (a row must start on a 16-byte boundary). Here the two sides
are chosen separately, at compile time: WIDE_IN when src's rows allow 16-byte loads
(cols % 4 == 0), WIDE_OUT when dst's rows allow 16-byte stores (rows % 4 == 0). A side that
cannot be wide moves the same four neighbours as four 4-byte accesses, each guarded, so any
rows x cols works, and every shape keeps the tile, the padding and the thread layout of `wide`.
On a side that is not wide, neighbouring lanes take neighbouring columns (column c0 + tx + i*T4),
so that side's 4-byte accesses are coalesced: a thread taking four neighbours of its own, as a
float4 does, would make every 4-byte access of a warp touch twice the sectors.
"""
import functools

from numba import cuda, float32

from gemm_lessons.core.array_checks import transpose_shapes
from gemm_lessons.core.float4 import load4, store4


def make_transpose_any(TILE=64, ROWS=16, PAD=1, WIDE_IN=True, WIDE_OUT=True):
    """TILE/4 x ROWS threads move a TILE x TILE tile; each thread moves four elements of a
    row: four neighbours as one float4 where that side is wide, else four floats TILE/4 apart."""
    WIDTH = TILE + PAD
    T4 = TILE // 4  # threads spanning one tile row, four elements each
    STEPS = TILE // ROWS  # rows per thread

    @cuda.jit
    def transpose_any(src, dst):
        tile = cuda.shared.array((TILE, WIDTH), float32)
        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y
        r0 = cuda.blockIdx.y * TILE
        c0 = cuda.blockIdx.x * TILE
        rows, cols = src.shape
        for p in range(STEPS):
            t = ty + p * ROWS
            r = r0 + t
            if r < rows:
                if WIDE_IN:  # cols % 4 == 0: a float4 is all in or all out
                    c = c0 + 4 * tx
                    if c < cols:
                        v0, v1, v2, v3 = load4(src, r, c)
                        tile[t, 4 * tx] = v0
                        tile[t, 4 * tx + 1] = v1
                        tile[t, 4 * tx + 2] = v2
                        tile[t, 4 * tx + 3] = v3
                else:  # four 4-byte loads, neighbouring lanes on neighbouring columns: coalesced
                    for i in range(4):
                        c = c0 + tx + i * T4
                        if c < cols:
                            tile[t, tx + i * T4] = src[r, c]
        cuda.syncthreads()
        for p in range(STEPS):
            j = ty + p * ROWS
            r = c0 + j  # dst is cols x rows: its row r holds column r of src
            if r < cols:
                if WIDE_OUT:  # rows % 4 == 0
                    c = r0 + 4 * tx
                    if c < rows:
                        store4(dst, r, c, tile[4 * tx, j], tile[4 * tx + 1, j], tile[4 * tx + 2, j],
                               tile[4 * tx + 3, j])
                else:  # four 4-byte stores, neighbouring lanes on neighbouring columns
                    for i in range(4):
                        c = r0 + tx + i * T4
                        if c < rows:
                            dst[r, c] = tile[tx + i * T4, j]

    transpose_any.tile = TILE
    transpose_any.block = (T4, ROWS)
    return transpose_any


@functools.lru_cache(maxsize=None)
def kernel_for(TILE=64, ROWS=16, PAD=1, WIDE_IN=True, WIDE_OUT=True):
    return make_transpose_any(TILE, ROWS, PAD, WIDE_IN, WIDE_OUT)


def _aligned(a):
    from gemm_lessons.core import backend

    return backend.SIMULATOR or a.__cuda_array_interface__["data"][0] % 16 == 0


def sides(src, dst):
    """(WIDE_IN, WIDE_OUT) for these arrays: a side is wide when its rows start on 16-byte
    boundaries (row length a multiple of 4 floats, and the array itself 16-byte aligned)."""
    rows, cols = transpose_shapes(src, dst)
    return cols % 4 == 0 and _aligned(src), rows % 4 == 0 and _aligned(dst)


def transpose(src, dst, kernel=None, TILE=64, ROWS=16):
    rows, cols = transpose_shapes(src, dst)
    if kernel is None:
        wide_in, wide_out = sides(src, dst)
        kernel = kernel_for(TILE, ROWS, 1, wide_in, wide_out)
    T = kernel.tile
    kernel[((cols + T - 1) // T, (rows + T - 1) // T), kernel.block](src, dst)
