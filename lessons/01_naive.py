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
# # 01 · The naive kernel, and coalescing
#
# **Where we are.** Lesson 00 built the [limiter model](GLOSSARY.md#limiter-model): each unit of
# the GPU allows a shortest time (its *ceiling*); the largest *binds*, stretched by the last
# [wave](GLOSSARY.md#wave) of blocks. Here it meets the first [rung](GLOSSARY.md#rung), the most
# direct SGEMM, and a cost it does not count: how threads walk memory (*coalescing*).
#
# **Idea.** One thread per element of C: thread (row, col) walks row `row` of A and column `col` of
# B, K multiply-adds (one [FFMA](GLOSSARY.md#ffma) each). Blocks of 32 x 8 threads cover C in a 2-D
# grid, rounded up, so the guard `if row < M and col < N` idles the threads past the edge. Each
# multiply-add loads two operands from global memory: $2MNK$ loads.
#
# Which thread gets which element matters. A [warp](GLOSSARY.md#warp) is 32 threads with
# consecutive thread numbers (`threadIdx.x` counts fastest) that execute each load together: here,
# 32 consecutive `threadIdx.x` with one `threadIdx.y`. Memory moves 32-byte
# [sectors](GLOSSARY.md#sector) of 8 floats; the [L1 cache](GLOSSARY.md#l1) of each
# [SM](GLOSSARY.md#sm) serves a warp's load in *passes*, one per 128-byte
# [cache line](GLOSSARY.md#cache-line) (4 sectors) it touches. At each step k of the walk (a
# [k-step](GLOSSARY.md#k-step)):
#
# * **Coalesced**: `threadIdx.x` walks the *columns* of C. The warp reads one float of A for all 32
#   threads (a [broadcast](GLOSSARY.md#broadcast): 1 sector) and 32 neighbouring floats of B
#   (4 sectors): one cache line each, 2 passes.
# * **Uncoalesced**: `threadIdx.x` walks the *rows* of C. The warp reads 32 floats of A, K floats
#   apart (32 sectors in 32 cache lines), and one float of B (1 line): 33 passes.
#
# The figure: one warp at k = 0, under each mapping.

# %%
import gemm_lessons as gl  # first: it chooses the GPU, or numba's CUDA simulator when there is none
from gemm_lessons.model import counting
from gemm_lessons.teaching import exercises, figures, limiter_table, measure_step
from gemm_lessons.kernels.sgemm import naive, naive_uncoalesced
import functools
import math
import numpy as np
from numba import cuda
from IPython.display import display
# %matplotlib inline
print(gl.banner())

# %%
figures.naive_warp_map();

# %%
# NBVAL_CHECK_OUTPUT
lines = {}  # cache lines one warp touches per k-step, A and B
for coalesced in (True, False):
    a, b = figures.naive_warp_addresses(coalesced, K=4096, N=4096)
    lines_a, lines_b = figures.cache_lines(a), figures.cache_lines(b)
    lines["naive" if coalesced else "naive_uncoalesced"] = lines_a + lines_b
    print(f"{'coalesced  ' if coalesced else 'uncoalesced'}: per warp per k-step: "
          f"sectors A {figures.sectors(a):>2}, B {figures.sectors(b):>2}; cache lines A {lines_a:>2}, B {lines_b:>2}")
print(f"global loads of a 4096^3 naive SGEMM: {counting.naive_global_loads(4096, 4096, 4096):,}")

# %% [markdown]
# ## Predict
#
# The [profiler](GLOSSARY.md#ncu)'s counts from one launch of each kernel at 4096^3:

# %%
machine = limiter_table.record()["model"]["machine"]
for rung in ("naive", "naive_uncoalesced"):
    w = limiter_table.work(rung)
    print(f"{rung}: {w.ffma / 1e9:.1f} billion thread FFMAs (M·N·K), "
          f"{w.warp_instructions / 1e9:.1f} billion warp instructions issued")
warps = 4096 * 4096 // 32
print(f"the GPU: {machine['sm_count']} SMs at {machine['clock_mhz']:,.0f} MHz; each SM issues up to "
      f"{machine['issue_per_sm_cycle']} warp instructions per cycle and has {machine['fp32_lanes_per_sm']} FP32 lanes")
print(f"the launch: {warps:,} warps, each walking 4,096 k-steps")

