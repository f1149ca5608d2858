# %%
# Setup: where the course is not installed (Colab), install it; then say which GPU this is.
import importlib.util, shutil, subprocess, sys
REPOSITORY, BRANCH = '', 'main'  # [tool.gemm-lessons] in the course's pyproject.toml
smi = shutil.which("nvidia-smi")
gpu = subprocess.run([smi, "--query-gpu=name,driver_version", "--format=csv,noheader"], capture_output=True,
                     text=True).stdout.strip().splitlines() if smi else []
gpu_name, driver = (gpu[0].rsplit(", ", 1) + [""])[:2] if gpu else ("", "")
cc = subprocess.run([smi, "--query-gpu=compute_cap", "--format=csv,noheader"], capture_output=True,
                    text=True).stdout.strip().splitlines()[:1] if gpu else []  # older drivers: not a field
cc = cc[0] if cc and cc[0].replace(".", "", 1).isdigit() else ""
if importlib.util.find_spec("gemm_lessons") is None:
    if not REPOSITORY:
        raise ModuleNotFoundError("gemm_lessons is not installed, and this notebook names no repository to install "
                                  "it from: in a clone of the course run  pip install -e .  then restart the kernel")
    major = int(driver.split(".")[0]) if driver.split(".")[0].isdigit() else 0
    # CUDA 13 needs driver 580+ and compute capability 7.5+ (it dropped Maxwell, Pascal and Volta)
    extra = ("[cu13]" if major >= 580 and not (cc and float(cc) < 7.5) else "[cu12]") if gpu_name else ""
    print(f"installing gemm-lessons{extra} from github.com/{REPOSITORY} ({BRANCH}) ...")
    subprocess.run([sys.executable, "-m", "pip", "install", "-q",
                    f"gemm-lessons{extra} @ git+https://github.com/{REPOSITORY}@{BRANCH}"], check=True)
capability = f"compute capability {cc}, " if cc else ""
print(f"GPU: {gpu_name} ({capability}driver {driver})" if gpu_name else
      "No GPU: the lessons run on numba's CUDA simulator, slowly (Colab: Runtime > Change runtime type > T4 GPU).")

# %% [markdown]
# # 09 · Matrix transpose: bytes in flight
#
# **Where we are.** Lesson 08's warp-tiled SGEMM is close to cuBLAS (below). A transpose,
# `dst[c, r] = src[r, c]`, does no arithmetic: it is judged by [bandwidth](GLOSSARY.md#bandwidth)
# (GB/s, bytes read plus written per second) against its ceiling, a copy of the same bytes
# (`copy_float4`), and cuBLAS's [`sgeam`](GLOSSARY.md#sgeam). Coalescing, a shared tile and padding
# (lessons 01-06) stop short of the copy; [Little's law](GLOSSARY.md#littles-law) shows what closes
# the gap.

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
# One thread per element, blocks of 32 x 8, `threadIdx.x` along the columns of `src`. Warp 0 reads
# 32 neighbours in a row of `src` (4 [sectors](GLOSSARY.md#sector)) and writes them down a column
# of `dst`, a row apart (32 sectors). Swapping the mapping moves the problem to the reads. Warp 0
# on a 64 x 64 matrix:

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
# A block copies a 32 x 32 tile of `src` into [shared memory](GLOSSARY.md#shared-memory) by rows
# (coalesced reads), waits at the [barrier](GLOSSARY.md#barrier), then writes rows of `dst`
# (coalesced) by reading the tile **by columns**. A `[32][32]` float tile's row spans the 32
# [banks](GLOSSARY.md#bank) once, so a column lies in one bank: a 32-way
# [bank conflict](GLOSSARY.md#bank-conflict), 32 [wavefronts](GLOSSARY.md#wavefront) instead of 1.
# One float of [padding](GLOSSARY.md#padding) per row (`[32][33]`, `PAD=1`) starts row `l` in bank
# `l`.

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
reports = {name: check_transpose_all(functools.partial(t_tile.transpose, kernel=make_transpose_tile(32, rows, pad)))
           for name, rows, pad in (("smem_tile", 32, 0), ("smem_padded", 32, 1), ("smem_padded_32x8", 8, 1))}
failed = [r for r in reports.values() if not r]
checked(", ".join(reports), failed[0] if failed else reports["smem_tile"])

# %%
unpadded = shared_tracer.trace_rung("transpose:smem_tile", (32, 32), merge=False).first("ld")
padded = shared_tracer.trace_rung("transpose:smem_padded", (32, 32), merge=False).first("ld")
fig, ax = plt.subplots(1, 2, figsize=(13, 7.2))
figures.tile_column_banks(unpadded.addresses, 32, ax=ax[0], title="tile[32][32]")
figures.tile_column_banks(padded.addresses, 33, ax=ax[1], title="tile[32][33]")
plt.tight_layout()

