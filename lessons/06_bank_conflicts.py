# %% [markdown]
# # 06 · Bank conflicts, padding and warp shapes
#
# **Where we are.** Lesson 05's kernel reads shared memory 16 bytes at a time. How long such a
# read takes depends on *which* addresses the 32 threads of a warp present together. This
# lesson makes that visible, on the lesson kernels themselves, and checks the picture against
# the GPU's own counters.

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
from gemm_lessons.instruments import bank_model, shared_tracer
measure_step.recorded(["vec", "cublas"])  # where we start; this lesson's rung is measured below

# %% [markdown]
# ## The model
#
# Shared memory is split into **32 banks**, each 4 bytes wide: the word at byte address `a`
# lives in bank `(a // 4) % 32`. Each bank delivers one word per cycle, so a warp-wide access is
# served in **wavefronts**:
#
# * 4-byte accesses (`LDS.32` in these labels; the SASS and the tables write it `LDS`): all 32 lanes
#   in one phase;
# * 8-byte accesses (`LDS.64`): two phases, lanes 0-15 then 16-31;
# * 16-byte accesses (`LDS.128`): four phases of 8 lanes;
# * lanes reading the *same* word share it (**broadcast**); a phase costs as many wavefronts as
#   the largest number of *distinct* words that fall into one bank (an **n-way conflict**).
#
# `bank_model.wavefronts(addresses, width)` implements exactly these rules. The examples below are
# the ones source article [[3]](REFERENCES.md#seed-002) draws in its section on banks, and each is also a unit test (`tests/instruments/test_shared_tracer.py`).

# %%
# NBVAL_CHECK_OUTPUT
lanes = range(32)
examples = {
    "LDS.32, lane l reads word l": ([4 * l for l in lanes], 4),
    "LDS.32, stride 2 words (addresses 0, 8, ..., 248)": ([8 * l for l in lanes], 4),
    "LDS.32, all lanes one word (broadcast)": ([0] * 32, 4),
    "LDS.32, a column of a 32x32 float tile": ([128 * l for l in lanes], 4),
    "LDS.32, a column of a 32x33 padded tile": ([132 * l for l in lanes], 4),
    "LDS.64, lane l reads words 2l, 2l+1": ([8 * l for l in lanes], 8),
    "LDS.128, lane l reads words 4l..4l+3": ([16 * l for l in lanes], 16),
}
for name, (addrs, width) in examples.items():
    a = bank_model.wavefronts(addrs, width)
    print(f"{name:<52} {a.wavefronts:>2} wavefronts (ideal {a.ideal}), {a.degree}-way")

# %% [markdown]
# **Predict** before you look at the maps: a column of a 32x33 tile (one extra float per row)
# shifts each row by one bank. Which banks do lanes 0 to 7 read, and how many wavefronts does the
# column cost? The second map answers; the first shows the unpadded column of the table above.

# %%
import matplotlib.pyplot as plt
fig, ax = plt.subplots(2, 1, figsize=(12, 7), dpi=60)  # dpi: a small picture in the saved notebook
figures.bank_map([128 * l for l in range(32)], 4, ax=ax[0], title="column of tile[32][32]", rows=8)
figures.bank_map([132 * l for l in range(32)], 4, ax=ax[1], title="column of tile[32][33]", rows=8)
plt.tight_layout()

# %% [markdown]
# ## Warp shapes in the outer-product kernels
#
# In lesson 05 each thread reads a row piece of the B tile (`sB[k, ...]`) with `LDS.128`.
# Which 8 threads share a phase depends on how lanes are laid out over the block's threads:
#
# * **2 x 16, lanes along columns** (lesson 05's `vec`): the 8 threads of a phase read 16 bytes
#   each, 32 bytes apart: 256 bytes over 32 banks, 2-way conflicts.
# * **4 x 8, lanes along rows** (the layout of the warp-tiled kernel in source article [[3]](REFERENCES.md#seed-002)): a phase
#   covers 2 columns x 4 rows; threads in the same column read the same address (broadcast), so
#   no conflict.
# * **8x8 split into four 4x4**: each thread owns columns `c..c+3` and `c+64..c+67`; the 8
#   threads of a phase now read 128 contiguous bytes: no conflict, same warp shape.

# %%
fig, ax = plt.subplots(3, 1, figsize=(12, 6), dpi=60)
for a, (label, kw) in zip(ax, [("2x16, lanes along columns", dict(shape=(2, 16))),
                              ("4x8, lanes along rows", dict(shape=(4, 8), lanes_along="rows")),
                              ("2x16, 8x8 split into 4x4", dict(shape=(2, 16), split=True))]):
    figures.bank_map(bank_model.warp_layout_addresses(**kw), 16, ax=a, title=label)