# %% [markdown]
# Predict, in milliseconds:
#
# **(1)** The naive kernel's time if instruction issue limits it:
# warp instructions / (SMs x 4 x clock).
#
# **(2)** The uncoalesced kernel issues the same instructions, so the model predicts the same time.
# But its warps touch 33 cache lines per k-step, not 2. If the L1 makes one pass per SM per cycle,
# the passes alone take warps x k-steps x 33 / (SMs x clock). Write the larger of this and (1).

# %%
my_naive_ms = None
my_uncoalesced_ms = None

# %% [markdown]
# ## The kernel
#
# The package's kernel (`gemm_lessons/kernels/sgemm/naive.py`), copied: edit this cell and re-run
# the cells below. `np.float32(0.0)` keeps the sum in float32; numba would otherwise accumulate in
# float64, far slower on most GPUs.
# %%
# source: gemm_lessons/kernels/sgemm/naive.py  (the package runs this same code; a test keeps the two identical)
@cuda.jit
def sgemm_naive(A, B, C, alpha, beta):
    # threadIdx.x walks the columns of C: the 32 threads of a warp read 32 neighbouring
    # floats of B (one coalesced 128-byte request) and the same float of A (a broadcast).
    col = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    row = cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y
    M, K = A.shape
    N = B.shape[1]
    if row < M and col < N:  # the grid is rounded up: guard the edge threads
        acc = np.float32(0.0)
        for k in range(K):
            acc += A[row, k] * B[k, col]
        if beta == 0:  # as in BLAS, C is not read when beta == 0
            C[row, col] = alpha * acc
        else:
            C[row, col] = alpha * acc + beta * C[row, col]


# %% [markdown]
# The uncoalesced kernel swaps `row` and `col` in its first two lines.

# %%
# source: gemm_lessons/kernels/sgemm/naive_uncoalesced.py  (the package runs this same code; a test keeps the two identical)
@cuda.jit
def sgemm_naive_uncoalesced(A, B, C, alpha, beta):
    # threadIdx.x walks the ROWS of C: a warp's 32 threads read 32 floats of A that are K
    # floats apart (32 separate sectors) and write C with a stride of N floats.
    row = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    col = cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y
    M, K = A.shape
    N = B.shape[1]
    if row < M and col < N:
        acc = np.float32(0.0)
        for k in range(K):
            acc += A[row, k] * B[k, col]
        if beta == 0:
            C[row, col] = alpha * acc
        else:
            C[row, col] = alpha * acc + beta * C[row, col]


# %% [markdown]
# ## Check
#
# Random matrices, their sizes not multiples of 32 x 8 (exercising the guard), against a
# float64 reference: the [relative error](GLOSSARY.md#relative-error) should be about float32
# rounding. C starts as [poison](GLOSSARY.md#poison), so an unwritten element shows.

# %%
gl.check_all(functools.partial(naive.sgemm, kernel=sgemm_naive), name="sgemm_naive")

# %%
gl.check_all(functools.partial(naive_uncoalesced.sgemm, kernel=sgemm_naive_uncoalesced),
             name="sgemm_naive_uncoalesced")

# %% [markdown]
# ## Measure
#
# Both mappings and cuBLAS, in one run at 4096^3.

# %%
size = (4096, 4096, 4096)
table = measure_step.compare({
    "naive": functools.partial(naive.sgemm, kernel=sgemm_naive),
    "naive_uncoalesced": functools.partial(naive_uncoalesced.sgemm, kernel=sgemm_naive_uncoalesced),
}, size=size)
table

# %%
ms = {r.kernel: 2 * r.M * r.N * r.K / (r.gflops * 1e9) * 1e3 for r in table.rows}
display(exercises.compare_prediction(my_naive_ms, ms["naive"], "naive, ms", table.source),
        exercises.compare_prediction(my_uncoalesced_ms, ms["naive_uncoalesced"], "naive_uncoalesced, ms",
                                     table.source))
print(f"Same instructions, other mapping: coalesced ran {table.speedup('naive', 'naive_uncoalesced'):.1f}x "
      f"faster than uncoalesced. cuBLAS ran {table.speedup('cublas', 'naive'):.0f}x faster than naive.")

