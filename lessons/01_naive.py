# %% [markdown]
# # 01 · The naive kernel, and coalescing
#
# **Where we are.** Lesson 00 measured the bar, cuBLAS, against the GPU's FP32 peak. Now the
# floor: the most direct kernel there is, how threads map onto C, why the mapping's direction in
# memory (*coalescing*) decides the speed, and the limiter model that explains a speed.
#
# **Idea.** One thread per element of C. Thread (row, col) walks along row `row` of A and column
# `col` of B, K multiply-adds, and writes one number. A 2-D grid of 2-D blocks of 32 x 8 threads
# covers C; the grid is rounded up, so threads past the edge must do nothing (the guard
# `if row < M and col < N`). Every multiply-add loads its two operands from global memory:
# $2MNK$ loads in all.
#
# Which thread gets which element matters. A [warp](GLOSSARY.md#warp) is 32 threads with
# consecutive thread numbers, `threadIdx.x` counting fastest: here, 32 consecutive `threadIdx.x`
# with one `threadIdx.y`. They execute each load together, and memory serves them in 32-byte
# [sectors](GLOSSARY.md#sector) of 8 floats. At each step k of the walk (a *k-step*):
#
# * **Coalesced**: `threadIdx.x` walks the *columns* of C. The warp reads one float of A, the same
#   for all 32 threads (a [broadcast](GLOSSARY.md#broadcast): 1 sector), and 32 neighbouring
#   floats of B (128 bytes: 4 sectors).
# * **Uncoalesced**: `threadIdx.x` walks the *rows* of C. The warp reads 32 floats of A, one per
#   row, each in a sector of its own (32 sectors), and one float of B (1 sector).
#
# The figure draws one warp at k = 0 under each mapping, from the kernel's own index arithmetic.

# %%
import gemm_lessons as gl  # first: it chooses the GPU, or numba's CUDA simulator when there is none
from gemm_lessons.model import counting
from gemm_lessons.teaching import exercises, figures, limiter_table, measure_step
from gemm_lessons.kernels.sgemm import naive, naive_uncoalesced
import functools
import numpy as np
from numba import cuda
from IPython.display import display
# %matplotlib inline
print(gl.banner())

# %%
figures.naive_warp_map();

# %%
# NBVAL_CHECK_OUTPUT
for coalesced in (True, False):
    a, b = figures.naive_warp_addresses(coalesced, K=4096, N=4096)
    print(f"{'coalesced  ' if coalesced else 'uncoalesced'}: sectors per warp per k-step: "
          f"A {figures.sectors(a):>2}, B {figures.sectors(b):>2}")
print(f"global loads of a 4096^3 naive SGEMM: {counting.naive_global_loads(4096, 4096, 4096):,}")

# %% [markdown]
# ## Predict
#
# **The limiter model.** Each unit of the GPU sets a *ceiling*: the time the kernel would take if
# that unit alone limited it. The units: the FP32 lanes (one FFMA per lane per cycle), instruction
# [issue](GLOSSARY.md#issue) (each SM's four schedulers issue at most one warp instruction each
# per cycle), shared memory, L2 and DRAM bandwidth. The largest ceiling *binds* and is the
# prediction ([limiter model](GLOSSARY.md#limiter-model)). Its inputs are counts; the profiler
# took these of one launch of each kernel at 4096^3:

# %%
machine = limiter_table.record()["model"]["machine"]
for rung in ("naive", "naive_uncoalesced"):
    w = limiter_table.work(rung)
    print(f"{rung}: {w.ffma / 1e9:.1f} billion FFMAs, {w.warp_instructions / 1e9:.1f} billion warp instructions issued")
print(f"the GPU: {machine['sm_count']} SMs at {machine['clock_mhz']:,.0f} MHz; each SM issues up to "
      f"{machine['issue_per_sm_cycle']} warp instructions per cycle and has {machine['fp32_lanes_per_sm']} FP32 lanes")

# %% [markdown]
# Predict, in milliseconds: **(1)** the naive kernel's time if issuing its instructions is what
# limits it (warp instructions / (SMs x 4 x clock)); **(2)** the uncoalesced kernel's time. It
# issues exactly the same instructions, but its warps touch 33 sectors per k-step instead of 5.

# %%
my_naive_ms = None
my_uncoalesced_ms = None

# %% [markdown]
# ## The kernel
#
# The package's own kernel (`gemm_lessons/kernels/sgemm/naive.py`): edit it and re-run the cells
# below. `np.float32(0.0)` keeps the sum in float32 (numba would otherwise accumulate in float64,
# far slower on most GPUs); with `beta == 0` C is not read, as BLAS specifies.

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
# The uncoalesced kernel is the same code with the first two lines swapped: `threadIdx.x` now
# picks the row.

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
# Random matrices, mostly non-square and not multiples of 32 x 8 (the guard is exercised), with
# alpha and beta, against a float64 reference: the [relative error](GLOSSARY.md#relative-error)
# should be about float32 rounding. C starts as [poison](GLOSSARY.md#poison), so an element left
# unwritten is reported.

