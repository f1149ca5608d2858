# %% [markdown]
# # 09 · Matrix transpose: bytes in flight
#
# **Where we are.** Lesson 08 ended with a warp-tiled SGEMM close to cuBLAS (the cell below gives
# both and the ceiling that binds them). A matrix product does hundreds of FLOPs per byte; a transpose,
# `dst[c, r] = src[r, c]`, does none. Each float is read once and written once, so it is judged by
# [bandwidth](GLOSSARY.md#bandwidth) (GB/s, bytes read plus written per second) against a copy of
# the same bytes, its ceiling, and cuBLAS's transpose, [`sgeam`](GLOSSARY.md#sgeam). Coalescing
# (lesson 01), shared tiles (02), padding (06) and 16-byte accesses (05) take it most of the way;
# the last step needs one more model, the latency-bandwidth ceiling
# ([Little's law](GLOSSARY.md#littles-law)).

# %%
import gemm_lessons as gl  # first: it chooses the GPU, or numba's CUDA simulator when there is none
from gemm_lessons.teaching import exercises, figures, limiter_table, measure_step
from gemm_lessons.instruments import shared_tracer
from gemm_lessons.kernels import ladder
from gemm_lessons.kernels.transpose import naive as t_naive, smem_tile as t_tile, wide as t_wide
from gemm_lessons.measure.problems import check_transpose_all
from gemm_lessons.model import limiter
from gemm_lessons.core.float4 import load4, store4  # lesson 05's 16-byte load/store intrinsics
import functools
from IPython.display import display
import matplotlib.pyplot as plt
import numpy as np
from numba import cuda, float32
# %matplotlib inline
print(gl.banner())


def checked(name, report):  # one line when every shape transposed exactly, else the report
    if report:
        print(f"{name}: every element in place on {', '.join(f'{c.shape[0]}x{c.shape[1]}' for c in report)}")
    else:
        display(report)

# %%
sgemm = limiter_table.why(["warptile", "cublas"])
print(", ".join(f"{r.rung} {2 * 4096 ** 3 / (r.measured_ms * 1e-3) / 1e12:.1f} TFLOPS" for r in sgemm.rows)
      + f" at 4096^3 ({sgemm.device}); binding: " + " and ".join(sorted({limiter.WHAT[r.binding] for r in sgemm.rows})))

# %% [markdown]
# ## 1 · Naive: one side is always strided
#
# One thread per element, `threadIdx.x` along the columns of `src`, blocks of 32 x 8 threads.
# Warp 0 reads 32 neighbours in a row of `src`: 128 contiguous bytes, 4
# [sectors](GLOSSARY.md#sector). It writes them down a column of `dst`, a whole row apart: 32
# sectors for the same 128 bytes. Swapping the mapping only moves the problem to the reads. Warp 0
# on a 64 x 64 matrix (a test checks the figure against the kernel's access log):

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
# NBVAL_CHECK_OUTPUT
checked("naive", check_transpose_all(functools.partial(t_naive.transpose, kernel=transpose_naive)))


# %% [markdown]
# ## 2 · Through a shared tile, padded to `[32][33]`
#
# A block copies a 32 x 32 tile of `src` into [shared memory](GLOSSARY.md#shared-memory) row by
# row (coalesced reads), waits at the [barrier](GLOSSARY.md#barrier), then writes rows of `dst`
# (coalesced writes) by reading the tile **by columns**. A row of a `[32][32]` float tile is one
# word in each of the 32 [banks](GLOSSARY.md#bank), so a column lies in one bank: a 32-way
# [bank conflict](GLOSSARY.md#bank-conflict), 32 [wavefronts](GLOSSARY.md#wavefront) instead of 1.
# One float of [padding](GLOSSARY.md#padding) per row (`[32][33]`) starts row `l` in bank `l`.
# `make_transpose_tile` builds both (`PAD`); with `ROWS` below 32, each thread moves `32 / ROWS`
# elements (section 4).

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
for rows, pad in ((32, 0), (32, 1), (8, 1)):  # smem_tile, smem_padded, smem_padded_32x8
    checked(f"tile, 32 x {rows} threads, PAD={pad}",
            check_transpose_all(functools.partial(t_tile.transpose, kernel=make_transpose_tile(32, rows, pad))))