# %% [markdown]
# ## Why
#
# The last column is the unit the profiler found busiest; *latency* there means no unit the model
# counts was over 60% busy, so the warps waited on something it does not count. (The shared column:
# neither kernel uses shared memory; Lab notes.) An SM holds at most 2,048 threads: 8 blocks of 256
# ([blocks/SM](GLOSSARY.md#blocks-per-sm)), which sets the waves below.

# %%
why = limiter_table.why(["naive", "naive_uncoalesced", "cublas"], measured=table)
why

# %%
n, u = why.row("naive"), why.row("naive_uncoalesced")
work = {r: limiter_table.work(r) for r in ("naive", "naive_uncoalesced", "cublas")}
per_ffma = {r: w.warp_instructions / (w.ffma / 32) for r, w in work.items()}
waves = work["naive"].blocks / (machine["sm_count"] * work["naive"].blocks_per_sm)
busy_n = round(n.utilization_pct["issue"] / 100, 3)  # rounded as printed, so the division below checks by hand
print(f"naive: issue binds, {n.ceilings_ms['issue']:.0f} ms against {n.ceilings_ms['fp32']:.1f} ms for its FFMAs "
      f"alone. It issues {per_ffma['naive']:.1f} warp instructions per warp FFMA (cuBLAS: {per_ffma['cublas']:.2f}): "
      f"besides the FFMA and its two loads, {per_ffma['naive'] - 3:.1f} integer and loop instructions per k-step "
      "(numba computes each address in 64-bit integers, handles negative indices, and counts the loop in 64 bits).")
print(f"Predicted: {n.ceilings_ms['issue']:.1f} ms x the last wave's stretch. {work['naive'].blocks:,} blocks, "
      f"{work['naive'].blocks_per_sm} per SM at a time, are {waves:.2f} waves' worth and run in {math.ceil(waves)} "
      f"(x{n.tail:.3f}): {n.predicted_ms:.1f} ms.")
if n.agrees and abs(n.ratio * busy_n - 1) < 0.1:
    print(f"Measured: {n.measured_ms:.0f} ms, {n.ratio:.2f}x the prediction. The model assumes an issue every cycle; "
          f"the profiler found the schedulers issuing in {busy_n:.1%} of cycles (1 / {busy_n:.3f} = {1 / busy_n:.2f}).")
else:
    print(f"Measured: {n.measured_ms:.0f} ms, {n.ratio:.2f}x the prediction; the profiler found the schedulers "
          f"issuing in {busy_n:.1%} of cycles, and {limiter_table.SHORT[n.busiest]} the busiest unit.")
near = max(abs(u.ceilings_ms[k] / n.ceilings_ms[k] - 1) for k in ("l2", "dram"))
top = max(u.utilization_pct, key=u.utilization_pct.get)
print(f"naive_uncoalesced issues the same instructions and moves the same bytes to L2 and DRAM (within {near:.0%}), "
      f"so the model predicts the same {u.predicted_ms:.0f} ms. It took {u.measured_ms:.0f} ms, {u.ratio:.1f}x that, "
      + (f"and no unit the model counts was busy (the table's latency; the highest, {limiter_table.SHORT[top]}, "
         f"{u.utilization_pct[top]:.1f}%)." if u.busiest == "latency" else
         f"and its busiest unit, {limiter_table.SHORT[u.busiest]}, was {u.busiest_pct:.1f}% busy."))

# %% [markdown]
# The miss is the L1's passes, which the model does not count. Count them as in prediction (2):
# one per cache line a warp load touches, one pass per SM per cycle.

# %%
clock_hz = machine["clock_mhz"] * 1e6
l1_ms = {r: warps * 4096 * p / (machine["sm_count"] * clock_hz) * 1e3 for r, p in lines.items()}
print(f"naive: {lines['naive']} passes per k-step allow {l1_ms['naive']:.0f} ms, "
      + (f"under its issue ceiling ({n.ceilings_ms['issue']:.0f} ms): issue still binds."
         if l1_ms["naive"] < n.ceilings_ms["issue"] else f"above its issue ceiling ({n.ceilings_ms['issue']:.0f} ms)."))
r_u = u.measured_ms / l1_ms["naive_uncoalesced"]
print(f"naive_uncoalesced: {lines['naive_uncoalesced']} passes per k-step allow {l1_ms['naive_uncoalesced']:.0f} ms; "
      f"it took {u.measured_ms:.0f} ms, {r_u:.2f}x that"
      + (": the L1's passes are its limiter." if 0.9 <= r_u < 1.6 else "."))

