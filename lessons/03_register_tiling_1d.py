# %% [markdown]
# # 03 · 1-D register tiling: several results per thread
#
# **Where we are.** With 32x32 shared-memory tiles, lesson 02 cut the global loads 32-fold. Every
# FMA still reads two values from shared memory, one of `sA` and one of `sB` (lesson 02 traced
# them). This lesson cuts that ratio, and measures whether it pays.

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
measure_step.recorded(["smem_tile", "reg1d", "cublas"])

# %% [markdown]
# ## Idea: each thread computes a column of TM results
#
# Give each thread TM elements of C in one column instead of one element. At each k it reads
# **one** value of `sB` into a register and uses it TM times, against TM values of `sA` (which
# all threads of a warp read at the same address: a broadcast, one
# [wavefront](GLOSSARY.md#wavefront) for a 4-byte load).
#
# With fewer threads per output, the block can cover a bigger tile of C for the same thread
# count: here 1024 threads x 16 results = a 128x128 tile, 16 times the area of lesson 02's 32x32
# tile (four times its side).

# %% [markdown]
# **Predict.**
#
# * shared-memory values per FMA (4-byte words a thread reads from shared memory for each FMA, as
#   in lesson 02): $(1 + TM)/TM$ instead of 2 (lesson 02 reads one value of `sA` and one of `sB`
#   for each FMA), and the `sA` reads are broadcasts;
# * global loads: $MNK(1/128 + 1/128)$, 4x fewer than with 32x32 tiles.

# %%
# NBVAL_CHECK_OUTPUT
for name, BM, BN, TM in [("smem_tile (32x32)", 32, 32, 1), ("reg1d (128x128, TM=16)", 128, 128, 16)]:
    print(f"{name:<24} shared values per FMA {(1 + TM) / TM if TM > 1 else 2:.2f}   "
          f"global loads at 4096^3: {counting.tiled_global_loads(4096, 4096, 4096, BM, BN):.3g}")


# %% [markdown]
# ## The kernel
#
# `acc = cuda.local.array(TM, float32)` looks like an array in memory, but because every index
# into it is a constant once the `for i in range(TM)` loops are unrolled, the compiler keeps it
# in registers. (Index it with a value known only at run time and it moves to slow local
# memory; "Look inside" below checks.)
#
# The tile shape is a parameter of the factory. Each thread stages exactly one value of each
# tile, so the factory insists on `BM*BN/TM == BM*BK == BK*BN` threads.

# %%
# source: gemm_lessons/kernels/sgemm/reg1d.py  (the package runs this same code; a test keeps the two identical)
def make_sgemm_reg1d(BM=128, BN=128, BK=8, TM=16):
    """BM x BN tile of C per block, BK-wide slices of K, TM results per thread."""
    THREADS = BM * BN // TM
    assert THREADS == BM * BK == BK * BN, "each thread stages exactly one value of each tile"

    @cuda.jit
    def sgemm_reg1d(A, B, C, alpha, beta):
        sA = cuda.shared.array((BM, BK), float32)
        sB = cuda.shared.array((BK, BN), float32)
        acc = cuda.local.array(TM, float32)  # stays in registers: every index is a constant
        for i in range(TM):
            acc[i] = 0.0
        tid = cuda.threadIdx.x
        row0 = cuda.blockIdx.y * BM
        col0 = cuda.blockIdx.x * BN
        M, K = A.shape
        N = B.shape[1]
        a_r, a_c = tid // BK, tid % BK  # which value of the A tile this thread stages
        b_r, b_c = tid // BN, tid % BN  # ... and of the B tile
        t_row, t_col = tid // BN, tid % BN  # this thread computes C[t_row*TM : +TM, t_col]
        for k0 in range(0, K, BK):
            r, c = row0 + a_r, k0 + a_c
            sA[a_r, a_c] = A[r, c] if r < M and c < K else np.float32(0.0)
            r, c = k0 + b_r, col0 + b_c
            sB[b_r, b_c] = B[r, c] if r < K and c < N else np.float32(0.0)
            cuda.syncthreads()
            for k in range(BK):
                b = sB[k, t_col]  # one shared-memory read, reused TM times from a register
                for i in range(TM):
                    acc[i] += sA[t_row * TM + i, k] * b
            cuda.syncthreads()
        col = col0 + t_col
        for i in range(TM):
            row = row0 + t_row * TM + i
            if row < M and col < N:
                if beta == 0:
                    C[row, col] = alpha * acc[i]
                else:
                    C[row, col] = alpha * acc[i] + beta * C[row, col]

    sgemm_reg1d.tile = (BM, BN, BK, TM)
    return sgemm_reg1d


# %%
from gemm_lessons.kernels.sgemm import reg1d