# %%
unpadded = shared_tracer.trace_rung("transpose:smem_tile", (32, 32), merge=False).first("ld")
padded = shared_tracer.trace_rung("transpose:smem_padded", (32, 32), merge=False).first("ld")
fig, ax = plt.subplots(1, 2, figsize=(13, 7.2))
figures.tile_column_banks(unpadded.addresses, 32, ax=ax[0], title="tile[32][32]")
figures.tile_column_banks(padded.addresses, 33, ax=ax[1], title="tile[32][33]")
plt.tight_layout()

# %% [markdown]
# *Bank maps of the first column read, `tile[tx, ty + j]`, traced on the kernels above: cell `n`
# is the float lane `n` reads (tile row down, bank across). The bottom line counts the lanes each
# bank serves; a bank delivers one word per wavefront, so the largest count is the wavefronts.*
#
# ## 3 · Little's law: enough bytes in flight
#
# Whether the padded tile then reaches the copy depends on a ceiling no unit's peak shows:
# [latency](GLOSSARY.md#latency). A load from DRAM comes back `L` nanoseconds after it is issued.
# To move `B` bytes per second, `B x L` bytes must be on their way at every moment (Little's law),
# shared among the SMs. The course measured both (its limiter record): `B` the copy rate, `L` the
# DRAM latency of a chain of dependent loads.

# %%
m = limiter_table.machine()
need = m.in_flight_needed_per_sm  # bytes each SM must keep in flight
print(f"{m.name}: B = {m.dram_gbs:,.0f} GB/s (copy), L = {m.dram_latency_ns:.0f} ns (DRAM latency), "
      f"B x L = {m.dram_gbs * m.dram_latency_ns / 1e6:.2f} MB in flight; over {m.sm_count} SMs, "
      f"{need:,.0f} bytes per SM")

# %% [markdown]
# A transpose thread issues its loads, waits for them (at the barrier, or for the value it
# stores), then stores; while it stores it has nothing loading. The [limiter
# model](../gemm_lessons/model/limiter.py) counts that as loads in flight half the time
# (`LATENCY_DUTY` = 1/2), so a kernel gets
#
# > share of the copy rate = min(1, `LATENCY_DUTY` x bytes in flight per SM / (`B x L` per SM)),
#
# where bytes in flight per SM = the bytes a thread loads before it stores x the threads
# [resident](GLOSSARY.md#resident) on the SM.

# %%
TRANSPOSES = ["naive", "smem_tile", "smem_padded", "smem_padded_32x8", "wide"]
from gemm_lessons.runs.limiter import TRANSPOSE_LOAD_BYTES as LOADS  # bytes a thread loads before it stores: 4, 16, 64
works = {r: limiter_table.work(r, kind="transpose") for r in TRANSPOSES}
print("bytes per thread x threads per SM = bytes in flight per SM")
for r, w in works.items():
    print(f"{r:17s}: {LOADS[r]:2d} x {w.in_flight_per_sm // LOADS[r]:,} = {w.in_flight_per_sm:7,}")
figures.bytes_in_flight(TRANSPOSES, [w.in_flight_per_sm for w in works.values()], need, duty=limiter.LATENCY_DUTY);

# %% [markdown]
# ## 4 · More bytes per thread
#
# * **`smem_padded_32x8`**: the padded tile with 32 x 8 threads; each thread's loop issues 4
#   independent loads (16 bytes) before the barrier.
# * **`wide`**: a 64 x 64 padded tile, 16 x 16 threads; each loads four float4 along `src` rows
#   ([`LDG.128`](GLOSSARY.md#width-128): 64 bytes before the barrier), then gathers four float4
#   from columns of the tile and stores them along `dst` rows (`STG.128`). A float4 starts on a
#   16-byte boundary, so both sides must be multiples of 4 (`ValueError` otherwise).

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
# NBVAL_CHECK_OUTPUT
checked("wide", check_transpose_all(functools.partial(t_wide.transpose, kernel=make_transpose_wide()),
                                    shapes=[(68, 44), (128, 132), (4, 8), (100, 4)]))

# %% [markdown]
# ## Predict
#
# With the bars and the rule above: what share of the copy's GB/s will `smem_padded` reach (a
# fraction, for example 0.8)? And which rungs does Little's law leave free to reach the copy?

# %%
my_share = None  # your prediction for smem_padded: replace None with a fraction of the copy's GB/s

# %%
share = {r: limiter.latency_fraction(w, m) for r, w in works.items()}
print("Little's law's share of the copy rate: " + ", ".join(f"{r} {s:.0%}" for r, s in share.items()))