plt.tight_layout()

# %%
# NBVAL_CHECK_OUTPUT
for label, kw in [("2x16, lanes along columns", dict(shape=(2, 16))),
                  ("4x8, lanes along rows", dict(shape=(4, 8), lanes_along="rows")),
                  ("2x16, split into 4x4", dict(shape=(2, 16), split=True))]:
    print(f"{label:<28} {bank_model.wavefronts(bank_model.warp_layout_addresses(**kw), 16).wavefronts} wavefronts")
print(f"compute/memory ratio of a warp's x-by-y tile, 2/(1/x+1/y): 32x64 -> "
      f"{counting.compute_to_memory_ratio(32, 64):.2f}, 16x128 -> {counting.compute_to_memory_ratio(16, 128):.2f}")

# %% [markdown]
# The last line compares the two warp shapes with lesson 04's compute-to-memory ratio, applied to
# a whole warp: a warp's 32 threads with 8x8 results each cover 32 x 64 results with lanes 4 x 8,
# 16 x 128 with lanes 2 x 16. The squarer tile reads fewer distinct shared values per FMA (its
# ratio is higher). The split keeps 2 x 16 and removes the conflict; lesson 08 makes the warp's
# tile shape a parameter.
#
# Try it yourself: the explorer redraws the map for other warp shapes, widths and paddings.

# %%
figures.bank_explorer()

# %% [markdown]
# ## The tracer: bank conflicts of your own kernel
#
# `shared_tracer.trace(launch)` runs a launch on the CUDA simulator, records every shared-memory access
# of one block with its lane, groups them into warp-wide instructions (the k-th access a lane
# makes on a source line pairs with the k-th of its warp-mates) and prices each with the model.
# It needs no change to the kernel. Where the compiler merged four 4-byte accesses into one
# 16-byte instruction (the SASS says so: `LDS.128`), tell the tracer with `merge`.
#
# Here: lesson 05's `vec` against the split version, one 128x128 block, K = 16.

# %%
vec_trace = shared_tracer.trace_rung("vec", (128, 128, 16), merge=("ld",))
vec_trace

# %%
# NBVAL_CHECK_OUTPUT
split_trace = shared_tracer.trace_rung("vec_split", (128, 128, 16), merge=("ld",))
for name, t in [("vec", vec_trace), ("vec_split", split_trace)]:
    ld = t.totals("ld")
    print(f"{name:<10} loads: {ld['instructions']} instructions, {ld['wavefronts']} wavefronts, "
          f"{ld['conflicts']} from conflicts")

# %%
fig, ax = plt.subplots(figsize=(12, 3.5), dpi=60)
figures.bank_map(vec_trace.first("ld", array="sB").addresses, 16, ax=ax, title="vec: first read of sB, warp 0");

# %% [markdown]
# ## Ground truth: the GPU's counters
#
# On the GPU, Nsight Compute counts shared-memory instructions, wavefronts and "bank conflicts"
# (wavefronts beyond the ideal) per kernel. `tools/bank_truth.py` launches each lesson kernel
# once under `ncu --clock-control none` and compares with the tracer (one block traced on the
# simulator, multiplied by the number of blocks).

# %%
truth = results.load_banks()  # results/banks-<device>.json, written by tools/bank_truth.py
print(f"{truth.device}, {truth.date[:10]}: ncu / tracer (documented rules) / tracer (paired-load rule)")
print(f"{'case':<28}{'problem':>12}{'blocks':>7}{'ld instr':>16}{'ld wavefronts':>34}{'st wavefronts':>20}")
for r in truth.rows:
    n, t = r.ncu, r.tracer
    print(f"{r.case:<28}{'x'.join(map(str, r.problem)):>12}{r.blocks:>7}{n['ld_instructions']:>8}/{t['ld_instructions']:<8}"
          f"{n['ld_wavefronts']:>10}/{t['ld_wavefronts']:<9}/{t['ld_wavefronts_paired']:<10}"
          f"{n['st_wavefronts']:>10}/{t['st_wavefronts']:<9}")

