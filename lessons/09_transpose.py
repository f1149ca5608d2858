# %% [markdown]
# # 09 · Matrix transpose: the memory-bound twin
#
# SGEMM lives on the right of the roofline: it does hundreds of FLOP per byte, and the lessons
# were about feeding the FP32 units. A transpose does **no arithmetic at all**: every element is
# read once and written once. Its only measure is bandwidth (bytes read + written per second),
# its ceiling a plain copy, and its yardstick cuBLAS [`sgeam`](GLOSSARY.md#sgeam) (which computes
# C = alpha op(A) + beta op(B), op a transpose or not: with alpha 1, beta 0 and op(A) = A^T, a
# transpose). The same tools apply: coalescing
# (lesson 01), shared-memory tiles (02), bank conflicts and padding (06), wide accesses (05).

# %%
import gemm_lessons as gl  # first: it chooses the GPU, or numba's CUDA simulator when there is none
from gemm_lessons.model import counting
from gemm_lessons.teaching import exercises, figures, measure_step, plots
from gemm_lessons.instruments import compiler_facts
from gemm_lessons.kernels import ladder
from gemm_lessons.records import results
from gemm_lessons.core.jit import jit  # cuda.jit that also takes GPU-only options (max_registers) on the simulator
import functools
import numpy as np
from numba import cuda, float32
# %matplotlib inline
print(gl.banner())

# %%
from gemm_lessons.instruments import shared_tracer
from gemm_lessons.kernels.transpose import naive as t_naive, smem_tile as t_tile, wide as t_wide
measure_step.compare_transpose({}, shape=(8192, 8192))  # the references: a copy of the same bytes, and cuBLAS sgeam


# %% [markdown]
# ## Naive: one of the two sides is always strided
#
# `dst[c, r] = src[r, c]`. With `threadIdx.x` along the columns of `src`, a warp reads 128
# contiguous bytes but writes 32 floats a whole row of `dst` apart: 32 sectors for 128 useful
# bytes. Swapping the mapping only moves the problem to the reads. The kernel runs in blocks of
# 32 x 8 threads (`transpose/naive.py`), so warp 0 is the 32 threads with `threadIdx.y = 0`. Its
# accesses on a 64 x 64 matrix, each lane's float numbered by the lane; the panels show the first
# rows and columns of src and dst (a test checks the figure's formula against the kernel's
# access log on the simulator):

# %%
figures.transpose_warp_access(64, 64);

# %%
# NBVAL_CHECK_OUTPUT
read, write = figures.naive_transpose_warp_addresses(8192, 8192)
print(f"8192 x 8192: one warp reads {figures.sectors(read)} sectors and writes {figures.sectors(write)} "
      f"for 32 floats (128 bytes) each way")

# %%
# source: gemm_lessons/kernels/transpose/naive.py  (the package runs this same code; a test keeps the two identical)
@cuda.jit
def transpose_naive(src, dst):
    # threadIdx.x walks the columns of src: a warp reads 128 contiguous bytes of a row,
    # but writes 32 floats that are a whole dst row apart: 32 sectors for 128 bytes
    c = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    r = cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y
    rows, cols = src.shape
    if r < rows and c < cols:
        dst[c, r] = src[r, c]


# %%
from gemm_lessons.measure.problems import check_transpose_all
check_transpose_all(functools.partial(t_naive.transpose, kernel=transpose_naive), name="naive")


# %% [markdown]
# ## Through a shared-memory tile
#
# A block reads a 32x32 tile with coalesced row reads into shared memory, then writes it out
# with coalesced row writes to `dst`, reading the tile **by columns**. Both global accesses are
# now rows, read and written a warp at a time (the exercise at the end of this lesson checks the
# sectors of such a kernel); shared memory is not so lucky: a column of a `[32][32]` float tile
# lies in one bank.
# With one float of padding per row (`[32][33]`), row l starts in bank l and the column read is
# conflict-free. The tracer shows both, on the kernel itself.

# %%
# source: gemm_lessons/kernels/transpose/smem_tile.py  (the package runs this same code; a test keeps the two identical)
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