# %% [markdown]
# *The first column read, `tile[tx, ty + j]`, traced on the kernels above: square `n` is lane `n`'s
# float.*
#
# ## 3 · Little's law: enough bytes in flight
#
# One ceiling shows in no unit's peak: [latency](GLOSSARY.md#latency). A DRAM load returns `L`
# nanoseconds after issue; to move `B` bytes per second, `B x L` bytes must be in flight at every
# moment (Little's law), shared among the SMs. The limiter run measured `B` (the copy rate, read
# plus written) and `L` (on an idle GPU). A transpose thread loads, waits, then stores while loading
# nothing: its loads are in flight about half its time (`LATENCY_DUTY` = 1/2), so an SM needs twice
# its share of `B x L` in flight while it loads.

# %%
m = limiter_table.machine()
need = m.in_flight_needed_per_sm  # B x L per SM, bytes (the limiter model's Machine)
print(f"{m.name}: B = {m.dram_gbs:,.0f} GB/s, L = {m.dram_latency_ns:.0f} ns: B x L = "
      f"{m.dram_gbs * m.dram_latency_ns / 1e6:.2f} MB, {need:,.0f} bytes per SM over {m.sm_count} SMs; loading "
      f"{limiter.LATENCY_DUTY:.0%} of the time, {need / limiter.LATENCY_DUTY:,.0f} while it loads.")

# %% [markdown]
# The [limiter model](GLOSSARY.md#limiter-model) ([code](../gemm_lessons/model/limiter.py))
# therefore predicts:
#
# > share of the copy rate = min(1, `LATENCY_DUTY` x bytes in flight per SM / (`B x L` per SM)),
#
# with bytes in flight per SM = bytes a thread loads before it stores x threads
# [resident](GLOSSARY.md#resident) on the SM.
#
# **Assumption**: `B` counts reads and writes. Counting the reads alone (`B / 2`) would double
# every share; which count is nearer, `smem_padded`'s measurement tells (Why).