# %% [markdown]
# **Reading the table.** Instruction counts agree everywhere: the tracer reconstructs the
# warp-wide instructions the compiler emitted. Wavefronts agree for the GEMMs' 4-byte accesses and
# for 16-byte accesses without repeated addresses. Two kinds of difference remain: the first has a
# measured rule, the second only a hypothesis. (The transpose rows are lesson 09's kernels, a matrix
# transpose through a shared tile, here because their column reads are the textbook bank
# conflict; lesson 09 builds them.)
#
# * **Paired 16-byte loads are cheaper than the documented rule says.** In `smem_tile` (every
#   lane reads the same `sA` float4) and in `vec` (lanes 0-15 share one `sAT` float4, 16-31
#   another), the GPU needed 2 wavefronts per `LDS.128`, not 4. Shared memory returns 128 bytes,
#   one register per lane, per wavefront; when lanes n and n^1 (or n^2) share an address the
#   return is packed two lanes per register (an answer in NVIDIA's developer forum states this rule
#   for compute capability 7.0-7.5, in the thread
#   ["Unexpected shared memory bank conflict"](https://forums.developer.nvidia.com/t/unexpected-shared-memory-bank-conflict/77228);
#   the H100 counts agree). With that rule added
#   (`paired_loads=True`), the tracer matches every 16-byte case exactly.
# * **A few extra wavefronts in the 32x32-thread transposes** (a few hundredths of a percent
#   unpadded, about 5% padded: the table; also 5 of 3,072 store wavefronts in `vec_split`), absent with 32x8 threads. The
#   addresses cannot produce them (the padded tile is conflict-free by construction), and they
#   are not a multiple of the number of blocks, as they would be if the addresses (the same in
#   every block) caused them. (Whether they change from run to run, the course has not
#   recorded.) ncu counts every extra wavefront as a
#   "conflict", whatever delayed it; that warps contend for the shared-memory pipeline (most
#   extras are in the 1024-thread blocks, but `vec_split`'s 256-thread blocks have a few too) is
#   our hypothesis, not something measured here.

# %% [markdown]
# ## Padding and the float4 GEMM
#
# Padding removes the conflicts of a column read (the figures above; lesson 09's transpose relies
# on it). Why not pad the GEMM tiles too? Two reasons, both computable:
#
# 1. **Alignment.** A 16-byte access must start on a 16-byte boundary. With rows of 128 + 1
#    floats, row k starts at byte `4*129*k = 516*k`, a multiple of 16 only when k is a multiple
#    of 4: three rows in four are misaligned, so the compiler cannot emit `LDS.128` at all (the
#    model refuses the addresses too). Padding by a multiple of 4 floats keeps every row aligned.
# 2. **Occupancy.** Padding grows shared memory per block; once a block needs a little more
#    than a divisor of the SM's capacity, one block fewer fits. Which resource limits blocks per
#    SM decides whether that matters.

# %%
# NBVAL_CHECK_OUTPUT
row = 128 + 1
addrs = [4 * (row * 1 + 4 * l) for l in range(32)]  # row k = 1 of a padded B tile
try:
    bank_model.wavefronts(addrs, 16)
except ValueError as e:
    print("16-byte access on a padded row:", e)
from gemm_lessons.instruments.compiler_facts import blocks_per_sm
vec_facts = results.load().compiler["vec"]  # the compiler's facts of vec in the benchmark's record
regs, smem = vec_facts["registers"], vec_facts["shared_bytes"]
for label, regs, smem in [(f"vec ({regs} registers, {smem // 1024} KiB)", regs, smem),
                          ("vec with padded tiles (+2 x 8 floats)", regs, smem + 2 * 8 * 4),
                          ("a 44 KiB-per-block kernel (32 registers)", 32, 44 * 1024),
                          ("the same + 1 KiB of padding", 32, 45 * 1024)]:
    print(f"{label:<40} -> %d block(s) per SM, limited by %s" % blocks_per_sm(regs, smem, 256))

# %% [markdown]
# For lesson 05's kernel the register file decides occupancy, so a little padding would cost
# nothing there. What rules out one float of padding is the misalignment (a multiple of 4 floats
# keeps every row 16-byte aligned), and padding rows would not remove `vec`'s `sB` read conflict
# anyway: its lanes read 32 bytes apart within one row (above). For a kernel near a shared-memory
# boundary (the third and fourth lines: 256 threads; an SM of this GPU has 228 KiB of shared
# memory and reserves 1 KiB more per block, so 5 x 45 KiB fit and 5 x 46 KiB do not), one
# kilobyte of padding costs a whole block per SM, a fifth of its resident warps here (5 to 4
# blocks of 8 warps: 40 to 32 of the SM's 64): the
# "occupancy cliff" that source article [[4]](REFERENCES.md#seed-003) reports. (Both stay under
# the 48 KiB that a block may hold in static shared memory, `cuda.shared.array`; more needs
# dynamic shared memory and an opt-in, which this course does not use.)
#
# ## Measure
#
# The split kernel removes the conflicts of the `sB` reads. Does that make it faster?

