# %% [markdown]
# # 01 · The naive kernel, and coalescing
#
# **Where we are.** Lesson 00 set the bar: cuBLAS, measured, and the FP32 peak, worked out from
# the SMs, lanes and clock. Now the floor:
# the most direct kernel there is.
#
# **Idea.** One thread per element of C. Thread (row, col) walks along row `row` of A and column
# `col` of B, K multiply-adds, and writes one number. A 2-D grid of 2-D blocks covers C; the grid
# is rounded up, so threads past the edge must do nothing (the `if row < M and col < N` guard).

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
measure_step.recorded(["naive", "cublas"])  # where this lesson ends up, on the recorded GPU

# %% [markdown]
# ## Which thread gets which element? Coalescing
#
# A warp is 32 threads with consecutive thread numbers, `threadIdx.x` counting fastest (the
# [primer](00a_primer.ipynb)); in this lesson's 32 x 8 blocks that is one row of 32 consecutive
# `threadIdx.x`, the same `threadIdx.y`. They execute each load together, and the
# memory system serves them in 32-byte **sectors**. What matters is which addresses the 32
# threads touch *in the same instruction*.
#
# * **Coalesced**: `threadIdx.x` walks the *columns* of C. At step k the warp reads one float of
#   A (the same one for all 32 threads: a broadcast, 1 sector) and 32 neighbouring floats of B
#   (128 bytes: 4 sectors).
# * **Uncoalesced**: `threadIdx.x` walks the *rows* of C. The warp reads 32 floats of A that are
#   K floats apart (32 sectors, 28 of each sector's 32 bytes wasted) and one float of B.
#
# The figure shows one k-step of one warp, computed from the same index arithmetic as the kernel,
# on matrices with rows of 64 floats (a toy size, so that the whole access fits the picture; at
# K = 4096 the 32 floats of A lie further apart, again one sector each, 32 in all).

# %%
figures.warp_access(coalesced=True);

# %%
figures.warp_access(coalesced=False);

# %% [markdown]
# **Predict.** Per k-step a warp needs 1 + 4 = 5 sectors with the coalesced mapping and
# 32 + 1 = 33 with the other: about 6.6x more sectors requested from the L1 cache. Caches soften
# this (the rows of A are reused by neighbouring warps, so many requests never leave L1), so
# expect the uncoalesced kernel to be slower, but by less than 6.6x; the profile below shows the
# sectors per request and what reached L2 and DRAM for both. Either way the kernel performs $2MNK$ global loads, two per FMA, which is
# lesson 02's problem.

# %%
# NBVAL_CHECK_OUTPUT
for coalesced in (True, False):
    a, b = figures.naive_warp_addresses(coalesced, K=4096, N=4096)
    print(f"{'coalesced  ' if coalesced else 'uncoalesced'}: A {figures.sectors(a):>2} sectors, "
          f"B {figures.sectors(b):>2} sectors per warp per k-step")
print(f"global loads of a 4096^3 naive SGEMM: {counting.naive_global_loads(4096, 4096, 4096):,}")


# %% [markdown]
# ## The kernel
#
# This cell is the package's own kernel (`gemm_lessons/kernels/sgemm/naive.py`); edit it and re-run the
# cells below to try ideas. Three details worth a look:
#
# * `np.float32(0.0)`: numba would otherwise accumulate in float64. Most GPUs run float64 far
#   slower than float32: by NVIDIA's
#   [throughput table](https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#arithmetic-instructions),
#   1/64 of the float32 rate on compute capability 8.6 and 8.9 (consumer GPUs), 1/2 on the H100.
# * `alpha` and `beta` arrive as `np.float32` (the launcher converts them) for the same reason.
# * with `beta == 0` the kernel does not read C at all, as BLAS specifies: C may hold garbage.

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
# ## Check
#
# Every check runs the kernel on random matrices, non-square except a 1 x 1 x 1 edge case (sizes
# that are mostly not multiples of the block's 32 x 8 threads, so the guards are exercised), with
# alpha and beta, against a float64 reference, and reports the
# **[relative error](GLOSSARY.md#relative-error)** $\|C - C_{ref}\|_F / \|C_{ref}\|_F$, where
# $\|X\|_F$, the Frobenius norm, is the square root of the sum of the squares of X's elements: one
# number for the whole matrix, about the size of float32 rounding when the kernel is right. Before
# each run with beta = 0, C is filled with a special NaN ("poison"): any element the kernel
# forgets to write is reported as *unwritten*, with its position. With beta != 0 the kernel must
# read C, so C holds its random input instead.