# %%
TRANSPOSES = ["naive", "smem_tile", "smem_padded", "smem_padded_32x8", "wide"]
from gemm_lessons.runs.limiter import TRANSPOSE_LOAD_BYTES as LOADS  # bytes a thread loads before it stores: 4, 16, 64
from gemm_lessons.runs.arch_facts import ARCHS
works = {r: limiter_table.work(r, kind="transpose") for r in TRANSPOSES}
threads = {r: w.in_flight_per_sm // LOADS[r] for r, w in works.items()}  # resident threads per SM
print("bytes per thread x threads per block x blocks per SM = bytes in flight per SM")
for r, w in works.items():
    print(f"{r:17s}: {LOADS[r]:2d} x {threads[r] // w.blocks_per_sm:5,} x {w.blocks_per_sm} = {w.in_flight_per_sm:7,}")
most = ARCHS["9.0"].max_threads_per_sm  # the most threads a Hopper SM holds
if set(threads.values()) == {most}:
    print(f"Every rung fills the SM's {most:,} thread slots: bytes per thread is the only lever left.")

# %% [markdown]
# ## 4 · More bytes per thread
#
# * **`smem_padded_32x8`**: the padded tile with 32 x 8 threads, each issuing 4 independent loads
#   (16 bytes) before the barrier.
# * **`wide`**: a 64 x 64 padded tile, 16 x 16 threads; each loads four float4 along `src` rows
#   ([`LDG.128`](GLOSSARY.md#width-128): 64 bytes before the barrier) and stores four, gathered
#   from tile columns, along `dst` rows (`STG.128`). Sides must be multiples of 4.

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
# By the rule above, what share of the copy's GB/s will `smem_padded` reach (a fraction, e.g.
# 0.8)? Which rungs escape the latency ceiling, and do they then reach the copy?

# %%
my_share = None  # your prediction for smem_padded: replace None with a fraction of the copy's GB/s

# %%
share = {r: limiter.latency_fraction(w, m) for r, w in works.items()}
reads_only = min(1, limiter.LATENCY_DUTY * works["smem_padded"].in_flight_per_sm / (need / 2))
print("The model's share of the copy rate: " + ", ".join(f"{r} {s:.0%}" for r, s in share.items())
      + f". Counting the reads alone at the idle latency: smem_padded {reads_only:.0%}.")
figures.bytes_in_flight(TRANSPOSES, [w.in_flight_per_sm for w in works.values()], need, duty=limiter.LATENCY_DUTY);

# %% [markdown]
# ## Measure
#
# Every [rung](GLOSSARY.md#rung), `sgeam` and `copy_float4`, one run, 8192 x 8192 (256 MiB each
# way), timed back to back, without Python's [launch overhead](GLOSSARY.md#launch-overhead).

# %%
table = measure_step.compare_transpose(dict(ladder.TRANSPOSE), shape=(8192, 8192))
table

# %%
exercises.compare_prediction(my_share, table.gbs("smem_padded") / table.gbs("copy_float4"),
                             "smem_padded's share of the copy's GB/s at 8192x8192", table.source)

# %% [markdown]
# ## Why: the limiter model
#
# The ceilings come from the [profiler's](GLOSSARY.md#ncu) counts. Latency is DRAM's time over the
# model's share (empty for `sgeam`: bytes per thread unknown). The last
# [wave](GLOSSARY.md#wave)'s stretch: SMs idle while the last blocks finish. Shared counts
# without shared memory: Lab notes.

# %%
why = limiter_table.why(TRANSPOSES + ["cublas_sgeam", "copy"], kind="transpose", measured=table)
why

# %%
row = {r.rung: r for r in why.rows}
naive, pad, tile, x8, wide, copy, sgeam = (row[k] for k in ("naive", "smem_padded", "smem_tile", "smem_padded_32x8",
                                                             "wide", "copy", "cublas_sgeam"))
per32 = {k: works[k].warp_instructions / (8192 * 8192 / 32) for k in ("smem_padded_32x8", "wide")}
got = copy.measured_ms / pad.measured_ms  # smem_padded's measured share of the copy rate
closer = "the model's count" if abs(got - share["smem_padded"]) <= abs(got - reads_only) else "the reads-only count"
ms3 = lambda x: float(f"{x:.3g}")  # noqa: E731  (as printed, so the division below checks by hand)
added = (ms3(tile.measured_ms) - ms3(tile.predicted_ms)) / ms3(tile.ceilings_ms["shared"])
issue_busy = x8.utilization_pct["issue"] / 100
print(f"* smem_padded ({limiter_table.SHORT[pad.binding]}-bound): the model gave it {share['smem_padded']:.0%} of the "
      f"copy rate, the reads-only count {reads_only:.0%}; it reached {got:.0%}, nearer {closer}. No unit is busier than "
      f"{pad.busiest_pct:.0f}%: the SMs wait for DRAM.")
print(f"* smem_tile: predicted {tile.predicted_ms:.3g} ms like smem_padded (the same latency binds), so the model misses "
      f"the step between them: it took {tile.measured_ms:.3g} ms, "
      + (f"{ms3(tile.measured_ms) - ms3(tile.predicted_ms):.3g} ms more: ({tile.measured_ms:.3g} - {tile.predicted_ms:.3g}) / "
         f"{tile.ceilings_ms['shared']:.3g} = {added:.0%} of its {tile.ceilings_ms['shared']:.3g} ms of conflicted "
         "wavefronts, added on top of the waiting, not hidden under it." if 0 < added <= 1 else
         f"with {tile.ceilings_ms['shared']:.3g} ms of conflicted wavefronts on top of the waiting."))
print(f"* smem_padded_32x8: {'the whole copy rate in flight' if share['smem_padded_32x8'] >= 1 else 'more in flight'}; "
      f"bound by issue: {per32['smem_padded_32x8']:.0f} warp-instructions per 32 floats moved, 4 moving data "
      f"(global load, shared store and load, global store), the rest addresses, bounds and loop. wide spreads a "
      f"thread's set-up over 16 elements, not 4, and moves 4 floats per access: {per32['wide']:.0f} per 32 floats; "
      f"{limiter_table.SHORT[wide.binding]} binds.")
print(f"* The model lets the binding unit work every cycle. Issue's rate is the hardware's: at {issue_busy:.0%} busy, "
      f"smem_padded_32x8 should take 1/{issue_busy:.2f} = {1 / issue_busy:.2f}x its prediction; it took "
      f"{x8.ratio:.2f}x. DRAM's rate is the copy's ({copy.busiest_pct:.0f}% of DRAM's peak to the profiler), so "
      f"DRAM-bound kernels are measured against the copy: wide {wide.ratio:.2f}x, sgeam {sgeam.ratio:.2f}x, the copy "
      f"{copy.ratio:.2f}x. Naive {naive.ratio:.1f}x: Lab notes.")

# %% [markdown]
# ## Exercise 09-symmetrize: `dst = src + src.T` through a padded tile
#
# For a square matrix, `dst[r, c] = src[r, c] + src[c, r]`. The given kernel is right but reads
# `src[c, r]` strided, like the naive transpose. Make **every** warp-wide global access coalesced
# and the shared tile conflict-free (32 x 8 threads per 32 x 32 tile of `dst`).

# %%
import numpy as np
from gemm_lessons.teaching import exercises  # before numba.cuda: gemm_lessons picks the GPU or the simulator
from numba import cuda, float32

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
# ### 09-in-flight: Little's law for your kernel
#
# Give the pair: bytes each thread of your `symmetrize` loads before the barrier, and the share of
# the copy rate section 3's rule gives at 2,048 threads per SM.

# %%
### BEGIN SOLUTION: my_in_flight = None
per_thread = 4 * (TILE // ROWS)  # the staging loop's loads, a float32 each, before the barrier
my_in_flight = (per_thread, min(1, limiter.LATENCY_DUTY * per_thread * 2048 / need))
### END SOLUTION
exercises.check("09-in-flight", my_in_flight)

# %% [markdown]
# ## Takeaway
#
# * A memory-bound kernel is judged in GB/s against a copy of the same bytes.
# * A shared tile coalesces both global sides; padding to `[32][33]` makes its column read one
#   wavefront.
# * Little's law: streaming `B` bytes per second across a latency `L` takes `B x L` bytes in
#   flight; one float per thread is too few.
# * More bytes per thread lift the latency ceiling; 16-byte accesses then cut instructions until
#   DRAM binds.

# %% [markdown]
# ## Sources and further reading
#
# * Source article, re-told and tested: [[4]](REFERENCES.md#seed-003)
#   ([origins](REFERENCES.md#source-articles)).
# * Next: [REFERENCES.md, lesson 09](REFERENCES.md#lesson-09); Little's law on a GPU: Volkov's
#   thesis ([REFERENCES.md, lesson 00a](REFERENCES.md#lesson-00a)).
# * Terms: the [glossary](GLOSSARY.md) and the [primer](00a_primer.ipynb).

# %% [markdown]
# ## Lab notes
#
# **Two records on the simulator.** The measure table is a recorded run of the bench (its GPU is in
# the table's title); the Why table is the limiter run, on the GPU its title names. On a GPU that
# has a limiter record, the Why table's measured column is this notebook's run; a value marked
# with an asterisk would come from the limiter run, for a rung this notebook did not time.
#
# **The latency model's inputs.** `L` is a chain of dependent loads through DRAM on an idle GPU.
# Setting the loads against all of `B`, read and written, at that idle `L` equals counting the
# reads alone (`B / 2`; a store waits for nothing) against a latency under load twice the idle one.
# The duty is per thread: each thread's loads count as in flight half its time, so whatever
# phases the blocks on an SM are in, half their bytes are in flight on average.
#
# **Shared counts without shared memory.** `naive` and the copy use no shared memory, yet the
# profiler counts shared wavefronts for them (below): they give the Why table's small shared
# ceilings, far below the ceilings that bind. What the profiler counts there is not measured
# here; lesson 06 ("Wavefronts the addresses do not explain") also finds ncu counting more
# wavefronts than the addresses explain.

# %%
for r, w in {"naive": works["naive"], "copy": limiter_table.work("copy")}.items():
    warps = w.blocks * w.in_flight_per_sm / LOADS[r] / w.blocks_per_sm / 32
    print(f"{r}: {w.shared_wavefronts / warps:.0f} shared wavefronts per warp, a ceiling of "
          f"{row[r].ceilings_ms['shared']:.3g} ms")

# %% [markdown]
# **`DIAGONAL`.** `wide` can visit the tiles in another block order (`DIAGONAL=True`, skewed so
# that blocks running together do not all read the same rows). It is off in this lesson, and no
# cell here shows its time: `tools/transpose_suite.py` times it as `wide_diagonal`, one of the
# suite's candidate kernels (below).
#
# **What the model leaves.** The naive kernel takes several times its latency ceiling. The model
# gives every kernel the same half duty; how long naive's scattered stores (32 sectors a warp) keep
# its threads from loading is not measured here.
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
# `transpose_pairs.py` (8-byte accesses) when rows are a multiple of 4 and cols even;
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
# with the other candidate kernels; the record shown is the H100's: no H200 suite was run). A 1024 x 1024
# transpose moves 8 MiB, under 3 µs at that GPU's copy rate and less than one launch costs the
# host, so on small shapes the ratios compare two ways of calling a kernel more than the kernels
# themselves. The figure puts the large shapes first; those moving less than 64 MiB come last, in a
# grey band.

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
