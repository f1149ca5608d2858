# %% [markdown]
# # 11 · From a kernel to a library: edges, launches, split-K, dispatch
#
# **Where we are.** Lesson 08's last rung, `warptile`, runs close to cuBLAS on large squares (the
# table below, from lesson 10's record). It also assumes a lot: K and N multiples of 4, arrays that
# start on 16-byte boundaries, a product large enough to fill the GPU with 128 x 128 tiles, and a
# caller who does not mind what Python costs per call. A library can assume none of that.
# `gl.sgemm` (`gemm_lessons/library/device_arrays.py`) is this course's library, and this lesson takes it apart in
# four steps: **edges and alignment**, **what a call costs and how to measure it**, **split-K** for
# a small C with a long K, and **dispatch**, a kernel chosen per shape. Then why cuBLAS is built the
# same way, at a much larger scale.

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
from IPython.display import Markdown
from gemm_lessons.library import dispatch
from gemm_lessons.teaching import leaderboard
from gemm_lessons.teaching.lesson11 import (call_overhead, call_overhead_sentences, dispatch_model,
                                            dispatch_sentences, edge_shapes, edge_shapes_sentences,
                                            kernel_facts, probe_sentences, profile_comparison,
                                            profile_comparison_sentences, shape_suite, shape_suite_sentences,
                                            split_k_plans, split_k_sentences, suite_record)
from gemm_lessons import library
from gemm_lessons.measure import problems
from gemm_lessons.teaching.lesson11.suite_record import ODD_SHAPE, REFERENCE_SHAPE, SKINNY_SHAPE
measure_step.recorded(["warptile", "cublas"])  # where we start

# %% [markdown]
# The library's own record is the **shape suite**: `python -m gemm_lessons.runs.shapes` on a GPU times
# `gl.sgemm` against cuBLAS on squares from 512 to 16384, odd sizes and skinny shapes, single calls
# and back to back, times every candidate kernel on most of them, and measures the numbers the
# dispatch rule uses (the next cell prints how long the recorded run took). It writes
# `results/shapes-<device>.json`; most numbers below come from it, and the cells that can measure
# now do so on a GPU.

# %%
rec = suite_record.load()
print(f"shape suite: {suite_record.label(rec)}, commit {rec.git_commit}, `{suite_record.command(rec)}`")
print(", ".join(f"{k} {v}" for k, v in (rec.versions or {}).items()))
print("seconds the run took:", ", ".join(f"{k} {v:.0f}" for k, v in (rec.seconds or {}).items()))

# %% [markdown]
# ## 1 · Edges and alignment
#
# **The idea.** Lesson 05 made global loads 16 bytes wide ([wide loads](GLOSSARY.md#wide-loads)):
# `load4(A, row, col)` reads `A[row, col:col + 4]` in one instruction, and the GPU allows that only at
# an address that is a multiple of 16 ([alignment](GLOSSARY.md#alignment)). Row r of a row-major
# float32 matrix with K columns starts 4 x r x K bytes after row 0: a multiple of 16 for every row
# only when K is a multiple of 4. The same holds for B's rows with N, and the array itself must start
# on a 16-byte boundary (a fresh allocation does; a view such as `A_d[1:]` of a 1-D `A_d` does not):

# %%
import matplotlib.pyplot as plt
edge_shapes.alignment_figure(ks=(8, 10));

# %% [markdown]
# The last rung therefore refuses such shapes, and says why:

# %%
# NBVAL_CHECK_OUTPUT
rng = np.random.default_rng(11)
A_d = cuda.to_device(rng.uniform(-1, 1, (6, 10)).astype(np.float32))
B_d = cuda.to_device(rng.uniform(-1, 1, (10, 8)).astype(np.float32))
try:
    ladder.SGEMM["warptile"](A_d, B_d, cuda.device_array((6, 8), np.float32))
except ValueError as e:
    print("ValueError:", e)

# %% [markdown]
# **What the library does instead.** Where K and N are multiples of 4 and the arrays C-contiguous
# and 16-byte aligned, `gl.sgemm` may run lesson 08's last rung, which the library calls the **wide
# kernel** (its global loads are 16 bytes wide; section 4 says how the library chooses). Elsewhere
# it runs the **any-shape kernel**, or, for a large product, the wide kernel on padded copies of A
# and B (further down in this section). The any-shape kernel keeps lesson 08's structure (block, warp and thread tiles
# from a `TileConfig`, two shared buffers, 16-byte loads from shared memory in the k-steps) and
# changes how it reads global memory, so that any shape and alignment works. Every global load is
# one float with its own [predicate](GLOSSARY.md#predicate): inside the matrix, and inside this
# block's range of k (`k_chunk`: section 3 uses it). Consecutive threads still load neighbouring
# addresses (for A, 8 threads cover the 32 bytes of one slice row, so a warp reads four such pieces
# from four rows), with four times as many load instructions as the float4 loads. Where a row of A
# does not start on a 32-byte boundary (K not a multiple of 8), the 8 floats of one slice row (32
# bytes) straddle two 32-byte [sectors](GLOSSARY.md#sector), so the loads fetch more sectors than
# they use; the rest of each sector belongs to a neighbouring slice and may still be in a cache when
# that slice is loaded (this lesson does not measure it). The kernel is also compiled for arrays
# of any strides (numba's layout `'A'`, against `'C'` for C-contiguous arrays, whose rows lie one
# after another in memory), which is how a slice of a larger matrix works. In the code, `cfg.pad_a` is lesson 06's
# [padding](GLOSSARY.md#padding): extra floats (4 in lesson 08's configurations) at the end of each
# row of the transposed A tile, against bank conflicts in the stores into it.

# %%
from numba import boolean
from gemm_lessons.core.float4 import load1, load4, store1  # one float (load1, store1) or four (load4) at a time
from gemm_lessons.kernels.library.sgemm_any_shape import validate  # warptile's rules, plus the scalar staging's
from gemm_lessons.kernels.sgemm.warptile import TileConfig  # lesson 08's configurations
from gemm_lessons.core.unroll import static_range, unrolled  # lesson 05's compile-time unrolling