# %%
gl.check_all(functools.partial(naive.sgemm, kernel=sgemm_naive), name="sgemm_naive")

# %%
gl.check_all(functools.partial(naive_uncoalesced.sgemm, kernel=sgemm_naive_uncoalesced),
             name="sgemm_naive_uncoalesced")

# %% [markdown]
# ## Measure
#
# Both mappings and cuBLAS, in one run, on the same inputs at 4096^3.

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
# The model's ceilings (binding in bold), its prediction against the measurement, and the unit
# the profiler found busiest; when no unit reaches 60% of its peak the warps were mostly waiting,
# which the table calls *latency*.

# %%
why = limiter_table.why(["naive", "naive_uncoalesced", "cublas"], measured=table)
why

# %%
n, u, c = why.row("naive"), why.row("naive_uncoalesced"), why.row("cublas")
per_ffma = {r: w.warp_instructions / (w.ffma / 32) for r, w in
            ((r, limiter_table.work(r)) for r in ("naive", "cublas"))}
busy_n, busy_u = n.utilization_pct["issue"] / 100, u.utilization_pct["issue"] / 100
print(f"naive is bound by instruction issue: {n.ceilings_ms['issue']:.0f} ms of issuing against "
      f"{n.ceilings_ms['fp32']:.1f} ms for its FFMAs alone, because it issues {per_ffma['naive']:.1f} warp "
      f"instructions per warp FFMA (cuBLAS: {per_ffma['cublas']:.2f}). "
      + (f"The profiler agrees: its busiest unit is issue, {busy_n:.0%} busy. "
         if n.agrees else f"The profiler's busiest unit is {limiter_table.SHORT.get(n.busiest, n.busiest)} "
                          f"({n.busiest_pct:.0f}%). ")
      + (f"The model assumes an issue in every cycle, the schedulers issued in {busy_n:.0%}: hence a measurement "
         f"{n.ratio:.2f}x the prediction (1 / {busy_n:.2f} = {1 / busy_n:.2f})." if abs(n.ratio * busy_n - 1) < 0.1
         else f"The measurement is {n.ratio:.2f}x the prediction; the schedulers issued in {busy_n:.0%} of cycles."))
near = max(abs(u.ceilings_ms[k] / n.ceilings_ms[k] - 1) for k in ("l2", "dram"))
print(f"naive_uncoalesced issues the same instructions, and its L2 and DRAM ceilings are within {near:.0%} of "
      f"naive's, so the model predicts the same {u.predicted_ms:.0f} ms. It took {u.measured_ms:.0f} ms, "
      f"{u.ratio:.1f}x that, and the profiler finds no unit near its peak: issue {busy_u:.0%} busy "
      f"(1 / {busy_u:.2f} = {1 / busy_u:.1f}). Its warps were waiting.")

# %% [markdown]
# Per k-step a naive thread needs one FFMA and two loads; the other instructions are integer
# arithmetic that turns (row, k) and (k, col) into two 64-bit addresses, and the loop's counter.
# They set the coalesced kernel's time. The later rungs cut the instructions per FFMA towards
# cuBLAS's.
#
# The uncoalesced warps wait for their loads. Each warp load of A touches 32 sectors in 32
# cache lines, not 4 sectors of one. The L1 cache serves a load in passes, each reaching a limited
# number of cache lines, so a scattered load holds the L1 for many cycles while other warps' loads
# queue behind it. The model counts instructions and the bytes reaching L2 and DRAM, nearly equal
# for the two mappings; it has no ceiling for the L1's passes: that is its miss here. The
# profiler's count of sectors, and what the warps waited for:

# %%
prof = gl.profile({"naive": functools.partial(naive.sgemm, kernel=sgemm_naive),
                   "naive_uncoalesced": functools.partial(naive_uncoalesced.sgemm, kernel=sgemm_naive_uncoalesced)},
                  size=size, lesson="01")
waits = {"lg_throttle": "the queue of global-memory instructions was full",
         "long_scoreboard": "waiting for data from global memory",
         "not_selected": "ready, but another warp was issued",
         "math_pipe_throttle": "the arithmetic unit was busy"}
