# %% [markdown]
# # 05 · Transposed shared memory and 128-bit loads
#
# **Where we are.** Lesson 04's outer product reads 16 values per 64 FMAs, but each value
# arrives through its own 4-byte instruction: 16 `LDS` per k-step, plus 8 4-byte global loads
# per thread per slice. This lesson's kernel, `vec`, moves 16 bytes per instruction wherever
# it can. It differs from lesson 04's `reg2d` in five changes; the lesson makes them one at a
# time, each a kernel of its own, looks at what the compiler made of each, and measures each
# against the one before, so that the whole jump is measured step by step (not every step's
# gain is explained: the lesson says where it is not).

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
measure_step.recorded(["reg2d", "vec", "cublas"])  # where we start and where we arrive; the steps between are measured below

# %% [markdown]
# ## Idea: make a thread's values contiguous, then move 16 bytes at a time
#
# Give each thread 8 side-by-side columns of C (in lesson 04's `reg2d` they are 16 apart; step 1
# below changes that), and its 8 values of B for one k are neighbours in `sB[k, :]`. Its 8 values
# of A are not: in `sA[m, k]` they are a column, BK floats apart. Store the A tile
# **transposed**, `sAT[k, m]`, and they become neighbours too. Then:
#
# * shared memory: 8 + 8 values per k-step arrive in four 16-byte loads (`LDS.128`: the `.128`
#   is the access width in bits, [glossary](GLOSSARY.md#width-128)) instead of sixteen 4-byte ones;
# * global memory: each thread stages one float4 (16 bytes) of A and one of B per slice
#   (`LDG.128`); the A values are scattered into `sAT` on the way in;
# * C is written 16 bytes at a time (`STG.128`).

# %%
figures.transposed_tile();

# %% [markdown]
# ## How to get 128-bit instructions from numba
#
# * **Shared memory**: usually nothing special. Shared arrays are aligned, so when four loads hit
#   `sAT[k, m]`, `sAT[k, m+1]`, ... with `m` visibly a multiple of 4, the compiler (the load/store
#   vectorizer of [NVVM](GLOSSARY.md#nvvm), the LLVM-based part of numba's compiler) can merge them into one `LDS.128`, and in this lesson's kernel it
#   does. Not always: in the H100 run recorded for this lesson, steps 3 and 4 kept their
#   neighbouring reads as four `LDS` each, and `vec_unrolled_k` at the end of the lesson loses
#   `LDS.128` too, so read the SASS.
# * **Global memory**: numba tells LLVM nothing about the alignment of an array's data pointer,
#   so four neighbouring global loads stay four `LDG.E`. `gemm_lessons/core/float4.py` adds two
#   small numba *intrinsics* ([glossary](GLOSSARY.md#intrinsic): functions that the compiler
#   replaces by specific instructions where they are called), `load4` and `store4`, that emit
#   one `<4 x float>` load or store with 16-byte alignment. The price: every row must start on a 16-byte boundary, so this rung
#   requires K and N to be multiples of 4, and says so (ValueError) otherwise.
# * **Unrolling, said out loud**: *unrolling* a loop means writing its body out once per
#   iteration, so the loop counter becomes a constant in each copy. That matters here for one
#   reason: a small local array (`cuda.local.array`) such as the 8x8 results `acc` can live in
#   registers only if every index into it is a constant once the code is compiled; an index
#   known only at run time needs an address, and registers have none, so the array would go to
#   (slow, off-chip) local memory. In lesson 04 the compiler happened to unroll the `i` and `j`
#   loops by itself (its SASS had one k-step's 64 `FFMA` in the loop). numba has no
#   `#pragma unroll` to *ask* for it, so this course adds one: `@unrolled` (from
#   `gemm_lessons.core.unroll`) rewrites the kernel's source before numba compiles it, writing out
#   every `for i in static_range(N)` loop N times with `i` replaced by 0, 1, ..., N-1, and
#   keeping only the chosen branch of an `if static(condition):`. Once every index into a
#   local array is a constant, `@unrolled` also writes each element as a variable of its own
#   (`acc[1, 2]` becomes `acc_1_2`), which is what the compiler does anyway to keep the array
#   in registers: doing it before numba sees the code leaves numba far fewer statements to
#   type, and the kernels of lesson 08 compile in seconds. A `range` loop stays a loop:
#   here the loop over the 8 k-steps of a slice. Writing that one out too (`unroll_k=True`) is
#   measured below, and it is slower.

# %%
from gemm_lessons.core.float4 import load4, store4  # the 16-byte load/store intrinsics
from gemm_lessons.core.unroll import expanded_source, static, static_range, unrolled  # compile-time loops

# %% [markdown]
# ## The five steps
#
# Each step is a kernel in the package (`gemm_lessons/kernels/sgemm/`) that makes one change to
# the step before it. For each: the idea, the change (a diff of the two kernels, made from the
# package's code), the kernel, a correctness check, what the compiler made of it next to the
# step before, and the measured speed of both, timed in the same run.
#
# The compiler facts now have two more columns, counted in the SASS of the main loop. A
# *k-step* is one k of a slice: each thread loads a column of A and a row of B from shared
# memory and forms their outer product ([glossary](GLOSSARY.md#k-step)). **inner loop** counts
# the instructions of the innermost loop that holds `FFMA`: here one k-step, run BK = 8 times
# per slice. **loop around it** counts the other instructions of the loop over the slices:
# staging the tiles, the barriers, the loop counter, run once per slice. Both count the code,
# not a measurement; every instruction, an `FFMA` or not, takes one issue slot of a warp
# scheduler ([issue](GLOSSARY.md#issue)).

# %%
from IPython.display import Markdown
from gemm_lessons.teaching import lesson05_steps
from gemm_lessons.course import lesson_source
from gemm_lessons.core import tables
from gemm_lessons.kernels.sgemm import reg2d, reg2d_unrolled, transposed_a, vec, wide_loads

