# %% [markdown]
# # 04 · 2-D register tiling: the outer product
#
# **Where we are.** Lesson 03's threads reuse each `sB` value TM times, but still read one `sA`
# value per FMA.

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
measure_step.recorded(["reg1d", "reg2d", "cublas"])

# %% [markdown]
# ## Idea: TM x TN results per thread
#
# Give each thread a TM x TN patch of C. At each k it loads TM values of A (a column of the A
# tile) and TN values of B (a row of the B tile) into registers and forms all TM x TN products:
# an **outer product**. Reads: TM + TN. FMAs: TM x TN.

# %%
figures.outer_product(8, 8);

# %% [markdown]
# **Predict.** For an x-by-y patch the compute-to-memory ratio is
# $$\frac{2xy}{x + y} = \frac{2}{1/x + 1/y}\ \text{FLOP per value read.}$$
# For a fixed number of results $xy$ (a fixed number of accumulators), it is largest when the
# patch is square, $x = y$; a bigger patch raises it too. The series uses the classic
# configuration: a 128x128 tile of C per block, BK = 8, and 8x8 results per thread, so 256
# threads per block.

# %%
# NBVAL_CHECK_OUTPUT
for x, y in [(1, 1), (16, 1), (4, 4), (16, 4), (8, 8)]:
    print(f"{x:>2} x {y:<2} patch: {x * y:>3} FMAs from {x + y:>2} reads, "
          f"ratio 2/(1/x+1/y) = {counting.compute_to_memory_ratio(x, y):.2f} FLOP per value")


# %% [markdown]
# ## The kernel
#
# Two choices in this kernel matter more than they look:
#
# * **Where a thread's 64 results lie.** Side by side (an 8x8 square) is the obvious choice, but
#   then the 16 threads along a row of the block read `sB` at addresses 8 floats apart, and
#   several of them hit the same shared-memory bank (lesson 06 counts them). With `SPREAD`,
#   a thread's 8 columns are 16 apart instead, and neighbouring threads read neighbouring words.
#   Whether that pays depends on what else limits the kernel: compare `reg2d` with
#   `reg2d_contiguous` in the table below.
# * **Registers.** 64 accumulators + 16 operands + addresses: left alone, the compiler used more
#   than 128 registers per thread, and an SM (65,536 registers) then holds only one 256-thread
#   block. `MAX_REGISTERS=128` lets two blocks share an SM. numba's
#   [`max_registers`](GLOSSARY.md#max-registers) caps the registers per thread of this one kernel,
#   as CUDA C++'s
#   [`__maxnreg__`](https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#maximum-number-of-registers-per-thread)
#   does; nvcc's `-maxrregcount` caps every kernel of a file, and
#   [`__launch_bounds__(256, 2)`](https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#launch-bounds)
#   states a goal, blocks of at most 256 threads with at least 2 of them per SM, from which the
#   compiler derives a cap.