# %% [markdown]
# **Predict, then measure.** The tracer above counts the load wavefronts of one block of each
# kernel. How many times faster than `vec` do you expect `vec_split` to run at 4096^3? (The
# loads are one part of a k-step; the 64 FMAs are the rest.) On a GPU the next cells measure
# both now; on the simulator they show the recorded GPU result.

# %%
my_speedup = None  # your prediction: replace None with a number (for example 1.3)

# %%
table = measure_step.compare({"vec_split": ladder.SGEMM["vec_split"], "vec": ladder.SGEMM["vec"]},
                        size=(4096, 4096, 4096))
table

# %%
print(f"vec_split vs vec: {table.speedup('vec_split', 'vec'):.2f}x ({table.source})")
exercises.compare_prediction(my_speedup, table.speedup("vec_split", "vec"), "vec_split vs vec at 4096^3 (times faster)",
                             table.source)

# %% [markdown]
# ## Look through the profiler
#
# The ground truth above came from a separate `ncu` run (256 x 256 x 32 for the GEMMs, 1024 x 1024
# for the transposes: its table's problem column); `gl.profile` reads the
# same counters from the notebook, for any launch, at the size measured above. Divide wavefronts
# by instructions: a conflict-free `LDS.128` takes 4 (2 where lanes pair up, as above), and every
# wavefront beyond the ideal counts as a bank conflict. The
# [stall reasons](GLOSSARY.md#stall-reasons) say where the warps' cycles went (*not selected*
# means ready, waiting only for its turn).

# %%
prof_06 = gl.profile({"vec": ladder.SGEMM["vec"], "vec_split": ladder.SGEMM["vec_split"]}, size=(4096, 4096, 4096),
                     lesson="06")
prof_06

# %%
from IPython.display import Markdown
from gemm_lessons.teaching import profile_readings
Markdown(profile_readings.store_wavefronts_reading(prof_06, {"vec": vec_trace, "vec_split": split_trace}, (128, 128, 16)))

# %% [markdown]
# Read the table with the measurement before it: the split removed most of the load conflicts
# (the wavefront and conflict rows), while the time improved far less (the speedup measured
# above). So shared-load wavefronts were not what mainly held `vec` back at this size. Where the
# largest stall reason is *not selected* (the profile above says whether it is), the most common wait was a
# ready warp's turn to issue, not shared memory. Lessons 07 and 08 go after what remains.

# %% [markdown]
# ## Exercise 06-conflict-free: a kernel without bank conflicts
#
# Lesson 05's exercise kernel (64 x 64 tile, 64 threads, 8x8 results each) as given here runs
# correctly, but the tracer finds two kinds of conflicts in one block:
#
# * the transposed **stores into `sAT`**: lanes `2t` and `2t+1` write column `t` of rows `d` and
#   `d + 4`; with rows of 64 floats both land in the same bank (2-way);
# * the **loads from `sB`**: a thread's 8 columns are side by side (`col_of(j) = tc * 8 + j`), so
#   the 8 lanes of a 16-byte load phase read 16 bytes each, 32 bytes apart (2-way, as in `vec`).
#
# Make every shared access conflict-free, keeping every load 16 bytes wide: choose the padding
# `PAD` of the rows of `sAT` (a row must still start on a 16-byte boundary, or `LDS.128` is
# impossible), and rewrite `col_of(j)`, the tile column of a thread's result column `j`
# (`j = 0..7`; the same function places the loads of `sB` and the stores of C). The check runs
# the kernel against the float64 reference, then traces one block: no conflicts, all loads
# 16-byte as the tracer sees the layout (on a GPU the tracer runs in a child process on the
# simulator, and the check also reports how many loads the compiler made `LDS.128` in the SASS,
# without judging it: whether NVVM merges four neighbouring loads is its choice, lesson 07).

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
### BEGIN SOLUTION: PAD = 0
PAD = 4  # row k starts at word 68k, bank 4k: rows d and d + 4 are 16 banks apart; 68 floats = 17 x 16 bytes
### END SOLUTION
A_ROW = BM + PAD                      # floats per row of sAT (a shared shape must be a constant)