# %%
# NBVAL_CHECK_OUTPUT
for pad in (0, 1):
    check = check_transpose_all(functools.partial(t_tile.transpose, kernel=make_transpose_tile(32, 32, pad)),
                                name=f"tile pad={pad}")
    print(check)

# %%
# NBVAL_CHECK_OUTPUT
unpadded = shared_tracer.trace_rung("transpose:smem_tile", (32, 32), merge=False)
padded = shared_tracer.trace_rung("transpose:smem_padded", (32, 32), merge=False)
for name, t in [("tile[32][32]", unpadded), ("tile[32][33]", padded)]:
    ld = t.totals("ld")
    print(f"{name}: {ld['instructions']} column reads, {ld['wavefronts']} wavefronts, "
          f"worst {t.first('ld').cost.degree}-way")

# %%
import matplotlib.pyplot as plt
fig, ax = plt.subplots(2, 1, figsize=(12, 7))
figures.bank_map(unpadded.first("ld").addresses, 4, ax=ax[0], title="column read of tile[32][32]", rows=8)
figures.bank_map(padded.first("ld").addresses, 4, ax=ax[1], title="column read of tile[32][33]", rows=8)
plt.tight_layout()

# %% [markdown]
# ## More work per thread, wider accesses
#
# * **32x8 threads** for a 32x32 tile: each thread moves 4 elements. Fewer, fuller threads; more
#   independent loads in flight per thread before the barrier (the likely reason it is faster;
#   not measured here).
# * **Wide**: a 64x64 tile moved by 16x16 threads, each reading four float4 along `src` rows
#   (`LDG.128`) and writing four float4 along `dst` rows (`STG.128`), gathering each float4 from
#   a column of the padded tile. Rows must start on 16-byte boundaries, so rows and columns must
#   be multiples of 4 (ValueError otherwise). The padded tile is 65 floats wide, and the tracer
#   finds 2-way conflicts in both the gathering reads and the tile stores (the cell below; the
#   `transpose wide` row of lesson 06's ncu table counts the same on the GPU). No
#   rung here removes them, so the measurement below bounds what they can cost (`wide` against
#   the copy of the same bytes); it does not measure it.

# %%
# NBVAL_CHECK_OUTPUT
wide_trace = shared_tracer.trace_rung("transpose:wide", (64, 64), merge=False)
for op, what in (("st", "tile stores"), ("ld", "gathering reads")):
    tot = wide_trace.totals(op)
    worst = max(i.cost.degree for i in wide_trace.instructions if i.op == op)
    print(f"wide, one 64x64 block, {what}: {tot['instructions']} instructions, {tot['wavefronts']} wavefronts "
          f"(ideal {tot['ideal']}), worst {worst}-way")

# %%
from gemm_lessons.core.float4 import load4, store4  # lesson 05's 16-byte load/store intrinsics


# %%
# source: gemm_lessons/kernels/transpose/wide.py  (the package runs this same code; a test keeps the two identical)
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


# %%
check_transpose_all(functools.partial(t_wide.transpose, kernel=make_transpose_wide()), name="wide",
                    shapes=[(68, 44), (128, 132), (4, 8), (100, 4)])

# %% [markdown]
# ## Measure
#
# All [rungs](GLOSSARY.md#rung) (this lesson's kernels), cuBLAS `sgeam` and the float4 copy, on the same 8192x8192 matrix (256 MiB read and
# 256 MiB written per call), in one run. Short kernels are timed in batches of
# back-to-back calls so that Python's [launch overhead](GLOSSARY.md#launch-overhead) is not counted.

# %% [markdown]
# **Predict, then measure.** The tracer found 32 [wavefronts](GLOSSARY.md#wavefront) per column read of `tile[32][32]`
# and 1 of `tile[32][33]`. How many times the bandwidth of `smem_tile` do you expect
# `smem_padded` to reach? On a GPU the next cell measures every rung now; on the simulator it
# shows the recorded GPU result.

# %%
my_ratio = None  # your prediction: replace None with a number (for example 2)