# %% [markdown]
# The profiler's readings: sectors, [L1](GLOSSARY.md#l1) hit rate, and what the uncoalesced warps
# waited for.

# %%
prof = gl.profile({"naive": functools.partial(naive.sgemm, kernel=sgemm_naive),
                   "naive_uncoalesced": functools.partial(naive_uncoalesced.sgemm, kernel=sgemm_naive_uncoalesced)},
                  size=size, lesson="01")
waits = {"lg_throttle": "the L1's queue of global-memory instructions was full",
         "long_scoreboard": "waiting for data from global memory",
         "not_selected": "ready, but another warp was issued",
         "math_pipe_throttle": "the arithmetic unit was busy"}
s_n, s_u = prof.value("naive", "sectors_per_request"), prof.value("naive_uncoalesced", "sectors_per_request")
h_n, h_u = prof.value("naive", "l1_hit"), prof.value("naive_uncoalesced", "l1_hit")
stalls = prof.top_stalls("naive_uncoalesced", 2)
if s_n and s_u:
    print(f"Sectors per warp load instruction: naive {s_n:.2f}, naive_uncoalesced {s_u:.2f} (the figure's 5 and "
          f"33 per k-step, over its two loads: {5 / 2:.2f} and {33 / 2:.2f}).")
if h_n and h_u:
    print(f"L1 hit rate: naive {h_n:.1f}%, naive_uncoalesced {h_u:.1f}%"
          + (": the uncoalesced kernel finds more of its sectors in the L1, yet runs slower. Its cost is the "
             "passes, not misses." if h_u >= h_n else "."))
if stalls:
    print("naive_uncoalesced's warps were stalled on " + "; ".join(
        f"{r.replace('_', ' ')} {p:.0f}% of cycles ({waits.get(r, 'see the glossary')})" for r, p in stalls) + ".")

# %% [markdown]
# ## Exercises
#
# ### 01-sectors
# The coalesced kernel, launched with blocks of **16 x 16** threads instead of 32 x 8
# (`threadIdx.x` still walks the columns of C; K = N = 4096, and each block's first column is a
# multiple of 16). At one k-step, how many 32-byte sectors does one warp touch in A and in B?
# Answer with a pair `(sectors_of_A, sectors_of_B)`.
# %%
# NBVAL_CHECK_OUTPUT
### BEGIN SOLUTION: answer = None
answer = (2, 2)  # two rows of 16 threads: 2 floats of A, 16 KiB apart; 16 neighbouring floats of B, 64 bytes
### END SOLUTION
exercises.check("01-sectors", answer)


# %% [markdown]
# ### 01-kernel
# The check launches one thread per element of C in **one** dimension: blocks of 256, M x N threads
# in all (`exercises.launch_1d`). Inside, `i = cuda.grid(1)` numbers the threads 0, 1, 2, ...; a warp
# is 32 consecutive `i`. Turn `i` into `(row, col)`, guard the threads past M x N, and compute
# `C[row, col]` (alpha and beta as above; C is not read when beta is 0).
#
# Two ways of turning `i` into `(row, col)` give the right result; only one is coalesced. The
# check tests the result, then counts the sectors each warp touches per k-step.

# %%
# NBVAL_CHECK_OUTPUT
@cuda.jit
def my_naive_1d(A, B, C, alpha, beta):
    ### BEGIN SOLUTION
    i = cuda.grid(1)
    M, N = C.shape
    if i < M * N:
        row, col = i // N, i % N  # 32 consecutive i: neighbouring columns of one row (or two)
        acc = np.float32(0.0)
        for k in range(A.shape[1]):
            acc += A[row, k] * B[k, col]
        if beta == 0:
            C[row, col] = alpha * acc
        else:
            C[row, col] = alpha * acc + beta * C[row, col]
    ### END SOLUTION


exercises.check("01-kernel", my_naive_1d)

# %% [markdown]
# ## Takeaway
#
# * One thread per element of C: a rounded-up 2-D grid of 2-D blocks, and a guard for the edge.
# * Let `threadIdx.x` walk the contiguous dimension: a warp touches 2 cache lines per k-step, not
#   33, and the same instructions run far faster.
# * Measured time exceeds the prediction by the cycles the binding unit sits idle.
# * The coalesced kernel is bound by instruction issue: dozens of instructions per FFMA, mostly
#   64-bit address arithmetic, which later rungs cut towards cuBLAS's.
# * The uncoalesced one is bound by the L1's passes, one per cache line: counting them gives its
#   time.