# %% [markdown]
# ## Measure
#
# Every [rung](GLOSSARY.md#rung), cuBLAS `sgeam` and the float4 copy on one 8192 x 8192 matrix
# (256 MiB read and 256 MiB written per call), in one run, timed in batches of back-to-back calls
# so that Python's [launch overhead](GLOSSARY.md#launch-overhead) is not counted.

# %%
table = measure_step.compare_transpose(dict(ladder.TRANSPOSE), shape=(8192, 8192))
table

# %%
exercises.compare_prediction(my_share, table.gbs("smem_padded") / table.gbs("copy_float4"),
                             "smem_padded's share of the copy's GB/s at 8192x8192", table.source)

# %% [markdown]
# ## Why: the limiter model
#
# Each column is the time one ceiling alone allows, from each kernel's profiled counts; latency is
# DRAM's time divided by Little's share. The largest binds. The last column is the
# [profiler's](GLOSSARY.md#ncu) busiest unit.

# %%
why = limiter_table.why(TRANSPOSES + ["cublas_sgeam", "copy"], kind="transpose", measured=table)
why

# %%
row = {r.rung: r for r in why.rows}
pad, tile, x8, wide, copy = (row[k] for k in ("smem_padded", "smem_tile", "smem_padded_32x8", "wide", "copy"))
per32 = {k: works[k].warp_instructions / (8192 * 8192 / 32) for k in ("smem_padded_32x8", "wide")}
both = tile.predicted_ms + tile.ceilings_ms["shared"]
overlap = ("between the larger of its two ceilings and their sum: the conflicted reads overlap the waiting in part"
           if tile.predicted_ms <= tile.measured_ms <= both else
           f"against {tile.predicted_ms:.3g} ms for the larger of the two ceilings and {both:.3g} ms for their sum")
binding_busy = [r.busiest_pct for r in (x8, wide, copy, row["cublas_sgeam"]) if r.agrees]
ratios = [r.ratio for r in why.rows if r.rung != "naive"]
print(f"* smem_padded: bound by {limiter.WHAT[pad.binding]}, measured {pad.ratio:.2f}x the prediction; no unit "
      f"is busier than {pad.busiest_pct:.0f}%: the SMs wait for DRAM.")
print(f"* smem_tile: the same latency ceiling plus {tile.ceilings_ms['shared']:.3g} ms of conflicted wavefronts; "
      f"it took {tile.measured_ms:.3g} ms, {overlap}.")
enough = ("enough bytes in flight for the whole copy rate" if share["smem_padded_32x8"] >= 1 else
          f"bytes in flight for {share['smem_padded_32x8']:.0%} of the copy rate")
print(f"* smem_padded_32x8: {enough}; bound by {limiter.WHAT[x8.binding]}: "
      f"{per32['smem_padded_32x8']:.0f} warp-instructions per 32 floats moved (profiler: "
      f"{limiter_table.SHORT[x8.busiest]}, {x8.busiest_pct:.0f}% busy).")
print(f"* wide: 16-byte loads and stores cut that to {per32['wide']:.0f}; bound by "
      f"{limiter.WHAT[wide.binding]}, measured {wide.ratio:.2f}x the prediction (the copy {copy.ratio:.2f}x).")
print(f"* The model lets the binding unit run at 100%; the profiler shows it {min(binding_busy):.0f}-"
      f"{max(binding_busy):.0f}% busy (stalls at barriers and on loads), so the kernels take "
      f"{min(ratios):.2f}-{max(ratios):.2f}x the prediction (naive {row['naive'].ratio:.1f}x: Lab notes).")

# %% [markdown]
# ## Exercise 09-symmetrize: `dst = src + src.T` through a padded tile
#
# For a square matrix, `dst[r, c] = src[r, c] + src[c, r]`. As given, the kernel is right but reads
# `src[c, r]` straight from global memory: the naive transpose's strided access. Make **every**
# warp-wide global access coalesced and the shared tile conflict-free. A block of 32 x 8 threads
# owns the 32 x 32 tile of `dst` at rows `r0..`, columns `c0..`: stage the *mirror* tile of `src`
# (rows `c0..`, columns `r0..`) into shared memory reading rows of `src`, and read it back by
# column. The check runs the kernel for n = 67, 40 and 1, then traces a 64 x 64 run on the
# simulator: each warp's global read and write must touch the fewest 32-byte sectors possible,
# and the tile must have no bank conflicts.

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
# ## Takeaway
#
# * A memory-bound kernel is judged in GB/s against a copy of the same bytes.
# * A shared tile makes both global sides coalesced; padding it to `[32][33]` turns its 32-way
#   column read into one wavefront.
# * Little's law: to stream `B` bytes per second across a latency `L`, `B x L` bytes must be in
#   flight, shared among the SMs. One float per thread, loading half the time, is not enough.
# * More bytes per thread lifts the latency ceiling; 16-byte accesses then cut the instructions
#   until DRAM binds, as for sgeam and the copy.