# %%
table = measure_step.compare_transpose(dict(ladder.TRANSPOSE), shape=(8192, 8192))
table

# %%
exercises.compare_prediction(my_ratio, table.gbs("smem_padded") / table.gbs("smem_tile"),
                             "smem_padded vs smem_tile at 8192x8192 (times the GB/s)", table.source)

# %%
from IPython.display import Markdown
Markdown(counting.transpose_conflict_reading(table, unpadded, padded))

# %%
best = max(ladder.TRANSPOSE, key=table.gbs)
print(f"best rung: {best}, {table.gbs(best):,.0f} GB/s = {100 * table.gbs(best) / table.gbs('cublas_sgeam'):.0f}% "
      f"of cuBLAS sgeam and {100 * table.gbs(best) / table.gbs('copy_float4'):.0f}% of the copy ({table.source})")

# %% [markdown]
# ## Exercise 09-symmetrize: `dst = src + src.T` through a padded tile
#
# For a square matrix, `dst[r, c] = src[r, c] + src[c, r]`. Reading `src[r, c]` with
# `threadIdx.x` along `c` is coalesced; reading `src[c, r]` the same way is the naive
# transpose's strided access. Write the kernel so that **every** warp-wide global access is
# coalesced and the shared tile is conflict-free: a block of 32 x 8 threads owns the 32 x 32
# tile of `dst` at rows `r0..`, columns `c0..`; stage the *mirror* tile of `src` (rows `c0..`,
# columns `r0..`) into shared memory reading rows of `src`, and read it back by column.
#
# As given, the kernel is right but reads `src[c, r]` straight from global memory. The check
# runs it for n = 67, 40 and 1, then on the simulator records a 64 x 64 run with the access log:
# each warp-wide global read and write must touch the fewest 32-byte sectors its addresses
# allow, and the tracer must find no bank conflicts (on a GPU the access log runs in a child
# process on the simulator).

# %%
import numpy as np
from numba import cuda, float32
from gemm_lessons.teaching import exercises

TILE, ROWS = 32, 8  # the check launches ceil(n/32) x ceil(n/32) blocks of 32 x 8 threads
# numba needs a shared array's shape as constants (numbers or globals like TILE, not an
# expression such as TILE + 1, which the simulator accepts but a GPU compile rejects)


@cuda.jit
def symmetrize(src, dst):
    ### BEGIN SOLUTION: tile = cuda.shared.array((TILE, TILE), float32)
    tile = cuda.shared.array((TILE, 33), float32)  # padded to 33: a column spans 32 banks
    ### END SOLUTION
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    r0 = cuda.blockIdx.y * TILE
    c0 = cuda.blockIdx.x * TILE
    n = src.shape[0]
    ### BEGIN SOLUTION: pass
    for j in range(0, TILE, ROWS):  # the mirror tile src[c0.., r0..]: a warp reads a row of src
        r, c = c0 + ty + j, r0 + tx
        if r < n and c < n:
            tile[ty + j, tx] = src[r, c]
    ### END SOLUTION
    cuda.syncthreads()
    for j in range(0, TILE, ROWS):
        r, c = r0 + ty + j, c0 + tx
        if r < n and c < n:
            ### BEGIN SOLUTION: dst[r, c] = src[r, c] + src[c, r]
            dst[r, c] = src[r, c] + tile[tx, ty + j]  # src[c, r] = tile[c - c0, r - r0]: a column of the tile
            ### END SOLUTION


exercises.check("09-symmetrize", symmetrize)

# %% [markdown]
# ## The library's transpose: every shape
#
# `wide` refuses a matrix whose sides are not multiples of 4 (a row must start on a 16-byte
# boundary), and each lesson launch goes through `kernel[grid, block]`, whose Python work per
# call can take longer than a small transpose takes on the GPU (lesson 11 measures it). `gemm_lessons.library.transpose(src,
# dst)` is what a library makes of this lesson: the wide kernel when every row of both arrays
# allows 16-byte accesses; when a side is not a multiple of 4 but both arrays start on a 16-byte
# boundary, `transpose/aligned_stores.py`, which sees each array as one flat run of floats and
# moves 16 bytes at a time but for up to 3 floats at each end of a row of dst (lesson 11 shows how); `smem_padded_32x8` for the rest (an array
# that starts inside a float4, such as a view). Each is launched with little Python per call
# (through a [`Launcher`](GLOSSARY.md#launcher)). It takes any shape on the device:

# %%
# NBVAL_CHECK_OUTPUT
from gemm_lessons import library
for rows, cols in [(64, 96), (61, 90), (33, 7)]:
    src = np.random.default_rng(rows).random((rows, cols), dtype=np.float32)
    dst = cuda.to_device(np.full((cols, rows), np.nan, np.float32))  # poisoned
    library.transpose(cuda.to_device(src), dst)
    print(f"{rows}x{cols}: exact {np.array_equal(dst.copy_to_host(), src.T)}")
big = cuda.to_device(np.random.default_rng(1).random((62, 90), dtype=np.float32))
view = big[1:]  # rows 1.. of a larger array: it starts 90 * 4 = 360 bytes in, inside a float4
dst = cuda.to_device(np.full((90, 61), np.nan, np.float32))
library.transpose(view, dst)  # smem_padded_32x8, the 4-byte kernel
print(f"61x90 view starting inside a float4: exact {np.array_equal(dst.copy_to_host(), big.copy_to_host()[1:].T)}")

# %% [markdown]
# `tools/transpose_suite.py` timed it against cuBLAS `sgeam` on a suite of shapes, as a user
# calls it ([single calls](GLOSSARY.md#single-call), the GPU idle before each) and back to back, next to the other
# candidate kernels (all in `results/transpose-suite-<device>.json`). Where the matrices are
# small, a call likely takes longer on the host than on the GPU (a 1024 x 1024 transpose moves
# 8 MiB: under 3 µs at this GPU's copy bandwidth, less than one launch costs the host even through
# a `Launcher`: lesson 11 measures `Launcher` launches of gl.sgemm's kernels, and a transpose is one
# such launch), so there the ratios likely compare two ways of calling (ours, through a
# `Launcher`, and nvmath-python's binding of cuBLAS), not two kernels. The kernels are compared
# best on the large shapes back to back, where calls queue while the GPU works; even on large
# shapes single calls still include each call's cost on the host, and the two can differ (the
# sentence with the figure gives both). The figure shows the library against sgeam, the large
# shapes first; the shapes that move less than 64 MiB (read plus written) come last, in a grey
# band, because their bars likely compare calls. The record holds the other candidate kernels too.

# %%
from IPython.display import Markdown, display
from gemm_lessons.teaching import leaderboard
suite = results.transpose_suite()
if suite is None:
    print("no transpose suite recorded for this device yet: run `python3 tools/transpose_suite.py` on a GPU")
else:
    plots.transpose_suite(suite)
    display(Markdown(leaderboard.transpose_suite_markdown(suite)))

# %% [markdown]
# ## Takeaway
#
# * Memory-bound kernels are judged in bytes per second against a copy: no FLOPS to hide behind.
# * A shared-memory tile makes both sides coalesced; padding makes the column read conflict-free;
#   more elements per thread and 16-byte accesses closed most of the remaining gap to the copy in
#   the measurement above (fewer instructions for the same bytes, and more bytes requested before
#   each barrier, are the likely reasons; not measured here).
# * The tracer, the model and the profiler agree on which kernels have bank conflicts and on
#   their instruction counts; ncu counts a few extra wavefronts in the 32x32-thread kernels
#   that the addresses cannot explain (lesson 06).

# %% [markdown]
# ## Sources and further reading
#
# * The source articles this lesson re-tells and tests: [[4]](REFERENCES.md#seed-003) (their origins and what each
#   covers are in [REFERENCES.md](REFERENCES.md#source-articles)).
# * What to read next: [REFERENCES.md, lesson 09](REFERENCES.md#lesson-09).
# * Terms: the [glossary](GLOSSARY.md); the execution model and the compiler-facts table are
#   introduced in the [primer](00a_primer.ipynb).