Markdown(tables.markdown(["step", "kernel", "what it changes"],
                         [[i or "start", f"`{s.kernel}`", s.change] for i, s in enumerate(lesson05_steps.STEPS)],
                         "rll"))

# %% [markdown]
# **Predict.** Which step do you expect to gain the most? And how many times faster than
# `reg2d` do you expect `vec` to run at 4096^3, all five steps together? Write the second as a
# number in the next cell; the end of the lesson sets it against the measurement.

# %%
my_speedup = None  # your prediction: replace None with a number (for example 1.2)

# %% [markdown]
# ### Step 1: a thread's results side by side (`reg2d_contiguous`, from lesson 04)
#
# A 16-byte load reads four neighbouring floats, so a thread's values must be neighbours in
# shared memory. In `reg2d` a thread's 8 columns are 16 apart (`SPREAD`); in lesson 04's variant
# `reg2d_contiguous` (`make_sgemm_reg2d(SPREAD=False)`, no new code) they are side by side, and
# its 8 values of B for one k are neighbours in `sB[k, :]`. Its 8 values of A are still a
# column of `sA[m, k]`, BK floats apart. Every load is still 4 bytes wide: this step only
# makes the later ones possible. Read the *local bytes* and [`LDL`/`STL`](GLOSSARY.md#ldl)
# (local-memory loads and stores) columns of the compiler facts too: on the H100 this lesson ran on, the compiler spilled part of `reg2d_contiguous`'s
# registers to local memory; the next step removes that.

# %%
lesson05_steps.compiler_facts({"reg2d": reg2d.sgemm_reg2d, "reg2d_contiguous": reg2d.kernel_for(SPREAD=False)})

# %%
lesson05_steps.measure_step("reg2d_contiguous")  # both from the package; on the simulator: the recorded run

# %% [markdown]
# ### Step 2: the loops written out at compile time (`reg2d_unrolled`)
#
# The same kernel with its loops over a thread's rows `i` and columns `j` written as
# `static_range` loops, which `@unrolled` writes out before numba compiles the kernel; the 64
# results become a 2-D register tile `acc[i, j]` indexed only by constants. The loads and stores
# are the same 4-byte ones. What changes is the code for their addresses, as the SASS of the two
# kernels *compiled offline* for sm_90 shows in the next cell. *Compiled offline*: compiled on
# a machine without a GPU, with the CUDA toolkit's compiler, not by the GPU's driver (so it may
# differ from what your GPU's compiler makes); *sm_90*: compute capability 9.0, the H100's, as
# the compiler names it. In the SASS of `reg2d_contiguous` the k-step loop computes the address
# of each of its 16 shared loads with integer instructions, at every k-step, and each `LDS`
# reads from a register holding a whole address; in that of `reg2d_unrolled`, the 16 addresses
# are two bases plus constant offsets, and the k-step loop is shorter. The cell shows the
# address operands and loop lengths recorded by `tools/lesson05_offline.py`;
# `tests/teaching/test_lesson05_steps.py` checks both in the record, and again by compiling where the
# toolkit is installed. The **inner loop** column below shows what the GPU's compiler made, and
# the *local bytes* column a second difference: `reg2d_unrolled` spills nothing. Whether the spill it
# removes mattered, these numbers cannot say: step 1 added it and ran at the same speed, but its
# k-step loop got shorter at the same time.

# %%
Markdown(lesson05_steps.offline_step2_addresses())  # from results/experiments/lesson05-offline-sass.json

# %% [markdown]
# The diff is against lesson 04's factory `make_sgemm_reg2d`, whose `SPREAD=False` sets
# `ROW_STEP = COL_STEP = 1`, `ROW_SPAN = TM` and `COL_SPAN = TN`: its `t_row + i * ROW_STEP` is
# the `t_row + i` of the new kernel.

# %%
print(lesson_source.kernel_diff("gemm_lessons/kernels/sgemm/reg2d.py", "gemm_lessons/kernels/sgemm/reg2d_unrolled.py"))