# %% [markdown]
# ## Sources and further reading
#
# * The source articles this lesson re-tells and tests: [[4]](REFERENCES.md#seed-003) (their origins and what each
#   covers are in [REFERENCES.md](REFERENCES.md#source-articles)).
# * What to read next: [REFERENCES.md, lesson 09](REFERENCES.md#lesson-09); Little's law on a GPU:
#   Volkov's thesis ([REFERENCES.md, lesson 00a](REFERENCES.md#lesson-00a)).
# * Terms: the [glossary](GLOSSARY.md); the execution model and the compiler-facts table are
#   introduced in the [primer](00a_primer.ipynb).

# %% [markdown]
# ## Lab notes
#
# **Two records on the simulator.** The measure table is a recorded run of the bench (its GPU is in
# the table's title); the Why table is the limiter run, on the GPU its title names. On a GPU that
# has a limiter record, the Why table's measured column is this notebook's run (no asterisk).
#
# **What the model leaves.** The naive kernel takes several times its latency ceiling. The model
# gives every kernel the same half duty; a warp's scattered store (32 sectors) probably keeps
# naive's threads from loading for more than half their time, but nothing here measures the duty.
#
# **Two ways to count Little's law.** The primer sets the loads in flight against the read half of
# the copy rate (a store has nothing to wait for); the model sets them against all of `B`, loading
# half the time, which is the same as the reads loading a quarter of the time. With the same half
# duty the primer's count would give the 4-byte tiles twice the model's share; the measured
# `smem_padded` sits near the model's (the Why table).
#
# **`wide`'s residual conflicts.** Its padded tile is 65 floats wide, and the tracer finds 2-way
# conflicts in both its tile stores and its gathering reads (below; lesson 06's ncu table counts
# the same on the GPU). No rung removes them, so `wide` against the copy bounds what they cost.

# %%
# NBVAL_CHECK_OUTPUT
wide_trace = shared_tracer.trace_rung("transpose:wide", (64, 64), merge=False)
for op, what in (("st", "tile stores"), ("ld", "gathering reads")):
    tot = wide_trace.totals(op)
    worst = max(i.cost.degree for i in wide_trace.instructions if i.op == op)
    print(f"wide, one 64x64 block, {what}: {tot['instructions']} instructions, {tot['wavefronts']} wavefronts "
          f"(ideal {tot['ideal']}), worst {worst}-way")

# %% [markdown]
# **The library's transpose: every shape.** `wide` refuses sides that are not multiples of 4, and
# each lesson launch goes through `kernel[grid, block]`, whose Python work per call can outlast a
# small transpose on the GPU (lesson 11 measures it). `gemm_lessons.library.transpose(src, dst)`
# takes any shape: the wide kernel when every row of both arrays allows 16-byte accesses;
# `transpose/aligned_stores.py` when a side is not a multiple of 4 but both arrays start on a
# 16-byte boundary (16 bytes at a time but for up to 3 floats at each end of a row of `dst`;
# lesson 11 shows how); `smem_padded_32x8` for the rest (an array that starts inside a float4,
# such as a view). Each is launched through a [`Launcher`](GLOSSARY.md#launcher).

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
# `tools/transpose_suite.py` timed it against cuBLAS `sgeam`, called through nvmath-python
# (NVIDIA's Python bindings to its math libraries, cuBLAS among them), on a suite of shapes, in
# [single calls](GLOSSARY.md#single-call) and back to back (`results/transpose-suite-<device>.json`,
# with the other candidate kernels). A 1024 x 1024 transpose moves 8 MiB, under 3 µs at this
# GPU's copy rate and less than one launch costs the host, so on small shapes the ratios compare
# two ways of calling more than two kernels. The figure puts the large shapes first; those
# moving less than 64 MiB come last, in a grey band.

# %%
from IPython.display import Markdown, display
from gemm_lessons.records import results
from gemm_lessons.teaching import leaderboard, plots
suite = results.transpose_suite()
if suite is None:
    print("no transpose suite recorded for this device yet: run `python3 tools/transpose_suite.py` on a GPU")
else:
    plots.transpose_suite(suite)
    display(Markdown(leaderboard.transpose_suite_markdown(suite)))
