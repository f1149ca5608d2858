"""A transpose that moves 16 bytes at a time for EVERY shape, not only where rows are multiples of 4.

Lesson 09's `wide` kernel reads a float4 from a row of src: four neighbours starting at column
4*tx.  That address is a multiple of 16 bytes only when every row starts on a 16-byte boundary,
i.e. when cols % 4 == 0; otherwise a 16-byte load would be misaligned (a fault on the GPU), so
any_shape.py falls back to 4-byte accesses, which reach only ~80% of cuBLAS.

The way out: forget the rows and look at the whole array as one flat run of rows*cols floats.
Its base is 16-byte aligned (a fresh device allocation), so the float4s at flat indices 0, 4,
8, ... are all aligned.  A tile row's 64 floats start at some flat index s that is generally
not a multiple of 4, but they lie inside the 17 aligned float4s that start at s - s % 4:

    flat:   ... | x x a b | c d e f | ... | . . . . | y z x x | ...
                      ^ s (s % 4 == 2)         tile row a..z, 64 floats, in 17 float4 "slots"

Load those 17 float4s whole into a shared staging row (the two x's at the ends belong to the
neighbouring rows and are just not used) and remember the shift s % 4: element c of the tile row
is staging[t, s % 4 + c].  Only the very last float4 of the array can run past its end; it is
loaded one float at a time.

Stores are the same picture on dst: a dst row segment of 64 floats covers 17 aligned slots too.
The slots entirely inside the segment get one 16-byte store each.  The (at most two) slots at its
ends are shared with the neighbouring block's segment: a 16-byte store there would overwrite the
neighbour's floats with our garbage (a race), so those get up to 3 scalar stores each.

So per tile row, 16 of 17 loads and 15 or 16 of 17 stores are 16 bytes wide, whatever the shape;
when rows and cols are multiples of 4 every shift is 0 and this is exactly `wide`.
"""
import functools

from numba import boolean, cuda, float32, int32, int64

from gemm_lessons.core.array_checks import transpose_shapes
from gemm_lessons.core.float4 import load1_flat, load4_flat, require_aligned_bases, store1_flat, store4_flat
from gemm_lessons.core.unroll import static, static_range, unrolled


def staging_width(TILE, rows=0, cols=0):
    """Floats per staging row: room for TILE/4 + 1 float4s (TILE + 4 floats), and an odd number,
    so that the store phase's gather (16 lanes reading tile rows 4 apart, as in `wide`) spreads a
    half-warp over 8 banks, 2-way, as in `wide`.  The other half-warp reads the next column j + 1,
    whose dst segment starts rows % 4 floats further on, so tile rows shifted by rows % 4; its
    8 banks are the other half-warp's (4-way) when (rows % 4) * (WIDTH + cols % 4) % 4 == 1.
    Of TILE + 5 and TILE + 7 (1 and 3 mod 4) one always avoids that: the shape picks it.
    (Worked out for TILE = 64: 16 lanes per dst row, two rows per warp; the bank tracer checks
    it, tests/kernels/test_transpose_any_wide.py.  Smaller tiles put more rows in a warp.)"""
    for width in (TILE + 5, TILE + 7):
        if (rows % 4) * (width + cols % 4) % 4 != 1:
            return width
    raise AssertionError("unreachable: the two widths differ by 2, so do their products mod 4")


