"""A transpose for a src with few rows: a short, wide matrix such as 7 x 300,007.

The other transposes cut src into 64 x 64 tiles.  With 7 rows, 7 of a tile's 64 rows hold data,
so most of every block's threads have nothing to load or store (on an H200, 59% of sgeam's speed
at 7 x 300,007 back to back: experiments/transpose_few_rows/).

Here a block takes every row of src (at most MAX_ROWS) over COLS columns, one column per thread.
The dst rows of those columns, c0 .. c0 + COLS - 1, each ``rows`` floats long, are one contiguous
run of dst.  So the block

  1. loads its columns row by row (a warp reads 32 neighbouring floats of a src row), every load
     issued before the first is waited for, and stores float (r, c) of src at place
     (c - c0) * rows + r of a shared array laid out as the dst run;
  2. writes the run out flat (a warp writes 32 neighbouring floats of dst).

Both global sides are coalesced one float at a time, so any alignment works.  In step 1 a warp's
32 shared stores fall ``rows`` floats apart: with rows odd, 32 different banks; with rows even,
one float of padding every 32 places keeps it within 2 ways (1 where rows is a power of two).
"""
from numba import cuda, float32

from gemm_lessons.core.array_checks import transpose_shapes
from gemm_lessons.core.float4 import load1, store1_flat
from gemm_lessons.core.unroll import static_range, unrolled

MAX_ROWS = 16  # src rows a block takes (library.transpose uses this kernel up to here)
COLS = 256  # src columns per block: one per thread
RUN = COLS * MAX_ROWS + COLS * MAX_ROWS // 32  # the shared run, with room for its padding


@cuda.jit
@unrolled
def transpose_few_rows(src, dst):
    run = cuda.shared.array(RUN, float32)
    t = cuda.threadIdx.x
    rows, cols = src.shape
    c0 = cuda.blockIdx.x * COLS
    m = min(COLS, cols - c0)  # this block's columns
    pad = 1 - (rows & 1)  # rows even: one float of padding every 32 places (see the module doc)
    x = cuda.local.array(MAX_ROWS, float32)
    if t < m:
        for r in static_range(MAX_ROWS):  # every load in flight before the first store waits for it
            if r < rows:
                x[r] = load1(src, r, c0 + t)
        for r in static_range(MAX_ROWS):
            if r < rows:
                s = t * rows + r
                run[s + (s >> 5) * pad] = x[r]
    cuda.syncthreads()
    base = c0 * rows  # the run's first float in dst, seen flat
    for s in range(t, m * rows, COLS):
        store1_flat(dst, base + s, run[s + (s >> 5) * pad])


transpose_few_rows.block = (COLS,)


def transpose(src, dst):
    """dst = src.T for float32, C-contiguous device arrays src (rows x cols, 1 <= rows <= MAX_ROWS)
    and dst (cols x rows), any alignment."""
    rows, cols = transpose_shapes(src, dst)
    if not 1 <= rows <= MAX_ROWS:
        raise ValueError(f"transpose_few_rows takes src with 1 to {MAX_ROWS} rows, got {rows}: "
                         "use library.transpose, which picks a kernel for every shape.")
    transpose_few_rows[((cols + COLS - 1) // COLS,), transpose_few_rows.block](src, dst)