# %%
# source: gemm_lessons/kernels/library/sgemm_any_shape.py  (the package runs this same code; a test keeps the two identical)
def make_kernel(cfg=TileConfig()):
    """Compile the any-shape kernel for ``cfg``; arguments (A, B, C, alpha, beta, k_chunk)."""
    validate(cfg)
    BM, BN, BK, WM, WN, TM, TN = cfg.BM, cfg.BN, cfg.BK, cfg.WM, cfg.WN, cfg.TM, cfg.TN
    LM, LN = cfg.lanes
    T = cfg.threads
    A_ROW = BM + cfg.pad_a  # a row of the transposed A tile, padded
    A_LOADS = BM * BK // T  # elements of the A tile each thread stages per slice, A_STEP rows apart
    A_STEP = T // BK
    B_LOADS = BK * BN // T  # ... and of the B tile, B_STEP rows apart
    B_STEP = T // BN

    @jit(max_registers=cfg.max_registers)
    @unrolled
    def sgemm_any_shape(A, B, C, alpha, beta, k_chunk):
        sA0 = cuda.shared.array((BK, A_ROW), float32)  # two buffers of the transposed A tile
        sA1 = cuda.shared.array((BK, A_ROW), float32)
        sB0 = cuda.shared.array((BK, BN), float32)
        sB1 = cuda.shared.array((BK, BN), float32)
        tid = cuda.threadIdx.x
        row0 = cuda.blockIdx.y * BM
        col0 = cuda.blockIdx.x * BN
        M, K = A.shape
        N = B.shape[1]
        k_begin = cuda.blockIdx.z * k_chunk  # this block's part of the sum over k
        k_end = min(K, k_begin + k_chunk)
        warp, lane = tid // 32, tid % 32
        a_base = (warp // (BN // WN)) * WM + (lane // LN) * 4  # this thread's first row in the tile
        b_base = (warp % (BN // WN)) * WN + (lane % LN) * 4    # ... and first column
        a_r = tid // BK  # the elements of the A tile this thread stages: rows a_r + i * A_STEP,
        a_k = tid % BK   #   column a_k (8 neighbouring threads read 32 contiguous bytes of a row)
        b_r = tid // BN  # ... and of the B tile: rows b_r + j * B_STEP, column b_c (a warp reads
        b_c = tid % BN   #   128 contiguous bytes)
        a_ok = cuda.local.array(A_LOADS, boolean)
        for i in static_range(A_LOADS):
            a_ok[i] = row0 + a_r + i * A_STEP < M
        b_ok = col0 + b_c < N
        acc = cuda.local.array((TM, TN), float32)
        for i in static_range(TM):
            for j in static_range(TN):
                acc[i, j] = np.float32(0.0)
        a = cuda.local.array(TM, float32)
        b = cuda.local.array(TN, float32)
        xa = cuda.local.array(A_LOADS, float32)  # elements on their way from global to shared memory
        xb = cuda.local.array(B_LOADS, float32)

        def load_a(i, k0):  # global -> register, 0 outside A or outside this block's k-range
            xa[i] = np.float32(0.0)
            if a_ok[i] & (k0 + a_k < k_end):
                xa[i] = load1(A, row0 + a_r + i * A_STEP, k0 + a_k)

        def load_b(j, k0):
            xb[j] = np.float32(0.0)
            if b_ok & (k0 + b_r + j * B_STEP < k_end):
                xb[j] = load1(B, k0 + b_r + j * B_STEP, col0 + b_c)

        def stage_loads(k0):
            for i in static_range(A_LOADS):
                load_a(i, k0)
            for j in static_range(B_LOADS):
                load_b(j, k0)

        def stage_stores(sA, sB):  # registers -> shared: A transposed (conflict-free with pad_a 4)
            for i in static_range(A_LOADS):
                sA[a_k, a_r + i * A_STEP] = xa[i]
            for j in static_range(B_LOADS):
                sB[b_r + j * B_STEP, b_c] = xb[j]

        def k_step(sA, sB, k):  # as warptile: TM/4 + TN/4 LDS.128, TM*TN FFMA
            for p in static_range(TM // 4):
                a[4 * p], a[4 * p + 1], a[4 * p + 2], a[4 * p + 3] = load4(sA, k, a_base + p * LM * 4)
            for q in static_range(TN // 4):
                b[4 * q], b[4 * q + 1], b[4 * q + 2], b[4 * q + 3] = load4(sB, k, b_base + q * LN * 4)
            for i in static_range(TM):
                for j in static_range(TN):
                    acc[i, j] += a[i] * b[j]

        def compute_and_stage(sA, sB, k0, sA_next, sB_next):
            """BK k-steps from sA, sB while the slice starting at k0 travels to sA_next, sB_next."""
            stage_loads(k0)
            for k in static_range(BK):
                k_step(sA, sB, k)
            stage_stores(sA_next, sB_next)

        stage_loads(k_begin)  # prologue: the first slice into buffer 0
        stage_stores(sA0, sB0)
        cuda.syncthreads()
        for k0 in range(k_begin, k_end, 2 * BK):
            compute_and_stage(sA0, sB0, k0 + BK, sA1, sB1)
            cuda.syncthreads()  # buffer 1 full; everyone is done with buffer 0
            if k0 + BK >= k_end:
                break
            compute_and_stage(sA1, sB1, k0 + 2 * BK, sA0, sB0)
            cuda.syncthreads()
        out0 = cuda.blockIdx.z * M  # split-K: block z's partial sums go to rows z*M ...
        for i in static_range(TM):
            row = row0 + a_base + (i // 4 * LM * 4 + i % 4)  # 4x4 pieces, LM*4 rows apart
            if row < M:
                for j in static_range(TN):
                    col = col0 + b_base + (j // 4 * LN * 4 + j % 4)
                    if col < N:
                        if beta == 0:  # C is not read (it may hold anything, NaN included)
                            store1(C, out0 + row, col, alpha * acc[i, j])
                        else:
                            store1(C, out0 + row, col, alpha * acc[i, j] + beta * load1(C, out0 + row, col))

    sgemm_any_shape.config = cfg
    return sgemm_any_shape

# %% [markdown]
# **Check.** First the cell above: `make_kernel` with the library's smallest tiles (64 x 64, 64
# threads), launched by hand on a shape where nothing is a multiple of 4 or of a tile. Then
# `gl.sgemm` itself, on such shapes and on two views with K and N multiples of 4: one C-contiguous
# that starts one float into its array (not 16-byte aligned), and one whose rows are 33 floats apart
# (not contiguous). All against the float64 reference, with alpha and beta (the views with alpha 1,
# beta 0);
# C is [poisoned](GLOSSARY.md#poison) first so that an unwritten element shows.

# %%
# NBVAL_CHECK_OUTPUT
cfg64 = dispatch.TILES["64x64"]
any_shape_64 = make_kernel(cfg64)  # the cell above, compiled for 64 x 64 tiles


def launch_any_shape(A, B, C, alpha=1.0, beta=0.0):
    M, K = A.shape
    N = B.shape[1]
    grid = ((N + cfg64.BN - 1) // cfg64.BN, (M + cfg64.BM - 1) // cfg64.BM, 1)  # one part along z: all of K
    any_shape_64[grid, cfg64.threads](A, B, C, np.float32(alpha), np.float32(beta), np.int64(K))


print("the cell's kernel, 67x45x33: right:", problems.check(launch_any_shape, 67, 45, 33, 1.5, -0.5).passed)


def lib(A, B, C, alpha=1.0, beta=0.0):
    gl.sgemm(A, B, C, alpha, beta)


for M, N, K in [(33, 65, 47), (9, 6, 1)]:
    res = problems.check(lib, M, N, K, 1.5, -0.5, name="gl.sgemm")
    print(f"{M}x{N}x{K} (alpha 1.5, beta -0.5): right: {res.passed}")
B_host = rng.uniform(-1, 1, (32, 12)).astype(np.float32)
flat = rng.uniform(-1, 1, 1 + 20 * 32).astype(np.float32)
view = cuda.to_device(flat)[1:].reshape(20, 32)  # C-contiguous, starting 4 bytes into its array
big = rng.uniform(-1, 1, (20, 33)).astype(np.float32)
strided = cuda.to_device(big)[:, 1:]  # 20 x 32 with rows 33 floats apart: not contiguous either
for name, A_view, A_host in (("a contiguous view 4 bytes off a 16-byte boundary", view, flat[1:].reshape(20, 32)),
                             ("a view with rows 33 floats apart", strided, big[:, 1:])):
    C_view = gl.sgemm(A_view, cuda.to_device(B_host)).copy_to_host()
    print(f"{name}: right:", problems.compare("view", C_view, A_host.astype(np.float64) @ B_host, 1.0, 0.0, 32).passed)

# %%
# library.plan_of: the plan gl.sgemm runs for these arrays (their shape, layout and alignment decide);
# a plan reads kernel (wide, any_shape or padded), tiles BM x BN, and for split-K its number of parts (section 3)
print("the plans gl.sgemm chose here:")
for M, N, K in [(33, 65, 47), (9, 6, 1)]:
    plan = library.plan_of(cuda.device_array((M, K), np.float32), cuda.device_array((K, N), np.float32))
    print(f"  {M}x{N}x{K}: {plan}")
print(f"  20x12x32, A the contiguous view 4 bytes off: {library.plan_of(view, cuda.to_device(B_host))}")
print(f"  20x12x32, A the view with rows 33 floats apart: {library.plan_of(strided, cuda.to_device(B_host))}")
print(f"  for comparison, 20x12x32 with a fresh 20x32 array as A: "
      f"{library.plan_of(cuda.to_device(big[:, 1:].copy()), cuda.to_device(B_host))}")
print("with the dispatch model", dispatch.model().source)

# %% [markdown]
# **What the any-shape kernel costs.** The shape suite's first step, its **calibration**, times every
# kernel and tile size of the library back to back on one aligned square, to get the rates the
# dispatch model of section 4 ranks plans with. It separates the kernel from the shape: both kernels
# with the same tiles on the same aligned square.

# %%
Markdown(edge_shapes_sentences.kernel_cost_sentence(rec))

# %% [markdown]
# **Look inside.** What the compiler made of the library's kernels: registers, local memory (a
# non-zero count means [spills](GLOSSARY.md#register-spill)), shared memory and resident blocks per
# SM; on a GPU also the SASS's global loads by width (`LDG.E.128` for 16 bytes, `LDG.E` for 4) and
# the FFMAs.

# %%
Markdown(kernel_facts.compiler_markdown(rec))

# %% [markdown]
# With 128 x 128 tiles (256 threads, and [BK](GLOSSARY.md#bm-bn-bk) = 8: a slice of A and B is 8
# values of k deep, as in lesson 08) the any-shape kernel has the same register cap as the last rung
# (two blocks per SM) and stages (BM x BK + BK x BN) / threads = (128 x 8 + 8 x 128) / 256 = 8
# floats per thread per slice with 8 load instructions, where the wide kernel needs 2; under that
# cap the compiler spilled. These are the differences the tables show (scalar loads, scalar stores,
# spills), and the sentence above names them without weighing them: this lesson did not measure what
# each one costs.
#
# **A second way: pad, then run the wide kernel.** A large product can afford to make aligned copies
# of its inputs. `gl.sgemm`'s **padded plan** copies A into an M x K4 array and B into a K4 x N4 array,
# where K4 and N4 are K and N rounded up to multiples of 4, with zeros in the added columns and rows;
# it runs the wide kernel on the copies into an M x N4 [workspace](GLOSSARY.md#workspace) (a scratch
# array the library allocates once per shape and reuses), and copies the workspace's first N columns
# into C with the reduction kernel of section 3 (with one part, it applies alpha and beta and nothing
# else). The zeros change nothing: each added column of A meets an added row of B, and their products
# are 0. The copies touch every element of A, B and C once or twice, against 2 x M x N x K
# floating-point operations for the product: small next to a large product, large next to a small
# one. Which costs less for a given shape, the copies or the any-shape kernel's slower loads, is
# for section 4's model to estimate; the suite has one odd shape, measured below. Three more
# things: M is not padded (the wide kernel already leaves out rows past M, lesson 07's guards); the
# result goes through a workspace because C's rows (N floats) need not start on 16-byte boundaries;
# and this padding of whole matrices in global memory is not lesson 06's padding of the rows of a
# shared tile (`pad_a` above), which only shifts banks. The copy kernel (the
# package's `gemm_lessons/kernels/library/pad_copy.py`) gives each thread one element of the
# destination, consecutive threads consecutive columns:

# %%
# source: gemm_lessons/kernels/library/pad_copy.py  (the package runs this same code; a test keeps the two identical)
@cuda.jit
def pad_copy(src, dst):
    rows, cols = src.shape
    col = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if col >= dst.shape[1]:
        return
    for row in range(cuda.blockIdx.y, dst.shape[0], cuda.gridDim.y):
        if row < rows and col < cols:
            dst[row, col] = src[row, col]
        else:
            dst[row, col] = np.float32(0.0)

# %%
# NBVAL_CHECK_OUTPUT
small = np.arange(1, 16, dtype=np.float32).reshape(3, 5)
padded = cuda.device_array((3, 8), np.float32)  # 5 columns rounded up to 8
pad_copy[(1, 3), 128](cuda.to_device(small), padded)
print("a 3 x 5 matrix padded to 3 x 8:")
print(padded.copy_to_host())
pad_plan = dispatch.Plan("padded", "64x64")  # the padded plan with 64 x 64 tiles, run by the library
res = problems.check(lambda A, B, C, alpha=1.0, beta=0.0: library.run_plan(pad_plan, A, B, C, alpha, beta),
                     33, 65, 47, 1.5, -0.5, name=str(pad_plan))
print(f"{pad_plan} at 33x65x47 (alpha 1.5, beta -0.5): right: {res.passed}")

# %%
Markdown(edge_shapes_sentences.padding_sentence(ODD_SHAPE))

# %% [markdown]
# **Predict, then measure.** 4095 x 4097 x 4093 is the same work as 4096^3, give or take a
# tenth of a percent, but nothing in it is a multiple of 4. `gl.sgemm` runs the plan section 4's
# model picks for it (the table the next cell prints names it; with the H100's record, the padded
# plan with 128 x 128 tiles). What % of cuBLAS do you expect it to reach there (lesson 08's kernel
# was close to cuBLAS at 4096^3)? On a GPU the next cell measures both shapes now, as the shape suite
# does (a check against float64, then single calls and back to back, cuBLAS in the same run); on
# the simulator it shows the recorded result.

# %%
my_odd_pct = None  # your prediction: gl.sgemm at 4095x4097x4093, % of cuBLAS (for example 90)

# %%
edges = shape_suite.measure_shapes([REFERENCE_SHAPE, ODD_SHAPE])
edges

# %%
exercises.compare_prediction(my_odd_pct, edges.pct_cublas(ODD_SHAPE), "gl.sgemm at 4095x4097x4093, % of cuBLAS "
                             "(single calls)", edges.source)

# %% [markdown]
# The record's numbers for the same two shapes, with every plan the suite timed at the odd one:

# %%
Markdown(edge_shapes_sentences.edges_sentence(rec))

# %% [markdown]
# cuBLAS's own slowdown at the odd shape is in the first sentence above. Which kernel cuBLAS ran
# there this lesson cannot see; NVIDIA's libraries build kernels per alignment (section 5), so it
# may well have one for unaligned data. This run's single-call % of cuBLAS and the record's can
# differ by several points through cuBLAS's single-call time alone (compare the cuBLAS columns; the
# record's single calls against its back-to-back ones are in section 4).
#
# ## 2 · What a call costs, and how to measure it
#
# **The idea.** `kernel[grid, block](A, B, C, alpha, beta)` returns before the GPU has started, but
# not before Python has done its part ([launch overhead](GLOSSARY.md#launch-overhead)). numba builds a
# launch configuration, works out the numba type of every argument, looks up the compiled version for
# those types, converts each argument and hands the launch to the driver. When a kernel runs longer
# than that, back-to-back calls overlap it: the GPU works on one kernel while Python prepares the
# next. When the kernel is shorter, the GPU waits for Python, and a timing measures the host, not the
# kernel ([host-bound](GLOSSARY.md#host-bound)).
#
# **How to measure it.** Three numbers, each answering a different question; the first two use
# [CUDA events](GLOSSARY.md#cuda-events), timestamps the GPU records in its stream of work:
#
# 1. **single call** (`gemm_lessons.runs.shapes.single_calls`): an event just before one call and one just
#    after, on an idle GPU. This is what a user waits for once: getting the call to the GPU, plus the
#    kernel.
# 2. **back to back** (`gl.time_gpu`, every lesson's timer): one call queued before the start event,
#    then a batch of calls; the host issues the next call while the GPU runs the last. This is the
#    kernel's time, unless the host cannot keep up (`Timing.host_bound` then says so).
# 3. **issue time**: the host's clock around a batch of calls, without waiting for the GPU: Python's
#    cost per call.
#
# The table below measures the first and the third for five ways of calling (and a fourth number,
# *sync*: the host's clock around one call followed by a synchronize), each from its own set of
# calls; the shape suite of section 4 runs the same table for its record and measures the first two
# for `gl.sgemm` and cuBLAS on every shape.

# %% [markdown]
# **Predict.** Five ways to call a product of two 256 x 256 matrices: `gl.sgemm(A, B, C)`;
# `gl.sgemm(A, B)`, which also allocates C; the ladder's rung (its argument checks, then numba's
# launch); its kernel launched by hand, `kernel[grid, block](...)`; and cuBLAS through the wrapper
# of nvmath-python (NVIDIA's Python bindings to its math libraries, cuBLAS among them). Which costs the host least, and by how much? On a GPU the next cell measures all five now
# at four sizes (`shapes.measure_overhead`, what the shape suite runs; the progress bar shows how
# long it takes).

# %%
costs = call_overhead.call_costs()
call_overhead.call_costs_figure(costs, size=256);

# %%
costs

# %%
Markdown(call_overhead_sentences.call_costs_notes(costs, rec))

# %% [markdown]
# Each number is a median of one run's samples, and runs differ. The ladder's rung and
# `kernel[grid, block]` do the same host work at every size (the same checks and one launch of the
# same kernel; only the grid's numbers change), so their issue times should not depend on the size.
# How far they moved over the four sizes (the first line above) is this lesson's yardstick for how
# much a median moves between measurements; take the larger of the two, since one slow size is
# enough to show that a median can move that far. A difference between two callers smaller than
# that ranks nothing, in this run or in the record. The count table above counts every size where
# `gl.sgemm(A, B, C)` came out lower, however small the difference, and in brackets those where it
# came out lower by more than the yardstick: only those rank. A sync or event time below the issue time should not happen, since both bracket the
# host's work for a call; where the lines above list one, this lesson does not explain it. Where the
# two runs name different callers as the cheapest at 256^2 (the line above says whether they do),
# the answer to the prediction depends on the run.
# The record's numbers, from the shape suite:

# %%
Markdown(call_overhead_sentences.overhead_sentence(rec))

# %% [markdown]
# **What the library skips.** `gemm_lessons.library.launch.Launcher` compiles a kernel once for explicit
# argument types and keeps what every later call would otherwise rebuild: the compiled function's
# handle, the stream, and a buffer for the kernel's parameters with the list of their addresses
# that the driver's launch call (`cuLaunchKernel`) takes. An array is flattened the way numba does
# it (pointer, shape, strides) into its slots of that buffer, and only when it is not the array the
# Launcher was given last time (the same for a scalar); then the driver is called. The plan for a
# shape (which kernel, which grid) is worked out on the first call at that shape and remembered.
# `gl.sgemm(A, B, C)` checks its
# arrays, looks up its plan and launches one kernel (two with split-K, four with the padded plan),
# where `kernel[grid, block]` launches the last rung's one kernel through numba. The table above
# counts the sizes at which `gl.sgemm(A, B, C)` still cost the host less, in this run and in the
# record, and at how many of them by more than the yardstick. Where it did by that much, the
# Launcher, which replaces numba's launch in `gl.sgemm`, is the likely reason; this lesson did not
# measure `gl.sgemm` with it turned off (`GEMM_LESSONS_PLAIN_LAUNCH=1` does that).
# It relies on numba-cuda internals; where they differ, or on the simulator, a Launcher launches the
# ordinary way (numba's `kernel[grid, block]`) and says so: "fast" below means its own path,
# "plain" the ordinary way:

# %%
print(library.launcher_for(dispatch.Plan("wide", "128x128")))
print("in the recorded run:", "; ".join(sorted({str(v).strip("<>") for v in rec.launch.values()}))
      if rec.launch else "not recorded")

# %% [markdown]
# Where the rest of a call goes was measured separately, each part alone:

# %%
Markdown(call_overhead_sentences.launch_probe_sentence(rec=rec))

# %% [markdown]
# Where a single call's event time is near its issue time (the event / issue line above gives the
# ratios), the host's part is most of the call and the event time says little about the kernel;
# the kernels' own times are the back-to-back timings of the shape suite (section 4). Two things
# follow for a library: pass C when you have one (`gl.sgemm(A, B)`, which allocates C, has more to
# do, and the table above says at how many sizes it cost the host more, and by how much), and, for many small products,
# batch them into one launch or capture them in a CUDA graph (a sequence of launches recorded once and
# replayed by the driver with one call; the CUTLASS profiler's option for when
# launch time is the bottleneck, [REFERENCES.md](REFERENCES.md#lesson-11)); neither is in `gl.sgemm`
# yet.
#
# ## 3 · Split-K: when C is too small to fill the GPU
#
# **The idea.** A block computes one BM x BN tile of C over all of K. At 64 x 8192 x 8192 with
# 128 x 128 tiles, C is one row of 8192 / 128 = 64 tiles, each only half used (M = 64 is less than
# BM = 128): 64 blocks. The last rung's register cap lets two such blocks share an SM (lesson 08), so
# one [wave](GLOSSARY.md#wave) of blocks on an H100 would need a few hundred (the figure below counts
# the **slots**, a slot being room for one resident block on an SM); with 64, most of the GPU idles while each block walks through all 8192 values of k (a
# [tail effect](GLOSSARY.md#tail-effect) with no wave before it). Smaller tiles give more blocks,
# but each block then reuses less of what it loads (lesson 02's formula).
# [Split-K](GLOSSARY.md#split-k) cuts K instead: with s parts there are s times as many blocks, each
# summing 1/s of the k-loop into its own partial tile of a [workspace](GLOSSARY.md#workspace); a
# second kernel adds the parts and applies alpha and beta. The price: the parts' writes to the
# workspace, the reduction's traffic, (s + 1) x M x N floats (reading the s parts, writing C;
# M x N more when beta makes it read C), and one more launch.

# %%
split_k_plans.split_k_diagram(splits=4);

# %%
model = suite_record.recorded_model(rec)
P = {str(p): p for p in dispatch.PLANS}
split_k_plans.waves_figure(SKINNY_SHAPE, [P["wide 128x128"], P["wide 64x128"], P["wide 64x128 split 4"],
                                          P["wide 64x128 split 6"]], model);

# %% [markdown]
# (Blocks per SM and the SM count are the recorded model's, measured on its GPU; the figure hands
# blocks out one per SM first, an assumption: the hardware's order is not documented.)

# %%
Markdown(split_k_sentences.split_occupancy_sentence(model))

# %% [markdown]
#
# **The kernels.** The first half is the any-shape kernel above, launched with s layers of blocks
# along z: layer z sums its own contiguous chunk of k, `k_chunk` values long (`k_begin`, `k_end` in
# its code), and writes its partial tile into the z-th M rows of a workspace of s x M rows (`out0`).
# The library works `k_chunk` out on the host (`Plan.k_chunk`): K / s rounded up to a multiple of BK,
# so that every part but the last is made of whole slices and only the last may have a ragged
# end (the cell below prints the chunk length for K = 600 in 4 parts). The library splits the wide
# kernel the same way where the wide kernel may run: with `TileConfig(split_k=True)`, block z of
# the kernel of lessons 07 and 08 (lesson 07 lists its code) works out the same chunk from the
# number of layers (`cuda.gridDim.z`) and writes rows z x M onwards of the workspace (the lines
# under `if static(SPLIT_K)`). The second half adds the parts, in a fixed order, and applies alpha and
# beta once:

# %%
# source: gemm_lessons/kernels/library/splitk_reduce.py  (the package runs this same code; a test keeps the two identical)
@cuda.jit
def sgemm_splitk_reduce(W, C, alpha, beta):
    M, N = C.shape
    splits = W.shape[0] // M
    col = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if col >= N:
        return
    for row in range(cuda.blockIdx.y, M, cuda.gridDim.y):
        total = W[row, col]
        for s in range(1, splits):
            total += W[s * M + row, col]
        if beta == 0:  # C is not read (it may hold anything, NaN included)
            C[row, col] = alpha * total
        else:
            C[row, col] = alpha * total + beta * C[row, col]

# %% [markdown]
# Why a workspace and a second kernel rather than each block adding its part into C with an atomic
# add: the result is the same, bit for bit, on every call (floating-point addition is not
# associative, and atomics add in whatever order the blocks finish); and C needs no pass that scales
# it by beta first.
#
# **Check** split-K built from this lesson's two cells (the any-shape kernel with four parts along z,
# then the reduction) on a small C with a long K, against float64:

# %%
# NBVAL_CHECK_OUTPUT
from gemm_lessons.kernels.library import splitk_reduce
plan = dispatch.Plan("any_shape", "64x64", 4)  # what the library calls this plan
M_s, N_s, K_s = 8, 12, 600
chunk = plan.k_chunk(K_s)
print(f"{plan}: grid {plan.grid(M_s, N_s)}, k_chunk {chunk} (a multiple of BK = {cfg64.BK}), "
      f"workspace {plan.split * M_s} x {N_s}")


def split_k_run(A, B, C, alpha=1.0, beta=0.0):
    W = cuda.device_array((plan.split * M_s, N_s), np.float32)
    any_shape_64[plan.grid(M_s, N_s), cfg64.threads](A, B, W, np.float32(1.0), np.float32(0.0), np.int64(chunk))
    sgemm_splitk_reduce[splitk_reduce.grid(M_s, N_s), splitk_reduce.THREADS](W, C, np.float32(alpha), np.float32(beta))


print("right:", problems.check(split_k_run, M_s, N_s, K_s, 2.0, 0.5).passed)
print("the library's plan, right:", problems.check(
    lambda A, B, C, alpha=1.0, beta=0.0: library.run_plan(plan, A, B, C, alpha, beta), M_s, N_s, K_s, 2.0, 0.5).passed)

# %% [markdown]
# **Predict, then measure.** At 64 x 8192 x 8192, how many times as fast as the fastest plan
# without split-K do you expect the fastest split-K plan to be? (The waves figure above is a
# guide; the reduction and the second launch are not in it.) On a GPU the next cell times every
# candidate plan now, back to back, and names the two plans it compares (the progress bar shows how
# long it takes); on the simulator it shows the recorded times.

# %%
my_split_gain = None  # your prediction: times as fast (for example 2)

# %%
skinny = shape_suite.measure_shapes([SKINNY_SHAPE], all_plans=True)
skinny

# %%
exercises.compare_prediction(my_split_gain, skinny.split_k_gain(SKINNY_SHAPE),
                             "fastest split-K plan vs fastest plan without it at 64x8192x8192 (times as fast)",
                             skinny.source)

# %%
Markdown(dispatch_model.plans_markdown(rec, SKINNY_SHAPE, model, top=10))

# %%
Markdown(split_k_sentences.split_k_sentence(rec))

# %% [markdown]
# **Sixteen bytes at a time.** The reduction above moves one float per thread, which any C
# allows. Profiled next to cuBLAS at 1000^3 and 1024^3 (the table in section 4), it took about a
# quarter of gl.sgemm's time on the GPU. Where the wide kernel ran, C is C-contiguous, 16-byte
# aligned and N a multiple of 4, so the library adds those plans' parts with
# `gemm_lessons/kernels/library/splitk_reduce_wide.py`: the same loop, each thread four neighbouring
# columns with lesson 05's 16-byte `load4` and `store4`. It gives the same bits as the one-float
# kernel when beta is 0; with beta they differ by at most one rounding (`tests/library/test_device_arrays.py`
# checks both), likely because the compiler fuses the multiply-adds of the two kernels differently
# (their SASS was not compared). Timed
# side by side, with what the bytes alone would take:

# %%
Markdown(split_k_sentences.reduce_wide_sentence())

# %% [markdown]
# Why the one-float kernel needs so much more time than its bytes was not profiled further.

# %% [markdown]
# **One launch instead of two?** The second kernel costs a launch and a pass over the
# workspace. CUTLASS has a way without the second kernel, which it calls *serial* split-K (the
# `SplitKSerial` option of its
# [`device::Gemm`](https://github.com/NVIDIA/cutlass/blob/main/include/cutlass/gemm/device/gemm.h);
# the code is in [`kernel/gemm.h`](https://github.com/NVIDIA/cutlass/blob/main/include/cutlass/gemm/kernel/gemm.h)):
# the blocks of one tile of C take turns, in k order, guarded by a semaphore (a counter in global
# memory). Block z waits until the counter reads z, adds its partial sums to what the blocks
# before it left in the output (block 0 starts from C), and sets the counter to z + 1; the last
# block resets it to 0 for the next call. There is no workspace of partial sums and no second
# launch; the price is that the blocks of a tile finish one after another. We built a different
# one-launch design into the wide kernel: every block still writes its part to the workspace, then,
# after a memory fence (so that its writes are visible to the other blocks first), adds one to a
# counter that belongs to its tile of C (an atomic add: no two blocks get the same count); the block
# that finds itself last adds the parts, in order (the same bits as the two-kernel sum), writes C,
# and resets the counter to 0 (commit 1fc2bd8, `TileConfig.serial`;
# a first form, commit c8d6942, which added all the parts of one group of four elements before
# loading the next group's, so that its loads did not overlap, is recorded as
# `experiments/splitk/splitk-probe-run1-*.json`). We timed it against the two launches, on the
# same plans and shapes (listed in the record), in one process:

# %%
Markdown(split_k_sentences.splitk_probe_sentence())

# %% [markdown]
# So the library kept two launches, and the kernel of lessons 07 and 08 lost `serial` again (the
# probe, `tools/splitk_probe.py`, ran at commit 1fc2bd8; `experiments/splitk/` keeps its records). The host-time difference is within
# how far such medians move between runs (section 2), so it is not shown to be a saving. Where
# the GPU time goes was not profiled. Two differences are visible without a profiler: in one
# launch, the last block of each tile adds all the parts alone, after the other blocks of its tile
# are done, while the reduction kernel spreads that work over every SM; and the kernel with the
# extra code needs more registers (the compiler's counts at the end of the measurement above,
# compiled offline for sm_90, both forms split). For 128x128 that means spills and for 64x128
# fewer blocks per SM; for 128x64 it changes neither, and one launch was slower there too, so the
# registers do not explain all of it (the probe did not time 64x64).

# %% [markdown]
# ## 4 · Dispatch: a plan per shape
#
# **The idea.** The library has a handful of kernels and needs a rule that picks one per shape.
# `gemm_lessons.library.dispatch` lists its **plans** (`dispatch.PLANS`: the wide kernel and the any-shape
# kernel, each with four tile sizes (`dispatch.TILES`: 128 x 128, 64 x 128, its mirror 128 x 64 for
# a narrow C, and 64 x 64) and K split 1, 2, 3, 4, 6, 8, 12 or 16 ways, and the padded plan of
# section 1 with the same four tile sizes) and picks the plan with the smallest estimate
# of a small cost model, `dispatch.Model`:
#
# $$t = \sum_{\text{waves}} \text{blocks on the busiest SM} \times \frac{\text{FLOP of one block}}{\text{that SM's rate}}
#   \;+\; \text{for split-K: } \frac{\text{the reduction's bytes}}{\text{bandwidth}} + \text{one launch}
#   \;+\; \text{for padded: } \frac{\text{the copies' bytes}}{\text{bandwidth}} + \text{three launches}$$
#
# where a full wave puts blocks-per-SM blocks on every SM and a full SM's rate is the kernel's
# whole-GPU rate on a large square divided by the SMs. What rate an SM left with fewer blocks in a
# partly filled last wave gets depends on what the calibration measured. Without a rate for one
# block alone on an SM, each block gets 1/blocks-per-SM of a full SM's rate, as in a full wave: a
# partly filled wave costs as much as a full one. With it, an SM holding b blocks gets a rate on a
# straight line in b, from the one-block rate at b = 1 to a full SM's at b = blocks per SM (an
# assumption). Summing waves as if each ended before the next began is another: on the GPU a block
# starts whenever another finishes. The line under the calibration table below says which of the two
# the record has; every estimate and choice in this section comes from the record's model.
# For split-K, "the reduction's bytes" are (s + 2) x M x N floats of 4 bytes: section 3's
# reduction traffic with C read as well (the model charges it whatever beta is); the parts' own
# writes to the workspace, s x M x N more, are not charged. "One launch" is the reduction
# kernel's own start on the GPU (the gap between two kernels on the GPU, not the host's issue time
# of section 2), a fixed 5 µs (`Model.launch_us`: an assumed value, not measured;
# split-K runs two kernels, the product and the sum). For the padded plan, the first term is the
# wide kernel's at the padded sides (M x N4 x K4), "the copies' bytes" are section 1's
# (`dispatch.padded_copy_floats`, 4 bytes each) and the three launches are the two copies in and the
# one out. The formula captures the tail effect of section 3 and the copies' and the reduction's
# traffic, and nothing else: not L2 reuse, not the clock, not Python.
# Its rates are measured by the shape suite's calibration:

# %%
Markdown(dispatch_sentences.calibration_markdown(rec))

# %% [markdown]
# **Candidates.** Not every plan may run every shape. Where K and N are multiples of 4 and the
# arrays aligned, `dispatch.candidates` keeps the wide kernel's plans only (the any-shape kernel
# would do the same with more load instructions, and padding would copy for nothing); elsewhere it
# keeps the any-shape kernel's plans and the padded ones. It keeps split-K into s parts
# only where K is at least s x `Model.min_k_per_split` (a chosen value, not a measured one; the cell
# prints it), so that each part gets about that many values of k or more (after the rounding of
# section 3 the last part may get fewer), and the last part is not empty. The model then picks the
# candidate with the smallest estimate:

# %%
# NBVAL_CHECK_OUTPUT
print(f"{len(dispatch.PLANS)} plans; split-K needs at least {model.min_k_per_split} values of k per part")
print("per shape of the suite: how many plans are candidates, and the recorded model's choice among them:")
for r in rec.rows:
    M, N, K = r.shape
    wide = suite_record.is_wide(r.shape)
    n = len(dispatch.candidates(M, N, K, wide, model))
    print(f"  {suite_record.shape_name(r.shape):>18}: {n:2d} candidates -> {dispatch.choose(M, N, K, wide, model)}")

# %% [markdown]
# **The measurement: % of cuBLAS per shape.** Every shape, single calls and back to back, cuBLAS in
# the same run. Hatched bars are host-bound: the host's time to issue one call (from the record's
# per-call costs, of which section 2 shows one size; here at the nearest square size) is at least 80% of the time per call back to back, so the bar compares
# Python wrappers rather than kernels; the line under the table gives the two numbers behind each
# flag. In the table, the group is the suite's own: squares, shapes whose sides are not powers of 2,
# and skinny shapes; the next column says whether K and N are multiples of 4, which the wide kernel
# needs.

# %%
shape_suite.pct_figure(rec);

# %%
Markdown(shape_suite_sentences.suite_markdown(rec))

# %%
Markdown(shape_suite_sentences.single_call_sentence(rec))

# %%
Markdown(dispatch_sentences.dispatch_sentence(rec))

# %% [markdown]
# **Where the rule was wrong.** The suite timed every candidate plan on the shapes up to
# 2 x 4096^3 FLOP. Each point below is one plan at one shape: the model's estimate against the
# measured time. Points on the diagonal are plans whose time the model estimated exactly; what
# matters for choosing is the order, which the model can get right with every point off the
# diagonal, as long as faster plans get lower estimates. The ringed
# point of each colour is the plan chosen, the starred one the fastest.

# %%
dispatch_model.model_figure(rec, model);

# %%
Markdown(dispatch_sentences.model_outliers_sentence(rec, model))

# %%
WORST = shape_suite.costliest_disagreement(rec)  # the shape where the choice lost the most time
Markdown(dispatch_model.plans_markdown(rec, WORST, model, top=6) if WORST else "The plan chosen was the fastest "
         "timed on every shape.")

# %%
Markdown(dispatch_sentences.estimate_sentence(rec, WORST, model) if WORST else "")

# %% [markdown]
# The table shows the model wrong in both directions at the same shape: some plans estimated
# below their measured time, others above, and the order of close plans changed. The model
# charges a block for its share of the k-loop and nothing else: not its prologue (the first slice
# loaded before any arithmetic), not the writing of its tile of C, not the time a launch takes to
# fill the GPU; and for a partly filled last wave it draws a straight line between two measured
# rates. Which of these simplifications caused which error was not measured. How the record's
# model charges a partly filled wave, for one plan at 1024^3 (a **slot** is room for one resident
# block on an SM):

# %%
Markdown(dispatch_sentences.last_wave_sentence((1024, 1024, 1024), P["wide 64x128"], model))

# %% [markdown]
# Where a rule and a measurement disagree, another way is to time the few best candidates once per
# shape, as cuBLASLt (cuBLAS's interface for matrix products that exposes its choice of algorithm,
# section 5) lets a caller do.
#
# **Honest about the shapes below 90%.** The list reads the suite's record; a shape measured live
# earlier in this notebook (sections 1 and 3) may land on the other side of 90% in this run: the
# cell after the list compares them.

# %%
Markdown(shape_suite_sentences.below_markdown(rec))

# %%
Markdown(shape_suite_sentences.live_versus_record([edges, skinny], rec))

# %% [markdown]
# Each line gives, where they apply: whether a caller was [host-bound](GLOSSARY.md#host-bound) back
# to back (then the ratio compares Python wrappers as much as kernels), whether the rule missed a
# faster plan, and the same shape with M and N swapped where the suite has it and it ran above 90%.
#
# Why a chosen plan runs at the speed it does is a question for a profile of its kernels next to
# cuBLAS's. `experiments/ncu_vs_cublas/ncu_vs_cublas.py` profiles gl.sgemm, the wide kernel without a split, and cuBLAS
# at 1024^3 and 1000^3, the two shapes furthest behind cuBLAS back to back in the suite's previous
# record (run before section 3's 16-byte reduction; it is in the repository's history:
# `git show 83c001f:results/shapes-nvidia-h100-80gb-hbm3.json`), and at 16384^3, the lowest large
# square. The profiler runs each kernel alone with its caches emptied first, so its times are not
# the suite's; the columns and stall reasons are explained under the table:

# %%
Markdown(profile_comparison_sentences.ncu_versus_cublas_markdown())

# %% [markdown]
# Reading the table: at 1000^3 and 1024^3 cuBLAS runs one kernel, no split, with fewer blocks
# than the H100 has SMs and many more registers per thread; gl.sgemm's split plan runs more
# blocks and then the reduction, whose row is the one section 3's 16-byte reduction shortened
# (the table was taken before that change). Without a split, the wide kernel has the fewest
# blocks and is the slowest of the three. At 16384^3 both libraries run one kernel; cuBLAS's block
# tile is twice as large, its FMA pipe busier and its issue slots fuller; both kernels' first stall
# reason is *not selected* (a warp ready, another one issued), and gl.sgemm's second, the barrier,
# is not among cuBLAS's first two. The profile is of kernels run one at a time: it says nothing
# about a single call's time on the host. Added up at 1024^3:

# %%
Markdown(profile_comparison_sentences.split_versus_one_kernel_sentence("1024x1024x1024"))

# %% [markdown]
#
# **A larger block tile, tried.** The name of cuBLAS's kernel at 16384^3, from the profile's record
# (`experiments/ncu_vs_cublas/ncu_vs_cublas.py`, the table above):

# %%
print(profile_comparison.cublas_kernel_name("16384x16384x16384"))

# %% [markdown]
# CUTLASS builds its kernels' names from their parameters ("the full procedural name indicates
# architecture, extended name, tile size, and layout": `configuration_name` and `procedural_name`
# in [`gemm_operation.py`](https://github.com/NVIDIA/cutlass/blob/main/python/cutlass_library/gemm_operation.py)).
# Read that way: `simt`, the ordinary FP32 units, not the tensor cores (the units for small matrix
# products in lower precision, primer); `256x128_8x4`, a 256x128 block tile, 8-deep k slices and 4
# stages (shared buffers of k slices); `nn`, both operands column-major (CUTLASS's `n`), which is
# how cuBLAS sees our row-major product (C^T = B^T A^T); `align1`, operands assumed aligned to 1
# element only. The `80` is not in CUTLASS's template for kernels before Hopper: cuBLAS's own
# addition, most likely the architecture (compute capability 8.0). If `align1` means 4-byte global
# loads (the name says so much; its SASS was not inspected here), then cuBLAS's kernel is faster
# with narrower loads than the last rung's 16-byte ones, and wide loads are not what the last rung
# lacks.
#
# Lesson 08's `TileConfig` can describe a 256x128 tile too. Its labels below read: block tile x k
# depth, `warp` tile, `thread` tile, `stages` (shared buffers), `pad` (extra floats per row of the A
# tile), `regs` (the register cap; None: no cap). `experiments/bigtile/bigtile_probe.py`
# (`experiments/bigtile/bigtile-probe-*.json`) timed three such tiles in the last rung next to its
# 128x128 and cuBLAS, at four sizes:

# %%
Markdown(probe_sentences.bigtile_probe_markdown())

# %% [markdown]
# Larger tiles need more registers per thread or more threads per block, and either way an SM
# holds one block of them, not two (the table's blocks per SM). cuBLAS's kernel also runs one block
# of 8 warps per SM (12.5% achieved occupancy in the profile above), so fewer resident warps alone
# do not explain the gap. The last row also differs in more
# than its tile: 16-deep k slices and one shared buffer (two barriers per slice), so its place in
# the table is not the tile's alone. The last rung stages the next k slice in registers and has two
# shared buffers; cuBLAS's kernel, by its name, four stages. To keep more k slices in flight without holding
# them in registers, a kernel copies global memory to shared memory directly, with the
# [asynchronous copies](https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#asynchronous-data-copies)
# of compute capability 8.0 and later (`cp.async`); numba-cuda 0.30.4 has no intrinsic for them
# (its source has no `cp.async`). A few lines of CUDA C can issue them, and `cuda.declare_device`
# links such C functions into a numba kernel: `experiments/cp_async/cp_async.cu` wraps the PTX, and
# `experiments/cp_async/cp_async_probe.py` checked that 4- and 16-byte copies land exactly and become
# [`LDGSTS`](GLOSSARY.md#cp-async) instructions in the SASS (its record is printed below).
# Whether cuBLAS's kernel uses them was not checked (its SASS was not inspected); its name only
# says 4 stages. `experiments/multistage/multistage_probe.py` then wrote the last rung's 128x128 tile (not cuBLAS's
# 256x128) with 3 and 4 stages filled that way: A's tile is stored transposed, so its floats land
# one by one (4-byte copies); B's rows land whole (16-byte copies). The second form, timed here,
# handles S slices per trip of its loop, so that each stage's place in shared memory is a constant;
# the first form computed it at run time and was also slower than 128x128 (its record is in the
# repository's history, commit 0e4fc11); the profile below is of that first form. The 128x128
# kernel is the same code in every record of this section (`git log gemm_lessons/kernels/sgemm/warptile.py`):

# %%
Markdown(probe_sentences.cp_async_probe_line() + "\n\n" + probe_sentences.multistage_probe_sentence() + "\n\n"
         + profile_comparison_sentences.multistage_profile_sentence())

# %% [markdown]
# So this first try at a design like the one cuBLAS's kernel name describes was slower than the last
# rung, not faster. In the profile, the first form's warps waited more on shared memory (*short
# scoreboard*) and issued less often; why, and whether another
# arrangement of the copies and k-steps would change it, was not worked out here: the profile
# says where the time went, not how to get it back.
#
# **What this lesson does not explain.** Results of the suite that no measurement here accounts for:

# %%
Markdown(shape_suite_sentences.unexplained_markdown(rec))

# %% [markdown]
# The suite's single call at 1024^3 is far from the same call's time per call in section 2's
# table. A probe run minutes after the suite, on the same machine, timed each of ten calls
# (gl.sgemm, its kernels with either reduction, the product kernel alone and cuBLAS, at 1000^3 and
# 1024^3) one at a time and back to back, each in two passes a few seconds apart; where the two
# passes of a call differ by 1.5 times or more:

# %%
Markdown(shape_suite_sentences.probe_outliers_sentence(rec=rec))

# %% [markdown]
# The dispatch rule was made from measurements and then checked against more measurements; the
# checking found where it was wrong (the costliest disagreement, rendered after the figure) and says what it cannot
# explain. That is the method of the whole course, applied to a library.
#
# ## 5 · Why cuBLAS is many kernels plus heuristics
#
# Everything above happens inside cuBLAS too, at a much larger scale. From NVIDIA's documentation
# ([REFERENCES.md](REFERENCES.md#lesson-11)):
#
# * **A heuristic picks a kernel per problem.** cuBLASLt "uses heuristics to pick the most suitable
#   matmul kernel" from the problem sizes, the GPU and other parameters; working that out costs host
#   time, so the documentation recommends asking once and reusing the answer, and cuBLASLt keeps a
#   cache of the kernels chosen per problem. `gl.sgemm` remembers its plan per shape and layout for
#   the same reason (`dispatch.plan_for`).
# * **It ranks candidates, and lets you time them.** `cublasLtMatmulAlgoGetHeuristic` returns
#   candidate algorithms in order of increasing *estimated* time; a caller may time several and keep
#   the fastest, which is what the shape suite did with every plan, and what section 4 shows an
#   estimate alone can miss.
# * **The knobs are this lesson's.** An algorithm's configuration names its tile, its split-K count
#   and reduction scheme, its number of pipeline stages (double buffering is two) and the order in
#   which blocks walk C ("CTA swizzling", CTA being NVIDIA's name for a thread block: lesson
#   08's [block order](GLOSSARY.md#block-order)). A
#   request states the alignment of each matrix in bytes and the workspace it may use: section 1's
#   and section 3's constraints.
# * **CUTLASS**, NVIDIA's open-source templates for the same kernels, instantiates a kernel per tile
#   shape, alignment and more: its kernel names carry their alignment, its "parallel reduction
#   split-K" is a partitioned GEMM plus a batched reduction into a workspace the user provides (this
#   lesson's two kernels), and its profiler builds one tile size per configuration by default
#   because building them all for Hopper would be, in its documentation's words, "in the order of
#   millions of kernels".
#
# One kernel cannot be best at every shape: the tile that fills the GPU at 4096^3 leaves most of it
# idle at 64 x 8192 x 8192, and the fastest loads need alignment the caller may not have.
# A library is many kernels, each good somewhere, and a rule (measured, cached, and checked against
# measurements) that picks one.
#
# **The same for the transpose.** `gemm_lessons.library.transpose(X)` is lesson 09's answer for every
# shape. Where every row of both arrays starts on a 16-byte boundary (both sides multiples of 4),
# it runs the wide kernel (16-byte loads and stores). Where a side is not a multiple of 4, rows
# start inside a float4, but the arrays themselves still start on a boundary (a fresh allocation
# does), so `transpose/aligned_stores.py` looks at each array as one flat run of floats:
#
# * **loads**: the 64 floats a tile needs from a src row lie inside 17 aligned float4s of the flat
#   run; the block loads those whole into a shared staging row and remembers the shift (the row's
#   first float's place in its float4);
# * **stores**: dst row `c` starts at flat index `c * rows`, `d = (c * rows) % 4` floats past a
#   boundary. The blocks cut each dst row at boundaries: a block owns the floats `r0 - d` to
#   `r0 + 63 - d` of it (`r0`: its tile's first src row), 16 whole float4s, which is why it stages
#   3 src rows above its tile too. Only the first and the last block along a dst row have floats
#   at an end of the row (up to 3) to write one at a time.
#
# `transpose/any_wide.py`, an earlier try, cut dst the way the tiles cut src: where a block's part
# of a dst row starts off a boundary (d not 0), both its ends share a float4 with a neighbour and
# are written one float at a time, in a branch that only the lanes at those ends take. That is the
# difference between the two kernels' code; how much of the time it costs was not profiled. Where an array starts inside a float4 (a
# view), the library falls back to the padded 32 x 8 kernel with 4-byte accesses. A check on shapes
# with and without a side that is a multiple of 4:

# %%
# NBVAL_CHECK_OUTPUT
for rows_, cols_ in [(12, 8), (7, 12), (13, 5)]:
    x = rng.uniform(-1, 1, (rows_, cols_)).astype(np.float32)
    t = library.transpose(cuda.to_device(x)).copy_to_host()
    print(f"{rows_}x{cols_}: right: {np.array_equal(t, x.T)}")

# %% [markdown]
# How the three kernels for such shapes compare, from the transpose suite's record (lesson 09):

# %%
suite = results.transpose_suite()
Markdown(leaderboard.odd_side_transpose_sentence(suite) if suite else "No transpose suite is recorded for this GPU.")

# %% [markdown]
# ## Exercise 11-split-k: write split-K
#
# Write both halves of split-K, on lesson 01's one-thread-per-element kernel so that the split is all
# there is to write (the library does the same with lesson 08's kernel). Here the workspace is a 3-D
# array, `W[part, row, col]`, of splits x M x N floats (the library stacks its parts in a 2-D one).
#
# 1. `sgemm_partial(A, B, W)` is launched with one layer of blocks per part along z
#    (`cuda.gridDim.z` parts); the blocks with `cuda.blockIdx.z == z` compute part z, each thread
#    its sum into `W[z, row, col]`. Unlike the library's kernel, it gets no `k_chunk` argument:
#    work the chunk out in the kernel, from K and the number of parts. The rule: part z takes the
#    z-th of consecutive chunks of one length, cut off at K, and the parts together cover every k
#    exactly once; the length is the shortest for which the parts reach K (so the last part may
#    come out shorter). There are no slices here, so do not round the length to a multiple of BK
#    as the library does. Before you write it: which k does each part sum for K = 50 in 3 parts
#    (the check's first shape)? And which would each of 3 parts sum with the library's rounding,
#    BK = 8? (`dispatch.Plan("any_shape", "64x64", 3).k_chunk(50)` tells you the library's chunk,
#    once you have worked it out.)
# 2. `splitk_reduce(W, C, alpha, beta)`: one thread per element of C, on the same grid as the
#    first kernel without its z (the cell gives each thread its row and col);
#    C = alpha x (W[0] + W[1] + ...) + beta x C, reading C only when beta != 0 (C may then hold
#    anything, NaN included). The library's reduction above walks a 2-D workspace with a loop over
#    rows; here the workspace is 3-D and each thread has one element of C.
#
# The check launches both with 16 x 16 threads per block on two shapes that are not multiples of
# the block (19x37x50 in 3 parts, 9x20x64 in 4) and compares C with float64. Then it checks the technique: each part of W
# must hold the sum over its own chunk of k, so a version where part 0 sums all of K and the others
# write zeros (the right C, no split) fails. On the simulator the access log also checks that each
# part reads only its own chunk of A and B, and that the reduction reads each partial sum once,
# leaves C unread when beta == 0 and makes coalesced warp-wide accesses: the traffic section 3
# counts for the reduction.

# %%
import numpy as np
from numba import cuda, float32
from gemm_lessons.teaching import exercises


@cuda.jit
def sgemm_partial(A, B, W):
    """Part z = cuda.blockIdx.z of A @ B: this thread's sum over the part's chunk of k, into W[z, row, col]."""
    M, K = A.shape
    N = B.shape[1]
    col = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x  # lesson 01: threadIdx.x along a row of C
    row = cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y
    if row < M and col < N:
        z = cuda.blockIdx.z
        ### BEGIN SOLUTION: k_begin, k_end = 0, K
        k_chunk = (K + cuda.gridDim.z - 1) // cuda.gridDim.z
        k_begin = z * k_chunk
        k_end = min(K, k_begin + k_chunk)
        ### END SOLUTION
        acc = float32(0.0)
        for k in range(k_begin, k_end):
            acc += A[row, k] * B[k, col]
        W[z, row, col] = acc


@cuda.jit
def splitk_reduce(W, C, alpha, beta):
    """C = alpha * (W[0] + W[1] + ...) + beta * C, one thread per element of C."""
    M, N = C.shape
    col = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    row = cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y
    ### BEGIN SOLUTION
    if row < M and col < N:
        total = W[0, row, col]
        for s in range(1, W.shape[0]):
            total += W[s, row, col]
        if beta == 0:  # C is not read (it may hold anything, NaN included)
            C[row, col] = alpha * total
        else:
            C[row, col] = alpha * total + beta * C[row, col]
    ### END SOLUTION


split_k = (sgemm_partial, splitk_reduce)
exercises.check("11-split-k", split_k)

# %% [markdown]
# ## Takeaway
#
# * **Edges cost.** 16-byte loads need K and N multiples of 4 and aligned arrays; scalar,
#   predicated loads take every shape at a measured price, and a large product can instead pay for
#   aligned, zero-padded copies and keep the fast kernel (section 1).
# * **A call is not free.** In Python, what happens before the GPU starts can take longer than a
#   small kernel; measure it three ways (single call, back to back, issue time), and skip what can
#   be done once (`Launcher`, the remembered plan).
# * **Fill the GPU.** When C has fewer tiles than the GPU has block slots, split K: more blocks, a
#   workspace and a reduction; on the skinny shape measured here, by the factor section 3 shows.
# * **Choose per shape, then check the choice.** A model of waves and rates chose the fastest timed
#   plan on most shapes and a slower one on the rest (section 4 counts them and names each); timing
#   the candidates found that out. cuBLAS is the same idea with far more kernels: a heuristic over many specialised
#   kernels, cached per problem.

# %% [markdown]
# ## Sources and further reading
#
# * No source article of the course covers this lesson ([REFERENCES.md](REFERENCES.md#source-articles));
#   it rests on the shape suite's record and on NVIDIA's documentation.
# * What to read next: [REFERENCES.md, lesson 11](REFERENCES.md#lesson-11): cuBLASLt's heuristics and
#   algorithm configuration, CUTLASS's split-K and profiler.
# * Terms: the [glossary](GLOSSARY.md); the execution model and the compiler-facts table are
#   introduced in the [primer](00a_primer.ipynb).
