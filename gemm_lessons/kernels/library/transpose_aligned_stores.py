"""A transpose for every shape whose stores are all 16 bytes wide, but at the two ends of each dst row.

`any_wide.py` loads aligned float4 "slots" for every shape (the arrays seen flat), but it cuts
dst the way the tiles cut src: block (bx, by) owns floats r0 .. r0 + 63 of each of its dst rows.
Where rows % 4 != 0 that segment starts off a 16-byte boundary, so both of its ends share a
float4 with the neighbouring block's segment and are written one float at a time, in a branch
that one or two lanes of every warp take while the rest wait.

Here the blocks cut each dst row at 16-byte boundaries instead.  Row c of dst starts at flat
index c * rows; let d = (c * rows) % 4.  Block by owns the floats of that row with

    r0 - d <= r < r0 + 64 - d        (r: the column in dst, i.e. the row of src)

whose flat indices c * rows + r0 - d + 4k are multiples of 4: 16 whole float4s, none shared with
another block.  Only the first block along a dst row (r0 = 0: the row's own start may be off a
boundary) and the last (the row's end) have up to 3 floats at an end to write alone.  The price:
a block needs src rows r0 - 3 .. r0 + 63, 3 more than its tile (read again by the block above,
mostly from L2), so it stages TILE + 3 rows.

The loads are any_wide's: 17 aligned slots per staging row, element c of src row sr staged at
stage[t, shift + c], shift = (sr * cols + c0) % 4.  When rows and cols are multiples of 4 every
d and shift is 0 and this moves exactly what `wide` moves, plus the 3 extra rows.
"""
import functools

from numba import boolean, cuda, float32, int32, int64

from gemm_lessons.core.array_checks import transpose_shapes
from gemm_lessons.core.jit import jit
from gemm_lessons.core.float4 import load1_flat, load4_flat, require_aligned_bases, store1_flat, store4_flat
from gemm_lessons.core.unroll import static, static_range, unrolled
from gemm_lessons.kernels.library.transpose_any_wide import staging_width

HALO = 3  # src rows above the tile a block may need: d is at most 3