# %%
from gemm_lessons.kernels.sgemm import naive, naive_uncoalesced

gl.check_all(functools.partial(naive.sgemm, kernel=sgemm_naive), name="sgemm_naive")


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


# %%
gl.check_all(functools.partial(naive_uncoalesced.sgemm, kernel=sgemm_naive_uncoalesced),
             name="sgemm_naive_uncoalesced")

# %% [markdown]
# ## Measure
#
# Both mappings and cuBLAS, in the same process, on the same inputs (4096^3 on a GPU). On the
# simulator the table shows the recorded GPU run instead.

# %%
size = (4096, 4096, 4096)
table = measure_step.compare({
    "naive": functools.partial(naive.sgemm, kernel=sgemm_naive),
    "naive_uncoalesced": functools.partial(naive_uncoalesced.sgemm, kernel=sgemm_naive_uncoalesced),
}, size=size)
table

# %%
print(f"coalesced / uncoalesced: {table.speedup('naive', 'naive_uncoalesced'):.1f}x faster; "
      f"cuBLAS / naive: {table.speedup('cublas', 'naive'):.0f}x ({table.source})")

# %% [markdown]
# ## Look through the profiler
#
# `gl.profile` runs each kernel once under Nsight Compute, NVIDIA's profiler, which reads the
# GPU's own counters (on the simulator, or where `ncu` is missing or not permitted, it shows
# counters recorded on a GPU, labelled). Each k-step makes two warp-wide loads, one of A and one
# of B, so the figure's 5 and 33 sectors per k-step predict 2.5 and 16.5 **sectors per warp
# instruction**: compare. The L1 hit rate and the L2 and DRAM traffic show how much of that the
# caches absorb; the [stall reasons](GLOSSARY.md#stall-reasons), what the warps waited for.

# %%
prof = gl.profile({"naive": functools.partial(naive.sgemm, kernel=sgemm_naive),
                   "naive_uncoalesced": functools.partial(naive_uncoalesced.sgemm, kernel=sgemm_naive_uncoalesced)},
                  size=(4096, 4096, 4096), lesson="01")
prof

# %% [markdown]
# ## Look inside
#
# On a GPU, numba shows what the compiler made: registers per thread, local memory (spills),
# [blocks per SM](GLOSSARY.md#blocks-per-sm) (here for the launcher's 32 x 8 = 256-thread blocks)
# and the SASS instructions, counted in the *code*, not as executed (the primer explains the
# table). The cell after the table reads it.

# %%
facts = compiler_facts.compiler_facts({"naive": sgemm_naive}, threads={"naive": naive.BLOCK[0] * naive.BLOCK[1]})
facts

# %%
from IPython.display import Markdown, display
from gemm_lessons.teaching import profile_readings

# What the table above and the profile before it say, in sentences made from their numbers
sass = (facts.facts.get("naive") or {}).get("sass") or {}
ffma, ldg, stg = sass.get("FFMA", 0), sass.get("LDG.E", 0), sass.get("STG.E", 0)
text = []
if ffma >= 2 and ldg == 2 * (ffma - 1) + 1:
    text.append(
        f"The code holds {ffma} `FFMA` and {ldg} `LDG.E` ({facts.source}). {ldg - 1} = 2 x {ffma - 1} of the loads "
        f"feed the {ffma - 1} `FFMA` of the k-loop, one load of A and one of B each. The likely reading, which "
        "these counts do not prove: the compiler wrote the loop's body out several times (a main loop) and added a "
        "second loop for the leftover k-steps, and after the loops, when beta is not 0, one more `LDG.E` reads C and "
        f"one more `FFMA` computes `alpha*acc + beta*C`; the {stg} `STG.E` would be the stores of the two branches "
        "(beta 0 or not). The full listing, `sgemm_naive.inspect_sass()` on a GPU, shows the loops and branches.")