@cuda.jit
@unrolled
def sgemm_ex06(A, B, C, alpha, beta):
    sAT = cuda.shared.array((BK, A_ROW), float32)  # the A tile, transposed and padded: sAT[k, m]
    sB = cuda.shared.array((BK, BN), float32)
    tid = cuda.threadIdx.x
    row0 = cuda.blockIdx.y * BM
    col0 = cuda.blockIdx.x * BN
    M, K = A.shape
    N = B.shape[1]
    tc = tid % (BN // TN)             # this thread's place among the 8 threads across the tile
    t_row = (tid // (BN // TN)) * TM  # its 8 rows of results: t_row..t_row+7
    a_r = tid // (BK // 4)
    a_c = (tid % (BK // 4)) * 4
    b_r = tid // (BN // 4)
    b_c = (tid % (BN // 4)) * 4

    def col_of(j):  # the tile column of this thread's result column j (j = 0..7, a constant)
        ### BEGIN SOLUTION: return tc * TN + j
        return tc * 4 + j % 4 + j // 4 * (BN // 2)  # 4 columns in each half: 8 lanes read 128 contiguous bytes
        ### END SOLUTION

    acc = cuda.local.array((TM, TN), float32)
    a = cuda.local.array(TM, float32)
    b = cuda.local.array(TN, float32)
    for i in static_range(TM):
        for j in static_range(TN):
            acc[i, j] = np.float32(0.0)
    for k0 in range(0, K, BK):
        for p in static_range(BM * BK // 4 // THREADS):
            x0 = x1 = x2 = x3 = np.float32(0.0)
            if row0 + a_r + p * A_STEP < M and k0 + a_c < K:
                x0, x1, x2, x3 = load4(A, row0 + a_r + p * A_STEP, k0 + a_c)
            sAT[a_c + 0, a_r + p * A_STEP] = x0
            sAT[a_c + 1, a_r + p * A_STEP] = x1
            sAT[a_c + 2, a_r + p * A_STEP] = x2
            sAT[a_c + 3, a_r + p * A_STEP] = x3
        for q in static_range(BK * BN // 4 // THREADS):
            y0 = y1 = y2 = y3 = np.float32(0.0)
            if k0 + b_r + q * B_STEP < K and col0 + b_c < N:
                y0, y1, y2, y3 = load4(B, k0 + b_r + q * B_STEP, col0 + b_c)
            store4(sB, b_r + q * B_STEP, b_c, y0, y1, y2, y3)
        cuda.syncthreads()
        for k in range(BK):
            for i in static_range(TM):
                a[i] = sAT[k, t_row + i]
            for j in static_range(TN):
                c = col_of(j)
                b[j] = sB[k, c]
            for i in static_range(TM):
                for j in static_range(TN):
                    acc[i, j] += a[i] * b[j]
        cuda.syncthreads()
    for i in static_range(TM):
        row = row0 + t_row + i
        for j in static_range(TN):
            c = col_of(j)
            col = col0 + c
            if row < M and col < N:
                if beta == 0:
                    C[row, col] = alpha * acc[i, j]
                else:
                    C[row, col] = alpha * acc[i, j] + beta * C[row, col]


exercises.check("06-conflict-free", sgemm_ex06)

# %% [markdown]
# ## Across sizes
#
# The recorded benchmark timed every [rung](GLOSSARY.md#rung) (each lesson's kernel) at four
# square sizes in one run. This lesson's rung,
# the rung before it and cuBLAS:

# %%
plots.rung_versus_size("vec_split");

# %% [markdown]
# ## Takeaway
#
# * A warp-wide shared access costs as many wavefronts as its worst bank holds distinct words,
#   per phase; broadcasts are free. The tracer applies that to any kernel, no changes needed.
# * The GPU's counters agree instruction for instruction, and wavefront for wavefront once one
#   measured rule (paired 16-byte loads) is added, except a few extra wavefronts, mostly in the
#   1024-thread transposes (above: a hypothesis, not a measurement). At 4096^3 the profiler's
#   store wavefronts of `vec` and `vec_split` are a few percent above the tracer's count scaled to
#   the whole grid (the sentence under the profile); that gap is not explained here.
# * Fixes: padding (transpose), a different lane layout (4x8), or splitting a thread's tile
#   (8x8 -> four 4x4). Padding by one float breaks 16-byte alignment; a wide-load GEMM pads by
#   a multiple of 4 floats, or not at all.

# %% [markdown]
# ## Sources and further reading
#
# * The source articles this lesson re-tells and tests: [[3]](REFERENCES.md#seed-002), [[1]](REFERENCES.md#seed-000), [[4]](REFERENCES.md#seed-003) (their origins and what each
#   covers are in [REFERENCES.md](REFERENCES.md#source-articles)).
# * What to read next: [REFERENCES.md, lesson 06](REFERENCES.md#lesson-06).
# * Terms: the [glossary](GLOSSARY.md); the execution model and the compiler-facts table are
#   introduced in the [primer](00a_primer.ipynb).