s_n, s_u = prof.value("naive", "sectors_per_request"), prof.value("naive_uncoalesced", "sectors_per_request")
stalls = prof.top_stalls("naive_uncoalesced", 2)
if s_n and s_u:
    print(f"Sectors per warp load instruction: naive {s_n:.2f}, naive_uncoalesced {s_u:.2f} (the figure's 5 and "
          f"33 per k-step, over its two loads: {5 / 2:.2f} and {33 / 2:.2f}).")
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
# Launch one thread per element of C in **one** dimension: blocks of 256 threads, enough for
# M x N threads (`exercises.launch_1d`). Inside, `i = cuda.grid(1)` numbers the threads 0, 1,
# 2, ...; a warp is 32 consecutive `i`. Turn `i` into `(row, col)`, guard the threads past M x N,
# and compute `C[row, col]` (alpha and beta as above; C is not read when beta is 0).
#
# Two ways of turning `i` into `(row, col)` give the right result; only one is coalesced. The
# check compares with the float64 reference, then counts, on the simulator, the sectors each warp
# touches per k-step.

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
# * One thread per element of C: a 2-D grid of 2-D blocks, rounded up, and a guard for the edge.
# * Let `threadIdx.x` walk the contiguous dimension: a warp then touches 1 + 4 sectors per k-step,
#   not 32 + 1, and the same instructions run far faster.
# * The limiter model: each unit's ceiling is the time it alone would allow; the largest binds.
#   The measurement exceeds it by the cycles that unit sits idle.
# * The coalesced naive kernel is bound by instruction issue: dozens of instructions per FFMA,
#   mostly address arithmetic. The uncoalesced one waits on the L1, which the model does not count.
# * $2MNK$ loads from global memory, one per operand; lesson 02 stages tiles of A and B in shared
#   memory so that each load serves many threads.

# %% [markdown]
# ## Sources and further reading
#
# * The source articles this lesson re-tells and tests: [[1]](REFERENCES.md#seed-000), [[2]](REFERENCES.md#seed-001), [[3]](REFERENCES.md#seed-002), [[5]](REFERENCES.md#seed-004) (their origins and what each
#   covers are in [REFERENCES.md](REFERENCES.md#source-articles)).
# * What to read next: [REFERENCES.md, lesson 01](REFERENCES.md#lesson-01).
# * Terms: the [glossary](GLOSSARY.md); the execution model is introduced in the
#   [primer](00a_primer.ipynb).

# %% [markdown]
# ## Lab notes
#
# * **Where the numbers come from.** The Why table's ceilings and profiler readings come from one
#   limiter run (`python -m gemm_lessons.runs.limiter`, results/limiter-nvidia-h200.json and its
#   profile). Its measured column is this notebook's run when that ran on the same GPU, else the
#   limiter run's time (marked \*). The sector and stall readings come from `gl.profile`: measured
#   now on a GPU with Nsight Compute, recorded counters otherwise (its source is `prof.source`).
# * **The instructions per FFMA, in the code.** `sgemm_naive.inspect_sass()` on a GPU (or
#   `gemm_lessons.instruments.offline_sass.compile_sass` without one, for sm_90) lists the machine
#   code. The compiler unrolls the k-loop four times and adds a loop for the leftover
#   k-steps; besides the `FFMA` and the two `LDG.E` of each k-step, both loops hold integer
#   instructions (`IMAD.WIDE`, `LEA`, `IADD3`, and uniform ones such as `UIADD3`, `USEL`): numba
#   indexes with 64-bit integers, handles negative indices, and counts the `range` in 64 bits.
# * **The caches.** Each value of A is loaded N times and each value of B M times. The first
#   lines below compare the bytes the loads ask for with those that reached the L2 and DRAM in the
#   limiter run's profile: the L1 and L2 serve most of them, for either mapping.
# * **The L1's passes.** Nsight Compute calls them *wavefronts* of the L1TEX unit: "if not all
#   cache lines or sectors can be accessed in a single wavefront, multiple wavefronts are created
#   and sent for processing one by one" (NVIDIA's answer in
#   [this forum thread](https://forums.developer.nvidia.com/t/wahts-the-difference-between-wavefronts-and-sectors-req/165293/4);
#   the Kernel Profiling Guide, "Memory Workload Analysis"). The records hold no L1 counter, so
#   the model has no L1 ceiling. An untested hypothesis: one pass per cache line a warp load
#   touches, one pass per SM per cycle. The last lines compute the time that would allow; the
#   profiler's count of L1TEX wavefronts for both kernels would test it.

# %%
asked_gb = 2 * 4096 ** 3 * 4 / 1e9  # two 4-byte loads per multiply-add
for rung in ("naive", "naive_uncoalesced"):
    w = limiter_table.work(rung)
    print(f"{rung}: loads ask for {asked_gb:,.0f} GB; {w.l2_bytes / 1e9:,.0f} GB reached the L2, "
          f"{w.dram_bytes / 1e9:,.0f} GB moved to or from DRAM")
passes = {"naive": 1 + 1, "naive_uncoalesced": 32 + 1}  # cache lines per warp per k-step: A, then B
warps = 4096 * 4096 // 32
for rung, p in passes.items():
    t_ms = warps * 4096 * p / (machine["sm_count"] * machine["clock_mhz"] * 1e6) * 1e3
    print(f"{rung}: {p} L1 passes per k-step -> {t_ms:.0f} ms at one pass per SM per cycle "
          f"(issue ceiling {why.row(rung).ceilings_ms['issue']:.0f} ms, measured {why.row(rung).measured_ms:.0f} ms)")