reg1d_128 = make_sgemm_reg1d()                      # 128x128x8, 16 results per thread
reg1d_64 = make_sgemm_reg1d(BM=64, BN=64, BK=8, TM=8)  # 64x64x8, 8 results per thread
gl.check_all(functools.partial(reg1d.sgemm, kernel=reg1d_128), name="reg1d 128x128")

# %%
gl.check_all(functools.partial(reg1d.sgemm, kernel=reg1d_64), name="reg1d 64x64")

# %% [markdown]
# ### Look inside with the bank tracer
#
# One 128x128 block, K = 8, traced on the simulator (the columns are those of lesson 02's tracer
# table): per k-step each warp makes one `sB` read (32 neighbouring words) and 16 `sA` reads that
# every lane shares (a broadcast). Shared traffic per FMA fell, and none of it conflicts.

# %%
from gemm_lessons.instruments import shared_tracer
reg1d_trace = shared_tracer.trace_rung("reg1d", (128, 128, 8), merge=False)
reg1d_trace

# %%
# NBVAL_CHECK_OUTPUT
t = reg1d_trace.totals("ld")
print(f"loads: {t['instructions']} warp instructions, {t['wavefronts']} wavefronts, {t['conflicts']} from conflicts")
warp_fmas = (128 * 128 // 16 // 32) * 8 * 16  # 32 warps, 8 k-steps, 16 FMA instructions per k-step
values = sum(i.width // 4 for i in reg1d_trace.instructions if i.op == "ld")
print(f"per warp-FMA ({warp_fmas:,} in the block): {values / warp_fmas:.2f} values read from shared memory, "
      f"{t['instructions'] / warp_fmas:.2f} load instructions")

# %% [markdown]
# ## Predict, then measure
# Per FMA, `reg1d` reads (1 + 16)/16 = 1.06 shared-memory values where `smem_tile` reads 2, and
# makes 4 times fewer global loads (the table printed above). How many times faster do you expect
# `reg1d` to run than `smem_tile` at 4096^3? Write one number in the next cell; after the
# measurement, a cell sets it against the measured speedup.

# %%
my_speedup = None  # your prediction: replace None with a number (for example 2.5)

# %% [markdown]
# ## Measure
#
# The 64x64 version is the choice of Boehm's worklog, kernel 4
# ([REFERENCES.md](REFERENCES.md#lessons-02-04)): 512 threads, 8 results each. On the H100
# this notebook was run on it was *no faster* than 32x32 shared-memory tiles; the 128x128 tile
# with 16 results per thread is. Run it to see it on your GPU.

# %%
table = measure_step.compare({
    "reg1d": functools.partial(reg1d.sgemm, kernel=reg1d_128),
    "reg1d_64x64": functools.partial(reg1d.sgemm, kernel=reg1d_64),
    "smem_tile": ladder.SGEMM["smem_tile"],
}, size=(4096, 4096, 4096))
table

# %%
print(f"reg1d vs smem_tile: {table.speedup('reg1d', 'smem_tile'):.2f}x; "
      f"reg1d_64x64 vs smem_tile: {table.speedup('reg1d_64x64', 'smem_tile'):.2f}x ({table.source})")

# %%
exercises.compare_prediction(my_speedup, table.speedup("reg1d", "smem_tile"), "reg1d vs smem_tile at 4096^3 (times faster)",
                             table.source)

# %% [markdown]
# The `reg1d_64x64` row tests the same model a second time: its ratio of shared-memory values per
# FMA against `smem_tile` is 2 / (9/8) = 1.78, and the table shows how close that came: on the
# H100, not at all. A ratio of load counts predicts a speedup only when those loads are what the
# kernel waits for; the 0.98x suggests that here they are not. What else differs between
# `reg1d_64x64` and `smem_tile` is not measured here: the work each thread has between barriers
# (8 results against 1), the global loads (lesson 02's formula: half as many with 64x64 tiles as
# with 32x32 ones), and the threads an SM holds (the compiler facts below show the two `reg1d`
# kernels; lesson 02's show `smem_tile`).

# %% [markdown]
# ## Look inside
#
# Registers per thread, local memory (0 means the accumulators stayed in registers: nothing
# spilled), blocks per SM (for 1,024-thread blocks at 128x128, 512-thread blocks at 64x64) and
# the [SASS](GLOSSARY.md#sass) instruction mix of the compiled kernels. The instruction columns
# count instructions in the compiled code, not how often they run: a loop body's `FFMA` appear
# once for each copy of the body the compiler wrote (it may write a loop out twice), and the
# `beta != 0` branch after the loop has `FFMA` of its own, one per result
# ([compiler facts](GLOSSARY.md#compiler-facts); lesson 04 reads such a table line by line).

# %%
kernels = {"reg1d": reg1d_128, "reg1d_64x64": reg1d_64}
compiler_facts.compiler_facts(kernels, threads={name: k.tile[0] * k.tile[1] // k.tile[3] for name, k in kernels.items()})


# %% [markdown]
# ## Exercise 03-kernel: a row of results per thread
# The kernel above gives each thread a *column* of TM results and reuses one value of `sB`.
# Turn it around: each thread computes a *row* of TN = 4 neighbouring results,
# `C[row0 + t_row, col0 + t_col + j]` for j = 0 .. TN-1, in a 32 x 32 tile with BK = 8 and
# 256 threads. The staging is given. Write the products of one slice: for each `k`, which
# value can a thread read from shared memory once and use TN times?
#
# The check runs your kernel against the float64 reference, then on the simulator counts its
# global reads (a kernel that reads A or B straight from global memory in the loop fails) and
# traces its shared-memory loads: at most 1 + TN = 5 per k-step for its TN FMAs.

# %%
# NBVAL_CHECK_OUTPUT
def make_my_reg1d_rows(BM=32, BN=32, BK=8, TN=4):
    THREADS = BM * BN // TN
    assert THREADS == BM * BK == BK * BN, "each thread stages exactly one value of each tile"

    @cuda.jit
    def my_reg1d_rows(A, B, C, alpha, beta):
        sA = cuda.shared.array((BM, BK), float32)
        sB = cuda.shared.array((BK, BN), float32)
        acc = cuda.local.array(TN, float32)
        for j in range(TN):
            acc[j] = 0.0
        tid = cuda.threadIdx.x
        row0, col0 = cuda.blockIdx.y * BM, cuda.blockIdx.x * BN
        M, K = A.shape
        N = B.shape[1]
        t_row, t_col = tid // (BN // TN), (tid % (BN // TN)) * TN  # this thread's row, first column
        for k0 in range(0, K, BK):
            r, c = row0 + tid // BK, k0 + tid % BK
            sA[tid // BK, tid % BK] = A[r, c] if r < M and c < K else np.float32(0.0)
            r, c = k0 + tid // BN, col0 + tid % BN
            sB[tid // BN, tid % BN] = B[r, c] if r < K and c < N else np.float32(0.0)
            cuda.syncthreads()
            ### BEGIN SOLUTION
            for k in range(BK):
                a = sA[t_row, k]  # one shared-memory read, used TN times from a register
                for j in range(TN):
                    acc[j] += a * sB[k, t_col + j]
            ### END SOLUTION
            cuda.syncthreads()
        row = row0 + t_row
        for j in range(TN):
            col = col0 + t_col + j
            if row < M and col < N:
                C[row, col] = alpha * acc[j] + (beta * C[row, col] if beta != 0 else np.float32(0.0))

    my_reg1d_rows.tile = (BM, BN, BK, TN)  # the check's launch reads the tile shape from here
    return my_reg1d_rows


exercises.check("03-kernel", make_my_reg1d_rows())

# %% [markdown]
# ## Across sizes
#
# The recorded benchmark timed every [rung](GLOSSARY.md#rung) (each lesson's kernel) at four
# square sizes in one run. This lesson's rung,
# the rung before it and cuBLAS:

# %%
plots.rung_versus_size("reg1d");

# %%
from IPython.display import Markdown
from gemm_lessons.teaching import leaderboard
Markdown(leaderboard.rung_sizes_sentence("reg1d", results.load(), {"reg1d": (128, 128, 128 * 128 // 16),
                                                                    "smem_tile": (32, 32, 32 * 32)}))

# %% [markdown]
# ## Takeaway
#
# * One value in a register, reused TM times, cuts shared-memory values per FMA from 2 to about 1.
# * Local arrays indexed by constants live in registers; check with the compiler, not by hope.
# * The tile shape matters as much as the idea: at 4096^3, 64x64 with 8 results per thread did not
#   beat lesson 02 on the GPU we recorded, 128x128 with 16 did. The size matters too: at 1024^3
#   the 128x128 tiles make fewer blocks than the GPU has SMs, and `reg1d` was behind.
# * Still, every FMA needs one `sA` read. Lesson 04 reuses values in *both* directions.

# %% [markdown]
# ## Sources and further reading
#
# * The source article this lesson re-tells and tests: [[3]](REFERENCES.md#seed-002) (its origin and what it
#   covers are in [REFERENCES.md](REFERENCES.md#source-articles)).
# * What to read next: [REFERENCES.md, lesson 03](REFERENCES.md#lessons-02-04).
# * Terms: the [glossary](GLOSSARY.md); the execution model and the compiler-facts table are
#   introduced in the [primer](00a_primer.ipynb).