elif sass:
    text.append(f"The code holds {ffma} `FFMA` and {ldg} `LDG.E` ({facts.source}): the k-loop's `FFMA` each take "
                "two loads, one of A and one of B; the rest are C's read and stores after the loop.")
text.append(profile_readings.reading_01(prof))
display(Markdown("\n\n".join(text)))

# %% [markdown]
# ## Exercises
#
# ### 01-sectors
# The coalesced kernel, launched with blocks of **16 x 16** threads instead of 32 x 8
# (`threadIdx.x` still walks the columns of C; K = N = 4096, and each block's first column is a
# multiple of 16). A warp is 32 consecutive thread numbers, `threadIdx.x` fastest. At one k-step,
# how many 32-byte sectors does one warp touch in A and in B? Answer with a pair
# `(sectors_of_A, sectors_of_B)`.

# %%
# NBVAL_CHECK_OUTPUT
### BEGIN SOLUTION: answer = None
answer = (2, 2)  # two rows of 16 threads: 2 floats of A, 16 KiB apart; 16 neighbouring floats of B, 64 bytes
### END SOLUTION
exercises.check("01-sectors", answer)


# %% [markdown]
# ### 01-kernel
# A library that does not want to choose a block shape may launch one thread per element of C
# in **one** dimension: blocks of 256 threads, and enough blocks for M x N threads. The check
# launches your kernel that way (`exercises.launch_1d`). Inside, `i = cuda.grid(1)` numbers the
# threads 0, 1, 2, ...; a warp is 32 consecutive values of `i`. Turn `i` into `(row, col)`,
# guard the threads past M x N, and compute `C[row, col]` (alpha and beta as above; C is not
# read when beta is 0).
#
# Two ways of turning `i` into `(row, col)` give the right result; only one is coalesced. The
# check runs your kernel twice: against the float64 reference, then on the simulator with
# arrays that record which elements each warp reads together, to count the 32-byte sectors a
# warp touches per k-step.

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
# ## Across sizes
#
# The recorded benchmark timed every [rung](GLOSSARY.md#rung) (each lesson's kernel) at four
# square sizes in one run. This lesson's rung
# and cuBLAS:

# %%
plots.rung_versus_size("naive");

# %% [markdown]
# ## Takeaway
#
# * Map `threadIdx.x` to the contiguous dimension: the same arithmetic ran faster when a warp's
#   loads fell into few sectors (by how much: the ratio printed under the measurement above).
# * Even coalesced, the naive kernel loads two floats from global memory per FMA, $2MNK$ loads
#   in all, and reaches a few percent of cuBLAS. Each value of A is loaded N times, once per
#   column of C, and each value of B M times, once per row of C (the caches serve many of those
#   loads, as the profile showed). Lesson 02 stages them in shared memory.

# %% [markdown]
# ## Sources and further reading
#
# * The source articles this lesson re-tells and tests: [[1]](REFERENCES.md#seed-000), [[2]](REFERENCES.md#seed-001), [[3]](REFERENCES.md#seed-002), [[5]](REFERENCES.md#seed-004) (their origins and what each
#   covers are in [REFERENCES.md](REFERENCES.md#source-articles)).
# * What to read next: [REFERENCES.md, lesson 01](REFERENCES.md#lesson-01).
# * Terms: the [glossary](GLOSSARY.md); the execution model and the compiler-facts table are
#   introduced in the [primer](00a_primer.ipynb).