# %%
# source: gemm_lessons/kernels/sgemm/reg2d_unrolled.py  (the package runs this same code; a test keeps the two identical)
BM, BN, BK, TM, TN = 128, 128, 8, 8, 8
THREADS = (BM // TM) * (BN // TN)  # 256


@jit(max_registers=128)  # as in lesson 04: two 256-thread blocks per SM
@unrolled
def sgemm_reg2d_unrolled(A, B, C, alpha, beta):
    sA = cuda.shared.array((BM, BK), float32)
    sB = cuda.shared.array((BK, BN), float32)
    tid = cuda.threadIdx.x
    row0 = cuda.blockIdx.y * BM
    col0 = cuda.blockIdx.x * BN
    M, K = A.shape
    N = B.shape[1]
    t_row = (tid // (BN // TN)) * TM  # this thread's 8x8 results, side by side: tile rows t_row..t_row+7
    t_col = (tid % (BN // TN)) * TN   # and columns t_col..t_col+7
    # the thread's results, and one k-step's column of A and row of B: every index is a
    # constant once the static_range loops are written out, so all three live in registers
    acc = cuda.local.array((TM, TN), float32)
    a = cuda.local.array(TM, float32)
    b = cuda.local.array(TN, float32)
    for i in static_range(TM):
        for j in static_range(TN):
            acc[i, j] = np.float32(0.0)
    for k0 in range(0, K, BK):
        for l in range(BM * BK // THREADS):  # 4 values of each tile per thread, 4 bytes at a time
            idx = tid + l * THREADS
            r, c = idx // BK, idx % BK
            sA[r, c] = A[row0 + r, k0 + c] if row0 + r < M and k0 + c < K else np.float32(0.0)
        for l in range(BK * BN // THREADS):
            idx = tid + l * THREADS
            r, c = idx // BN, idx % BN
            sB[r, c] = B[k0 + r, col0 + c] if k0 + r < K and col0 + c < N else np.float32(0.0)
        cuda.syncthreads()
        for k in range(BK):
            for i in static_range(TM):  # a column of the A tile: 8 values BK floats apart
                a[i] = sA[t_row + i, k]
            for j in static_range(TN):  # a row of the B tile: 8 neighbouring values
                b[j] = sB[k, t_col + j]
            for i in static_range(TM):
                for j in static_range(TN):
                    acc[i, j] += a[i] * b[j]
        cuda.syncthreads()
    for i in static_range(TM):
        row = row0 + t_row + i
        for j in static_range(TN):
            col = col0 + t_col + j
            if row < M and col < N:
                if beta == 0:
                    C[row, col] = alpha * acc[i, j]
                else:
                    C[row, col] = alpha * acc[i, j] + beta * C[row, col]

# %%
gl.check_all(functools.partial(reg2d_unrolled.sgemm, kernel=sgemm_reg2d_unrolled), name="reg2d_unrolled")

# %%
lesson05_steps.compiler_facts({"reg2d_contiguous": reg2d.kernel_for(SPREAD=False),
                               "reg2d_unrolled": sgemm_reg2d_unrolled})

# %%
lesson05_steps.measure_step("reg2d_unrolled", {
    "reg2d_contiguous": ladder.VARIANTS["reg2d_contiguous"],
    "reg2d_unrolled": functools.partial(reg2d_unrolled.sgemm, kernel=sgemm_reg2d_unrolled)})

# %% [markdown]
# ### Step 3: the A tile stored transposed (`transposed_a`)
#
# A thread's 8 values of A for one k are a column of `sA[m, k]`, BK floats apart. Store the
# tile transposed, `sAT[k, m]` (each value goes to its transposed place as it is staged), and
# they become 8 neighbours, like the 8 values of B. Nothing in the code asks for 16-byte loads:
# both rows start at a multiple of 8 floats (`t_row`, `t_col`), so the compiler *may* merge
# every four neighbouring reads into one `LDS.128`, 4 per k-step instead of 16 `LDS`. Whether
# it does is the compiler's choice, and two toolchains disagreed here: compiled offline (numba's
# NVVM and the CUDA toolkit's ptxas, on a machine without a GPU: the next cell, with the
# versions; `tests/teaching/test_lesson05_steps.py` checks it) this kernel gets `LDS.128`; in the H100
# run recorded for this lesson it kept sixteen 4-byte `LDS`, and so did step 4's kernel (the
# compiler facts below show what your GPU's compiler made). Only `vec`, in step 5, has
# `LDS.128` in that run. We did not find out why (step 5 names one suspect, the register cap).

# %%
Markdown(lesson05_steps.offline_step3_lds128())  # from results/experiments/lesson05-offline-sass.json

# %%
print(lesson_source.kernel_diff("gemm_lessons/kernels/sgemm/reg2d_unrolled.py",
                                "gemm_lessons/kernels/sgemm/transposed_a.py"))

# %%
# source: gemm_lessons/kernels/sgemm/transposed_a.py  (the package runs this same code; a test keeps the two identical)
BM, BN, BK, TM, TN = 128, 128, 8, 8, 8
THREADS = (BM // TM) * (BN // TN)  # 256


@jit(max_registers=128)  # as in lesson 04: two 256-thread blocks per SM
@unrolled
def sgemm_transposed_a(A, B, C, alpha, beta):
    sAT = cuda.shared.array((BK, BM), float32)  # A tile, transposed: sAT[k, m]
    sB = cuda.shared.array((BK, BN), float32)
    tid = cuda.threadIdx.x
    row0 = cuda.blockIdx.y * BM
    col0 = cuda.blockIdx.x * BN
    M, K = A.shape
    N = B.shape[1]
    t_row = (tid // (BN // TN)) * TM  # this thread's 8x8 results, side by side: tile rows t_row..t_row+7
    t_col = (tid % (BN // TN)) * TN   # and columns t_col..t_col+7
    # the thread's results, and one k-step's column of A and row of B: every index is a
    # constant once the static_range loops are written out, so all three live in registers
    acc = cuda.local.array((TM, TN), float32)
    a = cuda.local.array(TM, float32)
    b = cuda.local.array(TN, float32)
    for i in static_range(TM):
        for j in static_range(TN):
            acc[i, j] = np.float32(0.0)
    for k0 in range(0, K, BK):
        for l in range(BM * BK // THREADS):  # 4 values of each tile per thread, 4 bytes at a time
            idx = tid + l * THREADS
            r, c = idx // BK, idx % BK
            sAT[c, r] = A[row0 + r, k0 + c] if row0 + r < M and k0 + c < K else np.float32(0.0)
        for l in range(BK * BN // THREADS):
            idx = tid + l * THREADS
            r, c = idx // BN, idx % BN
            sB[r, c] = B[k0 + r, col0 + c] if k0 + r < K and col0 + c < N else np.float32(0.0)
        cuda.syncthreads()
        for k in range(BK):
            for i in static_range(TM):  # a row of the transposed A tile: 8 neighbouring values
                a[i] = sAT[k, t_row + i]
            for j in static_range(TN):  # a row of the B tile: 8 neighbouring values
                b[j] = sB[k, t_col + j]
            for i in static_range(TM):
                for j in static_range(TN):
                    acc[i, j] += a[i] * b[j]
        cuda.syncthreads()
    for i in static_range(TM):
        row = row0 + t_row + i
        for j in static_range(TN):
            col = col0 + t_col + j
            if row < M and col < N:
                if beta == 0:
                    C[row, col] = alpha * acc[i, j]
                else:
                    C[row, col] = alpha * acc[i, j] + beta * C[row, col]

# %%
gl.check_all(functools.partial(transposed_a.sgemm, kernel=sgemm_transposed_a), name="transposed_a")

# %%
lesson05_steps.compiler_facts({"reg2d_unrolled": sgemm_reg2d_unrolled, "transposed_a": sgemm_transposed_a})

# %%
lesson05_steps.measure_step("transposed_a", {
    "reg2d_unrolled": functools.partial(reg2d_unrolled.sgemm, kernel=sgemm_reg2d_unrolled),
    "transposed_a": functools.partial(transposed_a.sgemm, kernel=sgemm_transposed_a)})

# %% [markdown]
# Where did step 3's gain come from, if not from wider loads? Not from fewer instructions: in
# the H100's compiler facts above the two kernels have the same counts. The bank tracer
# ([bank tracer](GLOSSARY.md#bank-tracer): one block, K = 8, every shared load 4 bytes wide as
# the H100's compiler left them) counts the passes of shared memory, the
# [wavefronts](GLOSSARY.md#wavefront), of both kernels:

# %%
# NBVAL_CHECK_OUTPUT
from gemm_lessons.instruments import shared_tracer
for name in ("reg2d_unrolled", "transposed_a"):
    t = shared_tracer.trace_rung(name, (128, 128, 8), merge=False)  # merge=False: 4-byte accesses
    ld, st = t.totals("ld"), t.totals("st")
    print(f"{name:<15} loads: {ld['wavefronts']} wavefronts ({ld['conflicts']} from conflicts); "
          f"stores: {st['wavefronts']} ({st['conflicts']} from conflicts)")

# %% [markdown]
# The A reads of `reg2d_unrolled` are a column of `sA`, and two threads of a warp read the same
# bank (2-way [conflicts](GLOSSARY.md#bank-conflict), as in lesson 04's contiguous layout);
# `transposed_a` reads a row of `sAT`, conflict-free, and saves 512 load wavefronts per block
# and slice. Its stores, each value scattered to its transposed place, cost 224 more, and stores
# are 64 warp instructions per slice against 1,024 loads. Fewer shared-memory passes per slice
# (3,136 before, 2,848 after, about 9% fewer) is the likely source of step 3's gain; nothing
# here times the two effects apart. The `sB` reads stay 4-way in both; they become 2-way in
# step 5, where they are 16-byte `LDS.128`, and lesson 06 removes that last conflict.

# %% [markdown]
# ### Step 4: 16-byte global loads for staging (`wide_loads`)
#
# Each slice, a thread has staged 4 values of A and 4 of B with 4-byte loads, each with its own
# index arithmetic and bounds test. Now it fetches one float4 of each tile with `load4`: one
# `LDG.E.128` each. The A float4 is four neighbours in a row of A, which go to four different
# rows of `sAT` (the transpose happens on the way in, four 4-byte stores); the B float4 goes to
# one row of `sB`. The k-step loop is untouched; what changes is the code around it that runs
# once per slice (the **loop around it** column). The `LDG.E` left in the counts are the loads
# of C when beta is not 0. The price: every row must start on a 16-byte boundary, so K and N
# must be multiples of 4 (ValueError otherwise).

# %%
print(lesson_source.kernel_diff("gemm_lessons/kernels/sgemm/transposed_a.py",
                                "gemm_lessons/kernels/sgemm/wide_loads.py"))

# %%
# source: gemm_lessons/kernels/sgemm/wide_loads.py  (the package runs this same code; a test keeps the two identical)
BM, BN, BK, TM, TN = 128, 128, 8, 8, 8
THREADS = (BM // TM) * (BN // TN)  # 256
assert BM * BK == 4 * THREADS and BK * BN == 4 * THREADS  # one float4 of each tile per thread


@jit(max_registers=128)  # as in lesson 04: two 256-thread blocks per SM
@unrolled
def sgemm_wide_loads(A, B, C, alpha, beta):
    sAT = cuda.shared.array((BK, BM), float32)  # A tile, transposed: sAT[k, m]
    sB = cuda.shared.array((BK, BN), float32)
    tid = cuda.threadIdx.x
    row0 = cuda.blockIdx.y * BM
    col0 = cuda.blockIdx.x * BN
    M, K = A.shape
    N = B.shape[1]
    t_row = (tid // (BN // TN)) * TM  # this thread's 8x8 results, side by side: tile rows t_row..t_row+7
    t_col = (tid % (BN // TN)) * TN   # and columns t_col..t_col+7
    a_r = tid // (BK // 4)            # the float4 of the A tile this thread stages
    a_c = (tid % (BK // 4)) * 4
    b_r = tid // (BN // 4)            # ... and of the B tile
    b_c = (tid % (BN // 4)) * 4
    # the thread's results, and one k-step's column of A and row of B: every index is a
    # constant once the static_range loops are written out, so all three live in registers
    acc = cuda.local.array((TM, TN), float32)
    a = cuda.local.array(TM, float32)
    b = cuda.local.array(TN, float32)
    for i in static_range(TM):
        for j in static_range(TN):
            acc[i, j] = np.float32(0.0)
    for k0 in range(0, K, BK):
        # K and N are multiples of 4, so a float4 lies wholly inside or wholly outside
        if row0 + a_r < M and k0 + a_c < K:
            x0, x1, x2, x3 = load4(A, row0 + a_r, k0 + a_c)
        else:
            x0 = x1 = x2 = x3 = np.float32(0.0)
        sAT[a_c + 0, a_r] = x0  # transposing on the way in: four 4-byte stores
        sAT[a_c + 1, a_r] = x1
        sAT[a_c + 2, a_r] = x2
        sAT[a_c + 3, a_r] = x3
        if k0 + b_r < K and col0 + b_c < N:
            y0, y1, y2, y3 = load4(B, k0 + b_r, col0 + b_c)
        else:
            y0 = y1 = y2 = y3 = np.float32(0.0)
        sB[b_r, b_c + 0] = y0  # four scalar stores (the SASS: NVVM does not merge them here)
        sB[b_r, b_c + 1] = y1
        sB[b_r, b_c + 2] = y2
        sB[b_r, b_c + 3] = y3
        cuda.syncthreads()
        for k in range(BK):
            for i in static_range(TM):  # a row of the transposed A tile: 8 neighbouring values
                a[i] = sAT[k, t_row + i]
            for j in static_range(TN):  # a row of the B tile: 8 neighbouring values
                b[j] = sB[k, t_col + j]
            for i in static_range(TM):
                for j in static_range(TN):
                    acc[i, j] += a[i] * b[j]
        cuda.syncthreads()
    for i in static_range(TM):
        row = row0 + t_row + i
        for j in static_range(TN):
            col = col0 + t_col + j
            if row < M and col < N:
                if beta == 0:
                    C[row, col] = alpha * acc[i, j]
                else:
                    C[row, col] = alpha * acc[i, j] + beta * C[row, col]

# %%
gl.check_all(functools.partial(wide_loads.sgemm, kernel=sgemm_wide_loads), name="wide_loads",
             shapes=[(68, 44, 36, 1.0, 0.0), (36, 72, 20, 1.5, -0.5)] if gl.SIMULATOR else
                    [(68, 44, 36, 1.0, 0.0), (516, 1028, 260, -1.0, 0.5), (4, 4, 4, 2.0, 1.0)])

# %%
lesson05_steps.compiler_facts({"transposed_a": sgemm_transposed_a, "wide_loads": sgemm_wide_loads})

# %%
lesson05_steps.measure_step("wide_loads", {
    "transposed_a": functools.partial(transposed_a.sgemm, kernel=sgemm_transposed_a),
    "wide_loads": functools.partial(wide_loads.sgemm, kernel=sgemm_wide_loads)})

# %% [markdown]
# ### Step 5: 16-byte stores of C (`vec`, this lesson's kernel)
#
# The last change writes C with `store4`: one `STG.E.128` per four results instead of four
# `STG.E` (and, when beta is not 0, one `LDG.E.128` to read them). The stores happen once per
# thread, after the main loop, so they are unlikely to explain a large speedup on their own. On
# the H100 run recorded here, this step is also where the shared reads became `LDS.128` (steps 3
# and 4 kept 4-byte `LDS` there), and its main loop is shorter (the summary's instructions per
# slice; most of the instructions it saves are the 16 `LDS` that became 4 `LDS.128`). How much
# of this step's gain each change made is not measured here; the summary below sets the instruction counts
# against the speeds. What made the compiler merge the reads here and not in step 4 we did not
# find out. Two other differences in the diff change nothing at `vec`'s defaults: it carries
# lesson 06's `split` switch (with `split=False`, `ROW_GAP = COL_GAP = 4` and `SPAN = 8`, so
# `t_row + (i % 4 + i // 4 * ROW_GAP)` is `t_row + i`) and the `unroll_k` switch measured at the
# end of the lesson. A third may matter: `vec` has no register cap, where steps 1 to 4 carry
# lesson 04's `max_registers=128`. Compiled offline, the cap changes nothing (the SASS of `vec`
# and of `wide_loads` is the same with and without it: the next cell; `tests/teaching/test_lesson05_steps.py`
# checks both), but on the H100 the two capped kernels whose reads could merge (`transposed_a`,
# `wide_loads`) kept 4-byte `LDS` while the uncapped `vec` got `LDS.128`, as did the uncapped
# exercise kernel below. So on the GPU's own compiler the cap may be what kept the reads
# narrow; this lesson did not compile the step kernels without it on the GPU to find out, and
# step 5's gain may include it.

# %%
Markdown(lesson05_steps.offline_register_cap())  # from results/experiments/lesson05-offline-sass.json

# %%
print(lesson_source.kernel_diff("gemm_lessons/kernels/sgemm/wide_loads.py", "gemm_lessons/kernels/sgemm/vec.py"))

# %%
# source: gemm_lessons/kernels/sgemm/vec.py  (the package runs this same code; a test keeps the two identical)
BM, BN, BK, TM, TN = 128, 128, 8, 8, 8
THREADS = (BM // TM) * (BN // TN)  # 256
assert BM * BK == 4 * THREADS and BK * BN == 4 * THREADS  # one float4 of each tile per thread


def make_sgemm_vec(unroll_k=False, split=False):
    """unroll_k: write out the k-loop too; measured on an H100 that was slower, and NVVM did
    not merge its shared loads into LDS.128 (lesson 05).
    split: a thread's 8x8 results are four 4x4 pieces, BM/2 rows and BN/2 columns apart
    (lesson 06): then 8 neighbouring threads read 128 contiguous bytes."""
    ROW_GAP = BM // 2 if split else 4  # rows from a thread's first 4 result rows to its next 4
    COL_GAP = BN // 2 if split else 4  # ... and columns
    SPAN = 4 if split else TM          # rows (columns) between neighbouring threads' first results

    @cuda.jit
    @unrolled
    def sgemm_vec(A, B, C, alpha, beta):
        sAT = cuda.shared.array((BK, BM), float32)  # A tile, transposed: sAT[k, m]
        sB = cuda.shared.array((BK, BN), float32)
        tid = cuda.threadIdx.x
        row0 = cuda.blockIdx.y * BM
        col0 = cuda.blockIdx.x * BN
        M, K = A.shape
        N = B.shape[1]
        t_row = (tid // (BN // TN)) * SPAN  # first row and column of this thread's results
        t_col = (tid % (BN // TN)) * SPAN
        a_r = tid // (BK // 4)            # the float4 of the A tile this thread stages
        a_c = (tid % (BK // 4)) * 4
        b_r = tid // (BN // 4)            # ... and of the B tile
        b_c = (tid % (BN // 4)) * 4
        # the thread's results, and one k-step's column of A and row of B: every index is a
        # constant once the static_range loops are written out, so all three live in registers
        acc = cuda.local.array((TM, TN), float32)
        a = cuda.local.array(TM, float32)
        b = cuda.local.array(TN, float32)
        for i in static_range(TM):
            for j in static_range(TN):
                acc[i, j] = np.float32(0.0)
        for k0 in range(0, K, BK):
            # K and N are multiples of 4, so a float4 lies wholly inside or wholly outside
            if row0 + a_r < M and k0 + a_c < K:
                x0, x1, x2, x3 = load4(A, row0 + a_r, k0 + a_c)
            else:
                x0 = x1 = x2 = x3 = np.float32(0.0)
            sAT[a_c + 0, a_r] = x0  # transposing on the way in: four 4-byte stores
            sAT[a_c + 1, a_r] = x1
            sAT[a_c + 2, a_r] = x2
            sAT[a_c + 3, a_r] = x3
            if k0 + b_r < K and col0 + b_c < N:
                y0, y1, y2, y3 = load4(B, k0 + b_r, col0 + b_c)
            else:
                y0 = y1 = y2 = y3 = np.float32(0.0)
            sB[b_r, b_c + 0] = y0  # four scalar stores (the SASS: NVVM does not merge them here)
            sB[b_r, b_c + 1] = y1
            sB[b_r, b_c + 2] = y2
            sB[b_r, b_c + 3] = y3
            cuda.syncthreads()
            for k in static_range(BK) if static(unroll_k) else range(BK):
                for i in static_range(TM):  # 8 + 8 shared loads (NVVM merges them: 2 + 2 LDS.128)
                    a[i] = sAT[k, t_row + (i % 4 + i // 4 * ROW_GAP)]
                for j in static_range(TN):
                    b[j] = sB[k, t_col + (j % 4 + j // 4 * COL_GAP)]
                for i in static_range(TM):  # ... then 64 fused multiply-adds
                    for j in static_range(TN):
                        acc[i, j] += a[i] * b[j]
            cuda.syncthreads()
        for i in static_range(TM):
            row = row0 + t_row + (i % 4 + i // 4 * ROW_GAP)
            if row < M:
                for j in static_range(0, TN, 4):
                    col = col0 + t_col + j // 4 * COL_GAP
                    if col < N:
                        if beta == 0:
                            store4(C, row, col, alpha * acc[i, j], alpha * acc[i, j + 1],
                                   alpha * acc[i, j + 2], alpha * acc[i, j + 3])
                        else:
                            o0, o1, o2, o3 = load4(C, row, col)
                            store4(C, row, col, alpha * acc[i, j] + beta * o0, alpha * acc[i, j + 1] + beta * o1,
                                   alpha * acc[i, j + 2] + beta * o2, alpha * acc[i, j + 3] + beta * o3)

    return sgemm_vec


# %%
# What numba compiles: the kernel with every static_range loop written out (first 40 lines)
my_vec = make_sgemm_vec()
print("\n".join(expanded_source(my_vec).splitlines()[:40]))
print(f"    ... {len(expanded_source(my_vec).splitlines())} lines in all")

# %%
from gemm_lessons.kernels.sgemm import vec

gl.check_all(functools.partial(vec.sgemm, kernel=my_vec), name="vec",
             shapes=[(68, 44, 36, 1.0, 0.0), (36, 72, 20, 1.5, -0.5)] if gl.SIMULATOR else
                    [(68, 44, 36, 1.0, 0.0), (516, 1028, 260, -1.0, 0.5), (4, 4, 4, 2.0, 1.0)])

# %%
# NBVAL_CHECK_OUTPUT
A = cuda.to_device(np.ones((8, 6), np.float32))
B = cuda.to_device(np.ones((6, 8), np.float32))
try:
    vec.sgemm(A, B, cuda.device_array((8, 8), np.float32))
except ValueError as e:
    print("ValueError:", e)

# %%
lesson05_steps.compiler_facts({"wide_loads": sgemm_wide_loads, "vec": my_vec})

# %%
lesson05_steps.measure_step("vec", {
    "wide_loads": functools.partial(wide_loads.sgemm, kernel=sgemm_wide_loads),
    "vec": functools.partial(vec.sgemm, kernel=my_vec)})

# %% [markdown]
# ### Look inside with the bank tracer
#
# One block (K = 8) on the simulator, with the shared loads merged into 16-byte accesses as the
# compiler does (`merge=("ld",)`; the SASS below confirms `LDS.128`). Shared memory is split
# into 32 [banks](GLOSSARY.md#bank), and a warp's 16-byte loads are served a quarter warp (8
# threads) at a time, one [phase](GLOSSARY.md#phase) each. The `sAT` reads are conflict-free,
# but the `sB` reads are not: the 8 threads of a phase read 16 bytes each, 32 bytes apart, two
# to a bank ([bank conflict](GLOSSARY.md#bank-conflict)). Lesson 06 removes that. The stores
# that fill the tiles conflict too (the `st` rows: the scattered `sAT` stores 2-way, the `sB`
# stores 4-way), but there are far fewer of them per slice than loads (the two **total** rows);
# lesson 06's exercise removes the same kind of `sAT` store conflict by padding the tile.

# %%
from gemm_lessons.instruments import shared_tracer
vec_trace = shared_tracer.trace_rung("vec", (128, 128, 8), merge=("ld",))
vec_trace

# %%
# NBVAL_CHECK_OUTPUT
t = vec_trace.totals("ld")
print(f"loads: {t['instructions']} warp instructions, {t['wavefronts']} wavefronts, {t['conflicts']} from conflicts")

# %% [markdown]
# ## All five steps
#
# Every step and cuBLAS in one run at 4096^3 (the package's kernels). **x the step before** is
# the step's speedup; **share of the jump** is the TFLOPS it gained, as a share of all the TFLOPS
# gained from `reg2d` to `vec` (the shares add up to 100%, up to rounding).
# **instructions per slice** is read off the compiled main loop: the loop around the k-step loop
# once, plus the k-step loop BK = 8 times, for the same 512 `FFMA` in every step. The split
# depends on the order: the changes work together (the 16-byte shared reads needed steps 1 and 3, and, judging
# from the offline SASS in the next cell, the compile-time unrolling of step 2: `transposed_a`
# written with `range` loops instead of `static_range` keeps sixteen 4-byte `LDS`;
# `tests/teaching/test_lesson05_steps.py` checks it), so another order would share the jump out
# differently.

# %%
Markdown(lesson05_steps.offline_without_step2())  # from results/experiments/lesson05-offline-sass.json

# %%
steps = lesson05_steps.summary()
steps

# %%
steps.plot();

# %% [markdown]
# ### Is it issue slots?
#
# Each of an SM's four warp schedulers issues at most one instruction per cycle to 32 lanes:
# 128 lanes in all, exactly the SM's FP32 lanes. Every instruction that is not an `FFMA` takes a
# slot an `FFMA` could have used, so a step whose instructions were issued back to back, never
# waiting, could reach FFMA's share of its instructions times the FP32 peak, and no more. The
# next cell sets each step against that *issue ceiling*.

# %%
Markdown(steps.issue_reading())

# %% [markdown]
# A step far below its issue ceiling is not held down by issue slots alone: its warps also
# wait (for shared and global loads, at barriers), and this lesson does not measure how long
# (lesson 08's profiler table shows where the last rung's warps wait). A step whose speed and
# FFMA share moved apart (the last line above) shows the same: the number of instructions is
# not the whole story, and the instructions differ in more than their number (the width of the
# loads, for one).

# %% [markdown]
# ## Measure: your prediction, and the k-loop written out too
#
# `vec` against `reg2d` once more, for your prediction, next to the variant that also writes
# out the loop over the 8 k-steps (`unroll_k=True`): on a GPU all three are timed now, in the
# same run; on the simulator the cells show the recorded benchmark run.

# %%
my_vec_unrolled_k = make_sgemm_vec(unroll_k=True)
table = measure_step.compare({"vec": functools.partial(vec.sgemm, kernel=my_vec),
                         "vec_unrolled_k": functools.partial(vec.sgemm, kernel=my_vec_unrolled_k),
                         "reg2d": ladder.SGEMM["reg2d"]}, size=(4096, 4096, 4096))
table

# %%
print(f"vec vs reg2d: {table.speedup('vec', 'reg2d'):.2f}x ({table.source})")
exercises.compare_prediction(my_speedup, table.speedup("vec", "reg2d"), "vec vs reg2d at 4096^3 (times faster)",
                             table.source)

# %% [markdown]
# ## Look inside: the SASS proves the wide loads
#
# Count the instructions by width: `LDG.E.128` (global float4 loads; the count includes the
# loads of C for beta != 0), `LDS.128` (shared float4 loads), `STG.E.128` (float4 stores of C)
# and `FFMA`, with 0 bytes of local memory. `FFMA` counts instructions in the code: one k-step's
# 64 in the loop body plus 64 in the `beta != 0` epilogue, as in lesson 04. Then compare with the
# fully unrolled variant (`unroll_k=True`): its `FFMA` count shows all eight k-steps written out,
# but the compiler did not merge its shared loads, so every value arrives through a 4-byte `LDS`
# (we did not find out why; a constant k is not the whole story, since steps 3 and 4 did not
# merge theirs either) (lesson 07 shows how to make the 16-byte shared loads
# explicit, so they survive full unrolling). More unrolling is not automatically better: read
# the SASS, then measure.

# %%
kernels = {"vec": my_vec, "vec_unrolled_k": my_vec_unrolled_k}
compiler_facts.compiler_facts(kernels, threads={name: 256 for name in kernels})


# %% [markdown]
# ## Exercise 05-stage-a
# Each of the 256 threads stages one float4 of the 128x8 A tile. Write `stage_a(tid)` returning
# the (row, first column) of that float4 within the tile, so that neighbouring threads read
# neighbouring 16-byte pieces of a row.

# %%
# NBVAL_CHECK_OUTPUT
def stage_a(tid):
    ### BEGIN SOLUTION
    return tid // 2, (tid % 2) * 4
    ### END SOLUTION

exercises.check("05-stage-a", stage_a)

# %% [markdown]
# ## Exercise 05-transpose-a: write the transposed staging
#
# Below is this lesson's kernel at a smaller size: a 64 x 64 tile of C per block, 64 threads
# with 8x8 results each, slices of BK = 8. Each thread now stages **two** float4s of A per
# slice (rows `a_r` and `a_r + 32` of the tile) and two of B. Two pieces are missing:
#
# 1. where the four values `x0..x3` (that is, `A[m, k0 + a_c + d]` for `d = 0..3`, with `m` the
#    tile row `a_r + p * A_STEP`) go in the transposed tile `sAT[k, m]`;
# 2. in the k-step, where a thread's 8 values of A for step `k` (tile rows `t_row + i`) are read.
#
# The check runs your kernel on two awkward shapes against the float64 reference, then checks
# the technique: the tracer must see every shared load of the k-step as a 16-byte access (four
# neighbouring, aligned floats per lane, which the compiler *may* turn into `LDS.128`); on a
# GPU it runs the tracer in a second process, on the simulator, and also reports how many
# `LDS.128` the GPU's compiler made (steps 3 and 4 showed that it does not always merge). An A
# tile stored untransposed gives the right result and fails the second part.

# %%
import numpy as np
from numba import cuda, float32
from gemm_lessons.teaching import exercises
from gemm_lessons.core.float4 import load4, store4
from gemm_lessons.core.unroll import static_range, unrolled

BM, BN, BK, TM, TN = 64, 64, 8, 8, 8  # the check launches ceil(N/64) x ceil(M/64) blocks of 64 threads
THREADS = (BM // TM) * (BN // TN)     # 64
A_STEP = THREADS // (BK // 4)         # 32: a thread stages rows a_r and a_r + 32 of the A tile
B_STEP = THREADS // (BN // 4)         # 4: ... and rows b_r and b_r + 4 of the B tile


@cuda.jit
@unrolled
def sgemm_ex05(A, B, C, alpha, beta):
    sAT = cuda.shared.array((BK, BM), float32)  # the A tile, transposed: sAT[k, m]
    sB = cuda.shared.array((BK, BN), float32)
    tid = cuda.threadIdx.x
    row0 = cuda.blockIdx.y * BM
    col0 = cuda.blockIdx.x * BN
    M, K = A.shape
    N = B.shape[1]
    t_row = (tid // (BN // TN)) * TM  # this thread's 8x8 results: tile rows t_row.., columns t_col..
    t_col = (tid % (BN // TN)) * TN
    a_r = tid // (BK // 4)            # the float4s of A this thread stages: tile rows a_r + p * A_STEP,
    a_c = (tid % (BK // 4)) * 4       #   columns a_c..a_c+3 of the slice
    b_r = tid // (BN // 4)            # ... and of B: rows b_r + q * B_STEP, columns b_c..b_c+3
    b_c = (tid % (BN // 4)) * 4
    acc = cuda.local.array((TM, TN), float32)
    a = cuda.local.array(TM, float32)
    b = cuda.local.array(TN, float32)
    for i in static_range(TM):
        for j in static_range(TN):
            acc[i, j] = np.float32(0.0)
    for k0 in range(0, K, BK):
        for p in static_range(BM * BK // 4 // THREADS):  # 2 float4s of A per thread
            x0 = x1 = x2 = x3 = np.float32(0.0)
            if row0 + a_r + p * A_STEP < M and k0 + a_c < K:  # K % 4 == 0: a float4 is all in or all out
                x0, x1, x2, x3 = load4(A, row0 + a_r + p * A_STEP, k0 + a_c)
            ### BEGIN SOLUTION: pass
            sAT[a_c + 0, a_r + p * A_STEP] = x0
            sAT[a_c + 1, a_r + p * A_STEP] = x1
            sAT[a_c + 2, a_r + p * A_STEP] = x2
            sAT[a_c + 3, a_r + p * A_STEP] = x3
            ### END SOLUTION
        for q in static_range(BK * BN // 4 // THREADS):  # 2 float4s of B per thread
            y0 = y1 = y2 = y3 = np.float32(0.0)
            if k0 + b_r + q * B_STEP < K and col0 + b_c < N:
                y0, y1, y2, y3 = load4(B, k0 + b_r + q * B_STEP, col0 + b_c)
            store4(sB, b_r + q * B_STEP, b_c, y0, y1, y2, y3)  # store4 takes a shared array too (b_c % 4 == 0)
        cuda.syncthreads()
        for k in range(BK):
            for i in static_range(TM):  # A[row0 + t_row + i, k0 + k]
                ### BEGIN SOLUTION: a[i] = np.float32(0.0)
                a[i] = sAT[k, t_row + i]
                ### END SOLUTION
            for j in static_range(TN):
                b[j] = sB[k, t_col + j]
            for i in static_range(TM):
                for j in static_range(TN):
                    acc[i, j] += a[i] * b[j]
        cuda.syncthreads()
    for i in static_range(TM):
        row = row0 + t_row + i
        for j in static_range(TN):
            col = col0 + t_col + j
            if row < M and col < N:
                if beta == 0:
                    C[row, col] = alpha * acc[i, j]
                else:
                    C[row, col] = alpha * acc[i, j] + beta * C[row, col]


exercises.check("05-transpose-a", sgemm_ex05)

# %% [markdown]
# ## Takeaway
#
# * Layout first: results side by side and the A tile transposed on its way into shared memory
#   turn a thread's strided values into contiguous ones, which is what makes 16-byte loads
#   possible.
# * From numba: shared-memory `LDS.128` can come for free with aligned, visibly contiguous
#   indices, but not always (steps 3 and 4 on the H100); global `LDG.128`/`STG.128` needs a tiny intrinsic;
#   unrolling is asked for with `static_range` (`@unrolled`), and a register tile needs it:
#   constant indices only. Always confirm in the SASS.
# * One change at a time, each measured against the one before in the same run, tells what
#   each was worth; the table above is the record. Lesson 10 lists them with every other
#   technique of the course.
# * Next (lesson 06): the banks of shared memory, and why *which* threads read *which*
#   addresses in the same instruction still matters.

# %% [markdown]
# ## Sources and further reading
#
# * The source articles this lesson re-tells and tests: [[1]](REFERENCES.md#seed-000), [[4]](REFERENCES.md#seed-003), [[5]](REFERENCES.md#seed-004) (their origins and what each
#   covers are in [REFERENCES.md](REFERENCES.md#source-articles)).
# * What to read next: [REFERENCES.md, lesson 05](REFERENCES.md#lesson-05).
# * Terms: the [glossary](GLOSSARY.md); the execution model and the compiler-facts table are
#   introduced in the [primer](00a_primer.ipynb).