# %%
# source: gemm_lessons/kernels/sgemm/reg2d.py  (the package runs this same code; a test keeps the two identical)
def make_sgemm_reg2d(BM=128, BN=128, BK=8, TM=8, TN=8, SPREAD=True, MAX_REGISTERS=128):
    """BM x BN tile of C per block, TM x TN results per thread.  With SPREAD, a thread's
    TM rows are BM//TM apart and its TN columns BN//TN apart (instead of side by side), so
    that the threads of a warp read neighbouring shared-memory words (lesson 06 says why).
    MAX_REGISTERS caps registers per thread so that two 256-thread blocks fit on an SM."""
    THREADS = (BM // TM) * (BN // TN)
    A_LOADS = BM * BK // THREADS  # values of the A tile each thread stages
    B_LOADS = BK * BN // THREADS
    ACC = TM * TN  # array shapes must be compile-time constants: computed here
    ROW_STEP = BM // TM if SPREAD else 1
    COL_STEP = BN // TN if SPREAD else 1
    ROW_SPAN = 1 if SPREAD else TM
    COL_SPAN = 1 if SPREAD else TN

    @jit(max_registers=MAX_REGISTERS)  # cuda.jit; the cap is dropped on the simulator
    def sgemm_reg2d(A, B, C, alpha, beta):
        sA = cuda.shared.array((BM, BK), float32)
        sB = cuda.shared.array((BK, BN), float32)
        acc = cuda.local.array(ACC, float32)
        a_reg = cuda.local.array(TM, float32)
        b_reg = cuda.local.array(TN, float32)
        for i in range(ACC):
            acc[i] = 0.0
        tid = cuda.threadIdx.x
        row0 = cuda.blockIdx.y * BM
        col0 = cuda.blockIdx.x * BN
        M, K = A.shape
        N = B.shape[1]
        # this thread owns rows t_row + i*ROW_STEP and columns t_col + j*COL_STEP of the tile
        t_row = (tid // (BN // TN)) * ROW_SPAN
        t_col = (tid % (BN // TN)) * COL_SPAN
        for k0 in range(0, K, BK):
            for l in range(A_LOADS):  # consecutive threads stage consecutive values
                idx = tid + l * THREADS
                r, c = idx // BK, idx % BK
                sA[r, c] = A[row0 + r, k0 + c] if row0 + r < M and k0 + c < K else np.float32(0.0)
            for l in range(B_LOADS):
                idx = tid + l * THREADS
                r, c = idx // BN, idx % BN
                sB[r, c] = B[k0 + r, col0 + c] if k0 + r < K and col0 + c < N else np.float32(0.0)
            cuda.syncthreads()
            for k in range(BK):
                for i in range(TM):  # a column of the A tile and a row of the B tile ...
                    a_reg[i] = sA[t_row + i * ROW_STEP, k]
                for j in range(TN):
                    b_reg[j] = sB[k, t_col + j * COL_STEP]
                for i in range(TM):  # ... make TM*TN products from TM+TN shared reads
                    for j in range(TN):
                        acc[i * TN + j] += a_reg[i] * b_reg[j]
            cuda.syncthreads()
        for i in range(TM):
            row = row0 + t_row + i * ROW_STEP
            for j in range(TN):
                col = col0 + t_col + j * COL_STEP
                if row < M and col < N:
                    if beta == 0:
                        C[row, col] = alpha * acc[i * TN + j]
                    else:
                        C[row, col] = alpha * acc[i * TN + j] + beta * C[row, col]

    sgemm_reg2d.tile = (BM, BN, BK, TM, TN)
    return sgemm_reg2d


# %%
from gemm_lessons.kernels.sgemm import reg2d

reg2d_default = make_sgemm_reg2d()                          # spread, 128 registers
reg2d_uncapped = make_sgemm_reg2d(MAX_REGISTERS=None)        # spread, registers left to the compiler
reg2d_contiguous = make_sgemm_reg2d(SPREAD=False)           # each thread's 8x8 side by side
gl.check_all(functools.partial(reg2d.sgemm, kernel=reg2d_default), name="reg2d")

# %%
gl.check_all(functools.partial(reg2d.sgemm, kernel=reg2d_contiguous), name="reg2d contiguous")

# %% [markdown]
# ### Look inside with the bank tracer: spread vs side by side
#
# The tracer ([bank tracer](GLOSSARY.md#bank-tracer)) runs one block of each layout on the
# simulator (K = 8) and counts, for each shared-memory access of a warp, the
# [wavefronts](GLOSSARY.md#wavefront) it takes (passes of shared memory: a 4-byte access takes
# one when the warp's addresses fall in distinct [banks](GLOSSARY.md#bank), more when some
# share a bank, a [bank conflict](GLOSSARY.md#bank-conflict)). With the 8x8 results side by side, the 16
# threads along a block row read `sB` 8 words apart, and a warp's two rows of threads read `sA`
# 64 words apart: both land in few banks. Spread, the same reads are conflict-free.

# %%
# NBVAL_CHECK_OUTPUT
from gemm_lessons.instruments import shared_tracer
for name in ("reg2d", "reg2d_contiguous"):
    t = shared_tracer.trace_rung(name, (128, 128, 8), merge=False).totals("ld")
    print(f"{name:<17} loads: {t['instructions']} warp instructions, {t['wavefronts']} wavefronts, "
          f"{t['conflicts']} from conflicts")

# %%
contiguous = shared_tracer.trace_rung("reg2d_contiguous", (128, 128, 8), merge=False)
figures.bank_map(contiguous.first("ld", array="sB").addresses, 4, title="reg2d_contiguous: first sB read, warp 0");

# %% [markdown]
# ## Predict, then measure
# Per k-step a `reg2d` thread reads 8 + 8 = 16 shared-memory values for 64 FMAs, 0.25 per FMA;
# `reg1d` read 17 for 16, 1.06 per FMA: 4.25 times more. Global loads are the same (both use
# 128x128 tiles). How many times faster do you expect `reg2d` to run than `reg1d` at 4096^3?
# Write one number in the next cell; after the measurement, a cell sets it against the
# measured speedup.

# %%
my_speedup = None  # your prediction: replace None with a number (for example 2.5)

# %% [markdown]
# ## Measure

# %%
table = measure_step.compare({
    "reg2d": functools.partial(reg2d.sgemm, kernel=reg2d_default),
    "reg2d_uncapped": functools.partial(reg2d.sgemm, kernel=reg2d_uncapped),
    "reg2d_contiguous": functools.partial(reg2d.sgemm, kernel=reg2d_contiguous),
    "reg1d": ladder.SGEMM["reg1d"],
}, size=(4096, 4096, 4096))
table

# %%
print(f"reg2d vs reg1d: {table.speedup('reg2d', 'reg1d'):.2f}x; "
      f"reg2d_uncapped vs reg2d: {table.speedup('reg2d_uncapped', 'reg2d'):.2f}x; "
      f"reg2d_contiguous vs reg2d: {table.speedup('reg2d_contiguous', 'reg2d'):.2f}x ({table.source})")

# %%
exercises.compare_prediction(my_speedup, table.speedup("reg2d", "reg1d"), "reg2d vs reg1d at 4096^3 (times faster)",
                             table.source)

# %% [markdown]
# Where the measurement falls short of the ratio of shared-memory values, the ratio's assumption
# (shared loads are the only cost) failed. Two things it leaves out are in the next sections.
# How many warps each SM keeps resident: `reg2d`'s 64 accumulators take registers, which decide
# how many of its 256-thread blocks fit on an SM, against `reg1d`'s 1,024-thread blocks (the
# compiler facts below, with both); fewer resident warps hide less of the global loads' latency.
# And what the warps do wait for: the profiler's stall reasons of `reg2d` and its two variants,
# further down (`reg1d` is not profiled there, so they do not settle that gap either).

# %% [markdown]
# ## Look inside: registers, spills, occupancy
#
# `registers` is per thread; `local_bytes` is local memory per thread: anything but 0 means the
# compiler ran out of registers and spilled some values to local memory, with `LDL`/`STL`
# instructions to move them ([register spill](GLOSSARY.md#register-spill)). From the register
# count follows how many blocks fit on one SM (65,536 registers per SM, allocated per warp in
# units of 256: `compiler_facts.blocks_per_sm`): 256-thread blocks for the `reg2d` kernels,
# 1,024-thread blocks for lesson 03's `reg1d`. The cell after the table reads it.

# %%
kernels = {"reg2d": reg2d_default, "reg2d_uncapped": reg2d_uncapped, "reg2d_contiguous": reg2d_contiguous,
           "reg1d": ladder.SGEMM["reg1d"].kernel}
threads = {"reg2d": 256, "reg2d_uncapped": 256, "reg2d_contiguous": 256, "reg1d": 1024}
facts = compiler_facts.compiler_facts(kernels, threads=threads)
facts

# %%
from IPython.display import Markdown, display

# Resident warps and spills, read off the table above
text, warps = [], {}
for name, f in facts.facts.items():
    if f.get("registers"):
        blocks, _ = compiler_facts.blocks_per_sm(f["registers"], f.get("shared_bytes", 0), threads[name])
        warps[name] = blocks * threads[name] // 32
if warps:
    text.append("Resident warps per SM (blocks/SM x warps per block): "
                + ", ".join(f"`{name}` {w}" for name, w in warps.items()) + ".")
base = facts.facts.get("reg2d") or {}
for name, f in facts.facts.items():
    if f.get("local_bytes"):
        sass = f.get("sass") or {}
        same_cap = (name != "reg2d" and not base.get("local_bytes") and base.get("registers") == f.get("registers"))
        text.append(f"`{name}` spills: {f['local_bytes']} bytes of local memory per thread, `LDL` x {sass.get('LDL', 0)} "
                    f"and `STL` x {sass.get('STL', 0)} in its code"
                    + (f", at the same {f['registers']} registers with which `reg2d` does not spill: a cap that fits "
                       "one index pattern can make another spill." if same_cap else "."))
if not any(f.get("local_bytes") for f in facts.facts.values()):
    text.append("No kernel in this table spills (0 bytes of local memory).")
display(Markdown(" ".join(text)))

# %% [markdown]
# What to read in the SASS: the counts are instructions in the *code*, not instructions executed.
# One k-step loads 8 values of `sA` and 8 of `sB` and does 8 x 8 = 64 FMAs. `LDS = 16` is
# exactly one k-step's loads, so the loop body holds one k-step: the compiler unrolled the `i`
# and `j` loops (64 `FFMA` side by side, the accumulators in registers) and kept the loop over
# the BK = 8 k-steps as a loop. The other 64 `FFMA` of the 128 are after the loop: the
# `alpha * acc + beta * C` of the 64 results when beta is not 0. Every `sA` and `sB` value still
# arrives through its own 4-byte `LDS`; lesson 05 makes them 16 bytes wide.

# %% [markdown]
# ## Look through the profiler: occupancy and stalls
#
# The compiler facts predict registers and blocks per SM; Nsight Compute reports them for the
# run, with the **achieved occupancy** (the warps resident on average, against the most an SM can
# hold) and the [stall reasons](GLOSSARY.md#stall-reasons): what the warps waited for. Compare
# `reg2d` with `reg2d_uncapped` (the same code without the register cap), and the bank-conflict
# row with the tracer above, which found conflicts in one block of `reg2d_contiguous` only.

# %%
prof04 = gl.profile({"reg2d": functools.partial(reg2d.sgemm, kernel=reg2d_default),
                     "reg2d_uncapped": functools.partial(reg2d.sgemm, kernel=reg2d_uncapped),
                     "reg2d_contiguous": functools.partial(reg2d.sgemm, kernel=reg2d_contiguous)},
                    size=(4096, 4096, 4096), lesson="04")
prof04

# %%
from IPython.display import Markdown
from gemm_lessons.teaching import profile_readings
# the tracer's conflicts of reg2d_contiguous in one block and one slice (the tracer cell above)
traced = shared_tracer.trace_rung("reg2d_contiguous", (128, 128, 8), merge=False).totals("ld")["conflicts"]
Markdown(profile_readings.reading_04(prof04, traced))

# %% [markdown]
# ## Exercises
#
# ### 04-ratio
# Compute the compute-to-memory ratio for an 8x4 patch and for a 32x1 patch (the same 32
# results, neither of them in the table above). Answer with a pair.

# %%
# NBVAL_CHECK_OUTPUT
### BEGIN SOLUTION: answer = None
answer = (2 / (1 / 8 + 1 / 4), 2 / (1 / 32 + 1 / 1))
### END SOLUTION
exercises.check("04-ratio", answer)

# %% [markdown]
# ### 04-kernel: the outer product
# A small version of the kernel above: a 32 x 32 tile with BK = 8 and 64 threads, each thread's
# TM x TN = 4 x 4 results side by side (rows `t_row` .. `t_row + 3` and columns `t_col` ..
# `t_col + 3` of the tile), the accumulators in a 2-D local array `acc[i, j]`. The staging is
# given. Write the products of one [slice](GLOSSARY.md#k-step): for each `k`, fill the registers `a_reg` and `b_reg`
# from shared memory, then update all TM x TN accumulators from registers.
#
# The check runs your kernel against the float64 reference, then on the simulator counts its
# global reads and traces its shared-memory loads: at most TM + TN = 8 per k-step for its
# 16 FMAs.

# %%
# NBVAL_CHECK_OUTPUT
def make_my_reg2d(BM=32, BN=32, BK=8, TM=4, TN=4):
    THREADS = (BM // TM) * (BN // TN)
    A_LOADS, B_LOADS = BM * BK // THREADS, BK * BN // THREADS  # values of each tile a thread stages

    @cuda.jit
    def my_reg2d(A, B, C, alpha, beta):
        sA = cuda.shared.array((BM, BK), float32)
        sB = cuda.shared.array((BK, BN), float32)
        acc = cuda.local.array((TM, TN), float32)
        a_reg = cuda.local.array(TM, float32)
        b_reg = cuda.local.array(TN, float32)
        for i in range(TM):
            for j in range(TN):
                acc[i, j] = 0.0
        tid = cuda.threadIdx.x
        row0, col0 = cuda.blockIdx.y * BM, cuda.blockIdx.x * BN
        M, K = A.shape
        N = B.shape[1]
        t_row = (tid // (BN // TN)) * TM  # this thread owns rows t_row .. t_row + TM - 1
        t_col = (tid % (BN // TN)) * TN  # and columns t_col .. t_col + TN - 1 of the tile
        for k0 in range(0, K, BK):
            for l in range(A_LOADS):
                idx = tid + l * THREADS
                r, c = idx // BK, idx % BK
                sA[r, c] = A[row0 + r, k0 + c] if row0 + r < M and k0 + c < K else np.float32(0.0)
            for l in range(B_LOADS):
                idx = tid + l * THREADS
                r, c = idx // BN, idx % BN
                sB[r, c] = B[k0 + r, col0 + c] if k0 + r < K and col0 + c < N else np.float32(0.0)
            cuda.syncthreads()
            ### BEGIN SOLUTION
            for k in range(BK):
                for i in range(TM):
                    a_reg[i] = sA[t_row + i, k]
                for j in range(TN):
                    b_reg[j] = sB[k, t_col + j]
                for i in range(TM):
                    for j in range(TN):
                        acc[i, j] += a_reg[i] * b_reg[j]
            ### END SOLUTION
            cuda.syncthreads()
        for i in range(TM):
            for j in range(TN):
                row, col = row0 + t_row + i, col0 + t_col + j
                if row < M and col < N:
                    C[row, col] = alpha * acc[i, j] + (beta * C[row, col] if beta != 0 else np.float32(0.0))

    my_reg2d.tile = (BM, BN, BK, TM, TN)  # the check's launch reads the tile shape from here
    return my_reg2d


exercises.check("04-kernel", make_my_reg2d())

# %% [markdown]
# ## Across sizes
#
# The recorded benchmark timed every [rung](GLOSSARY.md#rung) (each lesson's kernel) at four
# square sizes in one run. This lesson's rung,
# the rung before it and cuBLAS:

# %%
plots.rung_versus_size("reg2d");

# %%
from IPython.display import Markdown
from gemm_lessons.teaching import leaderboard
Markdown(leaderboard.rung_sizes_sentence("reg2d", results.load(), {"reg2d": (128, 128, 128 * 128 // 64),
                                                                    "reg1d": (128, 128, 128 * 128 // 16)}))

# %% [markdown]
# ## Takeaway
#
# * The outer product reuses each loaded value in both directions: 8x8 results per thread read
#   16 values per 64 FMAs.
# * More results per thread means more registers; registers decide how many blocks fit on an SM.
#   Capping them is a tuning knob: under the cap `reg2d` fits two blocks per SM where
#   `reg2d_uncapped` fits one, and the measurement above shows what that was worth. A cap can also
#   make a kernel spill: the same cap did in `reg2d_contiguous`.
# * Which thread owns which results changes how a warp hits shared memory: the side-by-side
#   layout has bank conflicts (the tracer above). At this rung they, and its spill, cost nothing
#   measurable: `reg2d_contiguous` ran at `reg2d`'s speed (the ratio printed under the
#   measurement). Lesson 05 changes the layout of the A tile so the loads can be 16 bytes wide;
#   lesson 06 explains banks.

# %% [markdown]
# ## Sources and further reading
#
# * The source articles this lesson re-tells and tests: [[1]](REFERENCES.md#seed-000), [[3]](REFERENCES.md#seed-002), [[5]](REFERENCES.md#seed-004) (their origins and what each
#   covers are in [REFERENCES.md](REFERENCES.md#source-articles)).
# * What to read next: [REFERENCES.md, lesson 04](REFERENCES.md#lessons-02-04).
# * Terms: the [glossary](GLOSSARY.md); the execution model and the compiler-facts table are
#   introduced in the [primer](00a_primer.ipynb).