def make_transpose_aligned_stores(TILE=64, ROWS=16, WIDTH=None, MAX_REGISTERS=None):
    """TILE/4 x ROWS threads; a block stages TILE + 3 rows of src and writes TILE dst rows.
    WIDTH: floats per staging row (any_wide.staging_width(TILE, rows, cols) picks it per shape;
    the same choice keeps the two half-warps of a store on different banks here, since the
    block's offset d changes by rows % 4 from one dst row to the next, as any_wide's shift does)."""
    if TILE % 4 or TILE % ROWS or ROWS < 4 or (TILE // 4) * ROWS < TILE + HALO:
        raise ValueError(f"aligned_stores needs TILE a multiple of 4 and of ROWS, ROWS >= 4, and at least "
                         f"TILE + 3 threads (one extra slot per staging row): got TILE={TILE}, ROWS={ROWS}.")
    WIDTH = WIDTH or staging_width(TILE)
    if WIDTH < TILE + 4:
        raise ValueError(f"WIDTH={WIDTH}: a staging row needs TILE + 4 = {TILE + 4} floats (TILE/4 + 1 float4s).")
    T4 = TILE // 4  # slots per row; slot T4 (the 17th for TILE=64) is the extra one
    STAGED = TILE + HALO  # staging rows: src rows r0 - 3 .. r0 + TILE - 1
    LOADS = -(-STAGED // ROWS)  # staging rows per thread in its own slot column tx
    STORES = TILE // ROWS  # dst rows per thread

    @jit(max_registers=MAX_REGISTERS)
    @unrolled
    def transpose_aligned_stores(src, dst):
        stage = cuda.shared.array((STAGED, WIDTH), float32)
        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y
        tid = ty * T4 + tx
        r0 = cuda.blockIdx.y * TILE
        c0 = cuda.blockIdx.x * TILE
        rows, cols = src.shape
        total = rows * cols
        m = min(TILE, cols - c0)  # valid columns of this tile (src), i.e. dst rows of this block

        # Load: slot p of this thread is slot k (tx; the extra one: T4) of staging row t, which
        # holds src row r0 - 3 + t; registers first, so that every load is issued before the
        # first one is waited for (as in any_wide).
        t = cuda.local.array(LOADS + 1, int32)
        at = cuda.local.array(LOADS + 1, int64)
        want = cuda.local.array(LOADS + 1, boolean)
        x = cuda.local.array((LOADS + 1, 4), float32)
        for p in static_range(LOADS + 1):
            t[p] = ty + p * ROWS if static(p < LOADS) else tid
            k = tx if static(p < LOADS) else T4
            sr = r0 - HALO + t[p]
            s = sr * cols + c0
            shift = s & 3
            at[p] = s - shift + 4 * k
            want[p] = (t[p] < STAGED) & (sr >= 0) & (sr < rows) & (4 * k < shift + m)
            for e in static_range(4):
                x[p, e] = float32(0)
            if want[p] & (at[p] + 4 <= total):
                x[p, 0], x[p, 1], x[p, 2], x[p, 3] = load4_flat(src, at[p])
        for p in static_range(LOADS + 1):  # the array's last float4 runs past its end
            if want[p] & (at[p] + 4 > total):
                x[p, 0] = load1_flat(src, at[p])
                if at[p] + 1 < total:
                    x[p, 1] = load1_flat(src, at[p] + 1)
                if at[p] + 2 < total:
                    x[p, 2] = load1_flat(src, at[p] + 2)
        for p in static_range(LOADS + 1):
            if want[p]:
                k = tx if static(p < LOADS) else T4
                for e in static_range(4):
                    stage[t[p], 4 * k + e] = x[p, e]
        cuda.syncthreads()

        # Store: dst row c0 + j, slot k: the float4 at flat index (c0 + j) * rows + r0 - d + 4k,
        # d = ((c0 + j) * rows) % 4, holding dst columns (src rows) r = r0 - d + 4k + e, staged
        # in row r - (r0 - 3) with shift (b3 + that row * cols) % 4.
        b3 = ((r0 - HALO) * cols + c0) & 3
        c3 = cols & 3
        last = r0 + TILE >= rows  # the last block along a dst row also owns its end
        for p in static_range(STORES + 1):
            j = ty + p * ROWS if static(p < STORES) else tid
            k = tx if static(p < STORES) else T4
            if j < m:  # (the extra slot's j is tid: j < m <= TILE leaves its first TILE threads)
                base = (c0 + j) * rows
                d = base & 3
                lo = max(r0 - d, 0)  # the dst row's own start, off a boundary, in the first block
                hi = rows if last else r0 + TILE - d
                r = r0 - d + 4 * k  # dst column of the slot's first float
                q = HALO - d + 4 * k  # ... and its staging row
                if (r >= lo) & (r + 4 <= hi):  # the common case: one 16-byte store
                    store4_flat(dst, base + r,
                                stage[q, ((b3 + q * c3) & 3) + j],
                                stage[q + 1, ((b3 + (q + 1) * c3) & 3) + j],
                                stage[q + 2, ((b3 + (q + 2) * c3) & 3) + j],
                                stage[q + 3, ((b3 + (q + 3) * c3) & 3) + j])
                else:  # an end of the dst row: the floats of it that exist, one at a time
                    for e in static_range(4):
                        if (r + e >= lo) & (r + e < hi):
                            store1_flat(dst, base + r + e, stage[q + e, ((b3 + (q + e) * c3) & 3) + j])

    transpose_aligned_stores.tile = TILE
    transpose_aligned_stores.block = (T4, ROWS)
    return transpose_aligned_stores


@functools.lru_cache(maxsize=None)
def kernel_for(TILE=64, ROWS=16, WIDTH=None, MAX_REGISTERS=None):
    return make_transpose_aligned_stores(TILE, ROWS, WIDTH, MAX_REGISTERS)


def transpose(src, dst, TILE=64, ROWS=16, kernel=None, MAX_REGISTERS=None):
    """dst = src.T for float32, C-contiguous device arrays src (rows x cols) and dst (cols x rows),
    any rows, cols >= 1, both starting on 16-byte boundaries."""
    rows, cols = transpose_shapes(src, dst)
    require_aligned_bases(("src", src), ("dst", dst))
    kernel = kernel or kernel_for(TILE, ROWS, staging_width(TILE, rows, cols), MAX_REGISTERS)
    T = kernel.tile
    grid = ((cols + T - 1) // T, (rows + T - 1) // T)
    if grid[1] > 65535:
        raise ValueError(f"src has {rows} rows: at most {65535 * T} fit one launch's grid (gridDim.y <= 65535).")
    kernel[grid, kernel.block](src, dst)