# %% [markdown]
# ## Sources and further reading
#
# * The source articles this lesson re-tells and tests: [[1]](REFERENCES.md#seed-000), [[2]](REFERENCES.md#seed-001), [[3]](REFERENCES.md#seed-002), [[5]](REFERENCES.md#seed-004)
#   ([what each covers](REFERENCES.md#source-articles)).
# * What to read next: [REFERENCES.md, lesson 01](REFERENCES.md#lesson-01).
# * Terms: the [glossary](GLOSSARY.md) and the [primer](00a_primer.ipynb).

# %% [markdown]
# ## Lab notes
#
# * **Where the numbers come from.** The Why table's ceilings and profiler readings come from one
#   limiter run (`python -m gemm_lessons.runs.limiter`, results/limiter-nvidia-h200.json and its
#   profile). Its measured column is this notebook's run when that ran on the same GPU, else the
#   limiter run's time (marked \*). The sector, hit-rate and stall readings come from `gl.profile`:
#   measured now on a GPU with Nsight Compute, recorded counters otherwise (its source is
#   `prof.source`).
# * **The instructions per FFMA, in the code.** `sgemm_naive.inspect_sass()` on a GPU (or
#   `gemm_lessons.instruments.offline_sass.compile_sass` without one, for sm_90) lists the machine
#   code. The compiler unrolls the k-loop four times and adds a loop for the leftover
#   k-steps; besides the `FFMA` and the two `LDG.E` of each k-step, both loops hold integer
#   instructions (`IMAD.WIDE`, `LEA`, `IADD3`, and uniform ones such as `UIADD3`, `USEL`): numba
#   indexes with 64-bit integers, handles negative indices, and counts the `range` in 64 bits.
# * **The L1's passes.** Nsight Compute calls them *wavefronts* of the L1TEX unit: "if not all
#   cache lines or sectors can be accessed in a single wavefront, multiple wavefronts are created
#   and sent for processing one by one" (NVIDIA's answer in
#   [this forum thread](https://forums.developer.nvidia.com/t/wahts-the-difference-between-wavefronts-and-sectors-req/165293/4);
#   the Kernel Profiling Guide, "Memory Workload Analysis"). The records hold no count of the
#   L1's wavefronts for global loads, so the model has no L1 ceiling, and the Why's rate (one
#   pass per cache line, one per SM per cycle) is checked only by the time it predicts. The
#   profiler's L1TEX wavefront count for global loads, on both kernels, would test it directly.
# * **The shared column.** Neither kernel uses shared memory, yet the profiler counts
#   shared-memory wavefronts for both (below): a few per warp, while each warp issues 8,192 loads,
#   so they come with the warp, not with its loads. Their ceiling, microseconds, lies far below
#   the milliseconds that bind. What the profiler counts there is not settled (lesson 09's Lab
#   notes find the same in the transposes).

# %%
for rung in ("naive", "naive_uncoalesced"):
    print(f"{rung}: {work[rung].shared_wavefronts / warps:.0f} shared wavefronts per warp, a ceiling of "
          f"{why.row(rung).ceilings_ms['shared'] * 1e3:.0f} µs")

# %% [markdown]
# * **The caches.** Each value of A is loaded N times and each value of B M times. The lines below
#   split the bytes the loads ask for between the L1, the L2 and DRAM, from the limiter run's
#   profile. They are shares of bytes, the same in both kernels; the L1 hit rates above are shares
#   of sectors, 5 or 33 per warp per k-step for those bytes, so the two readings differ.

# %%
asked_gb = 2 * 4096 ** 3 * 4 / 1e9  # two 4-byte loads per multiply-add
for rung in ("naive", "naive_uncoalesced"):
    w = work[rung]
    print(f"{rung}: loads ask for {asked_gb:,.0f} GB; the L1 serves {1 - w.l2_bytes / 1e9 / asked_gb:.0%} of them. "
          f"Of the {w.l2_bytes / 1e9:,.0f} GB that reach the L2, {w.dram_bytes / 1e9:,.0f} GB move to or from DRAM.")