def make_transpose_any_wide(TILE=64, ROWS=16, WIDTH=None):
    """TILE/4 x ROWS threads move a TILE x TILE tile.  Thread (tx, ty) handles slot tx of tile
    rows ty, ty + ROWS, ...; the 17th slot of each row is handled by the first TILE threads.
    WIDTH: floats per staging row (staging_width(TILE, rows, cols) picks it per shape)."""
    if TILE % 4 or TILE % ROWS or ROWS < 4:
        raise ValueError(f"any_wide needs TILE a multiple of 4 and of ROWS, and ROWS >= 4 (so that "
                         f"TILE/4 * ROWS threads can cover one extra slot per tile row): got TILE={TILE}, ROWS={ROWS}.")
    WIDTH = WIDTH or staging_width(TILE)
    if WIDTH < TILE + 4:
        raise ValueError(f"WIDTH={WIDTH}: a staging row needs TILE + 4 = {TILE + 4} floats (TILE/4 + 1 float4s).")
    T4 = TILE // 4  # slots a thread row spans; slot T4 (the 17th for TILE=64) is the extra one
    STEPS = TILE // ROWS  # tile rows per thread
    SLOTS = STEPS + 1  # slots per thread: STEPS in the thread's own column tx, one extra (T4)

    @cuda.jit
    @unrolled
    def transpose_any_wide(src, dst):
        stage = cuda.shared.array((TILE, WIDTH), float32)
        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y
        tid = ty * T4 + tx
        r0 = cuda.blockIdx.y * TILE
        c0 = cuda.blockIdx.x * TILE
        rows, cols = src.shape
        total = rows * cols
        m = min(TILE, cols - c0)  # valid columns of this tile (src), i.e. rows of it in dst
        n = min(TILE, rows - r0)  # valid rows of this tile (src), i.e. columns of it in dst

        # Load.  Slot p of this thread: tile row t (ty + p*ROWS; for the extra slot, row tid),
        # the aligned float4 k of that row (tx; the extra one: T4) at flat index
        # (s - s % 4) + 4k, s the row's flat start.  Registers (local arrays with constant
        # indices, unroll.py) so that every load is issued before the first one is waited for.
        t = cuda.local.array(SLOTS, int32)
        at = cuda.local.array(SLOTS, int64)
        want = cuda.local.array(SLOTS, boolean)
        x = cuda.local.array((SLOTS, 4), float32)
        for p in static_range(SLOTS):
            t[p] = ty + p * ROWS if static(p < STEPS) else tid
            k = tx if static(p < STEPS) else T4
            s = (r0 + t[p]) * cols + c0
            shift = s & 3
            at[p] = s - shift + 4 * k  # a multiple of 4: a 16-byte-aligned float4
            # wanted: a row of the tile holding at least one of its m columns (the extra slot
            # only where the row's shift > 0, or the tile is cut short)
            want[p] = (t[p] < n) & (4 * k < shift + m)
            for e in static_range(4):
                x[p, e] = float32(0)
            if want[p] & (at[p] + 4 <= total):  # one condition: a predicated load, no branch
                x[p, 0], x[p, 1], x[p, 2], x[p, 3] = load4_flat(src, at[p])
        for p in static_range(SLOTS):  # the array's last float4 runs past its end: only what exists
            if want[p] & (at[p] + 4 > total):
                x[p, 0] = load1_flat(src, at[p])  # at < s + m <= total
                if at[p] + 1 < total:
                    x[p, 1] = load1_flat(src, at[p] + 1)
                if at[p] + 2 < total:
                    x[p, 2] = load1_flat(src, at[p] + 2)
        for p in static_range(SLOTS):  # element c of tile row t lands at stage[t, shift + c]
            if want[p]:
                k = tx if static(p < STEPS) else T4
                for e in static_range(4):
                    stage[t[p], 4 * k + e] = x[p, e]
        cuda.syncthreads()

        # Store.  dst row c0 + j holds the tile's column j: n floats from flat index
        # s = (c0 + j) * rows + r0; float q of them is tile row q, staged with shift
        # (r0 * cols + c0 + q * cols) % 4, which only the last two bits of each term decide.
        b3 = (r0 * cols + c0) & 3
        c3 = cols & 3
        for p in static_range(SLOTS):
            j = ty + p * ROWS if static(p < STEPS) else tid
            k = tx if static(p < STEPS) else T4
            if j < m:
                s = (c0 + j) * rows + r0
                a = s - (s & 3) + 4 * k  # the slot's flat index (aligned)
                q = a - s  # the tile row of its first float (negative: before the segment)
                if (q >= 0) & (q + 4 <= n):  # all four floats are ours: one 16-byte store
                    store4_flat(dst, a,
                                stage[q, ((b3 + q * c3) & 3) + j],
                                stage[q + 1, ((b3 + (q + 1) * c3) & 3) + j],
                                stage[q + 2, ((b3 + (q + 2) * c3) & 3) + j],
                                stage[q + 3, ((b3 + (q + 3) * c3) & 3) + j])
                else:  # a ragged end shares its float4 with a neighbouring segment: ours only
                    for e in static_range(4):
                        if (q + e >= 0) & (q + e < n):
                            store1_flat(dst, a + e, stage[q + e, ((b3 + (q + e) * c3) & 3) + j])

    transpose_any_wide.tile = TILE
    transpose_any_wide.block = (T4, ROWS)
    return transpose_any_wide


@functools.lru_cache(maxsize=None)
def kernel_for(TILE=64, ROWS=16, WIDTH=None):
    return make_transpose_any_wide(TILE, ROWS, WIDTH)


def transpose(src, dst, TILE=64, ROWS=16, kernel=None):
    """dst = src.T for float32, C-contiguous device arrays src (rows x cols) and dst (cols x rows),
    any rows, cols >= 1, both starting on 16-byte boundaries."""
    rows, cols = transpose_shapes(src, dst)  # dtype, 2-D, C-contiguous, dst's shape: clear errors
    require_aligned_bases(("src", src), ("dst", dst))
    kernel = kernel or kernel_for(TILE, ROWS, staging_width(TILE, rows, cols))
    T = kernel.tile
    grid = ((cols + T - 1) // T, (rows + T - 1) // T)
    if grid[1] > 65535:
        raise ValueError(f"src has {rows} rows: at most {65535 * T} fit one launch's grid (gridDim.y <= 65535).")
    kernel[grid, kernel.block](src, dst)
