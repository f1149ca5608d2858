# %% [markdown]
# # 10 · The leaderboard: every rung against cuBLAS
#
# Lessons 01-08 built eight SGEMM rungs, lesson 09 the transposes. This notebook puts them all
# side by side. The main table comes from one benchmark run in which every rung, every side
# variant and cuBLAS were timed in the same process on the same inputs, each result checked
# against cuBLAS: `python -m gemm_lessons.runs.bench` on a GPU writes `results/<device>.json` and the
# plots. Other sections read other records, each labelled with its own device and date: lesson
# 05's steps, lesson 08's tile sweep, the shape suite of lesson 11, and a second GPU. Without a
# GPU, the recorded runs are shown.

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
from gemm_lessons.teaching import leaderboard
record = results.load()
print(f"{record.device.name}, {record.date}, commit {(record.git_commit or '?')[:12]}")
print(", ".join(f"{k} {v}" for k, v in record.versions.items()))
print("cuBLAS:", record.cublas_math_mode)

# %% [markdown]
# ## Every rung at every size
#
# Four square sizes and two non-square shapes. Each cell: TFLOPS (median) · % of cuBLAS in the
# same run · % of the FP32 peak (SMs x 128 lanes x 2 FLOP x clock). "[host-bound](GLOSSARY.md#host-bound)" marks timings
# where Python could not launch kernels as fast as the GPU finished them (small sizes): those
# measure the launch overhead, not the kernel.

# %%
Markdown(leaderboard.table(record))

# %%
plots.ladder(record, size=(4096, 4096, 4096));

# %%
plots.ladder(record, size=(8192, 8192, 8192));

# %% [markdown]
# Every rung and cuBLAS against size (where two lines lie on top of each other, such as `dbuf`
# and `warptile` from 2048 on, the tables above give both numbers):

# %%
plots.versus_size(record);

# %%
Markdown(leaderboard.small_grid_markdown(record))

# %% [markdown]
# ## The roofline, with every rung where it really is
#
# Lesson 00 placed SGEMM at the problem's *ideal* arithmetic intensity (each input read once
# from DRAM): far right of the ridge, compute-bound. A kernel does not read each input once,
# though. Lesson 02's formula says how many values a rung *asks* global memory for,
# MNK(1/BM + 1/BN) (2MNK for the naive kernel), and the same reasoning one level down gives
# what it reads from shared memory in all: MNK(1/TM + 1/TN) for a TM x TN register tile
# (`counting.sgemm_traffic`; a test checks both against the load counter and the tracer). Each
# memory has its own ceiling: global memory the measured copy bandwidth, shared memory
# 32 banks x 4 bytes per clock on every SM. Placing each rung at the intensity it achieves
# against each memory (left: global, right: shared) shows which ceiling holds it down. Where
# the profiler's counters are recorded (`tools/roofline_profile.py` under ncu), a filled point
# shows the FLOP per byte DRAM really delivered: the L1 and L2 caches serve part of what a
# kernel asks for, so a rung can sit above the ceiling of the bytes it asks for.

# %%
counters = results.roofline_counters(record.device.name)
print("profiler counters:", "recorded" if counters else "none recorded for this device (model only)")
plots.roofline_rungs(record, counters);

# %%
Markdown(leaderboard.roofline_markdown(record, counters))

# %% [markdown]
# The naive kernel is the surprise: counted by what it asks for it sits *above* the global
# ceiling (over 100% in the last column), because most of its requests never reach DRAM, and
# its filled point, where the profiler puts it, is far *below* the DRAM ceiling. Neither memory
# ceiling of this figure holds it down. Lesson 01 profiled it: its two largest stall reasons were
# not waits for global memory (the profile there names them), so what limits it is inside the SM,
# and this roofline has no ceiling for it (no measurement in the course isolates it).
#
# The global ceiling is the faster of the bench's two copy measurements (its float4 copy kernel
# and the driver's device-to-device copy, `results.copy_bandwidth_gbs`); the two-GPU table below
# shows instead the float4 copy timed next to the transposes at 8192 x 8192 in the same run, a few
# GB/s apart.
#
# Read the table against the ladder: the rung whose speed is closest to one of its ceilings is
# held down by that memory, and the next lesson's technique is the one that raises that
# ceiling (bigger tiles for global memory, bigger register tiles for shared memory). With an
# 8x8 register tile the shared-memory ceiling reaches the FP32 peak: a thread does 2 x 8 x 8
# FLOP per 16 values = 64 bytes read, 2 FLOP per byte, and the peak is exactly 2 FLOP per byte
# of shared bandwidth (128 FP32 lanes x 2 FLOP against 128 bytes per clock per SM). From 8x8 on,
# no memory ceiling binds at 4096^3: the gap to the peak is in how the instructions are issued
# and overlapped (lessons 05-08).

# %% [markdown]
# ## What each technique was worth
#
# Each row compares two kernels named after the technique that separates them (some rows change
# more than one thing: the label says what), timed in the same run at 4096^3. Each kernel's
# TFLOPS come with their [p10-p90](GLOSSARY.md#p10-p90) range, and the mark reads the two
# ranges: ✅ faster when the range with the technique lies wholly above the range without it,
# ❌ slower when it lies wholly below, ≈ when the ranges overlap (the difference is within the
# spread of the samples). Lesson 05's steps were timed in a run of their own on the same GPU
# (`python -m gemm_lessons.teaching.lesson05_steps`): a pair this benchmark run did not time comes
# from there, marked †, both kernels still from one run.

# %%
from gemm_lessons.teaching import lesson05_steps
Markdown(leaderboard.effects_markdown(leaderboard.technique_effects(record, extra=[lesson05_steps.load(record.device.name)])))

# %% [markdown]
# And the single changes of lesson 08's tile sweep, a record of its own. Its configurations were
# timed in more than one run: the "timed in" column says which pairs were timed together (only
# those can be compared as firmly as the pairs above).

# %%
from gemm_lessons.runs import tuning
sweep = leaderboard.load_sweep()
Markdown(tuning.runs_sentence(sweep) + "\n\n" + tuning.changes_markdown(sweep.rows))

# %% [markdown]
# ## What the last rung is made of, and what limits it
#
# The compiler's view of the last rung next to lesson 06's: 128 registers (the cap) and no
# spills, so two blocks of 256 threads share an SM (16 warps). Its main loop handles two slices
# per trip: 64 `LDS.128` feed 1,024 FFMA (of the 1,088 counted; the other 64 compute
# alpha * acc + beta * C at the end), with one barrier per slice (the third `BAR` is the
# prologue's). Every warp instruction that is not an FFMA takes an issue slot from one: that is
# one reason no kernel here, cuBLAS included, reaches the FP32 peak. It is likely not the only
# one: the peak assumes the GPU's maximum clock, and nothing in these runs recorded the clock
# while the kernels ran (a GPU under full load may run below it).

# %%
compiler_facts.compiler_facts({name: ladder.SGEMM[name].kernel for name in ["vec_split", "dbuf", "warptile"]},
                              threads={name: 256 for name in ["vec_split", "dbuf", "warptile"]})

# %%
last = list(ladder.SGEMM)[-1]
for size in [(4096, 4096, 4096), (8192, 8192, 8192)]:
    row = results.sgemm_rows(record, last, size)[0]
    cub = results.sgemm_rows(record, "cublas", size)[0]
    print(f"{last} at {size[0]}^3: {row.gflops / 1e3:.2f} TFLOPS (p10-p90 {row.gflops_p10 / 1e3:.2f}-"
          f"{row.gflops_p90 / 1e3:.2f}) = {row.pct_cublas:.1f}% of cuBLAS ({cub.gflops / 1e3:.2f})")
    spread = (row.gflops_p90 - row.gflops_p10) / row.gflops
    if spread > 0.05:  # most rows of the record spread well under 1%
        print(f"  its p10-p90 range is {100 * spread:.0f}% of the median: a tenth of its timed calls ran at "
              f"{row.gflops_p10 / 1e3:.2f} TFLOPS or slower; the median, not the range, is what the ratio uses, "
              "and why those calls were slower was not measured")

# %% [markdown]
# ## Two GPUs: what moves with the memory, what does not
#
# The same benchmark ran on a second GPU, an NVIDIA H200 (`results/nvidia-h200.json`, and the
# shape suite in `results/shapes-nvidia-h200.json`). Its records give it the H100's SM count
# and clock, so the same FP32 peak, with more DRAM bandwidth (the first table). That makes it
# an experiment on the roofline: a kernel held down by its arithmetic, or by anything inside
# the SM, should run at the same speed on both; a kernel held down by DRAM should speed up by
# the ratio of the copies. Each number below comes from its own GPU's run, with cuBLAS and the
# copy timed in that same run.

# %%
Markdown(leaderboard.devices_markdown(leaderboard.device_records()))

# %% [markdown]
# Read it against the lessons. Every SGEMM rung, even the naive one, stays where it was: none
# of them is held down by DRAM bandwidth (for the naive kernel this agrees with the roofline
# above, which put it far below its DRAM ceiling). The transposes are memory-bound, yet they
# do not all move: the `wide` rung follows the copy and cuBLAS's `sgeam` nearly does, the others
# gain less, and a transpose that gained 5% or less while the copy gained far more (the last
# sentence lists them) is held by something other than DRAM bandwidth. For `smem_tile` lesson 09
# found one likely part of it: its column reads of `tile[32][32]` are 32-way bank conflicts, and
# shared memory's nominal bandwidth is the same on both GPUs (the first table: the same SM count
# and clock, from the records, not measured). The conflicts alone do not account for its speed
# (at 33 wavefronts per 32 elements the SMs could move about twice its GB/s), and the middle
# cases (the naive kernel, the padded tiles) are not explained here. Both GPUs' FP32 peak comes
# from their nominal clock; nothing recorded the clock while the kernels ran.
#
# The **shape suite** is lesson 11's benchmark of the library call `gl.sgemm`: squares, shapes
# whose sides are not powers of 2, and skinny ones, each against cuBLAS; for each shape the
# library picks a **plan** (a kernel, a tile size and how many ways to split K:
# [dispatch](GLOSSARY.md#dispatch)). The shape suite differs more between the two GPUs than the
# square sizes do. The sentence
# under its table says which side moved, and whether the two suites ran the same version of
# `gl.sgemm` (where they did not, its rows compare versions of the library as much as GPUs):
# compare how far `gl.sgemm`'s time per call moved with how far cuBLAS's did, and compare the
# single-call row with the back-to-back one
# ([single call, back to back](GLOSSARY.md#single-call): lesson 11 measures what a call costs).

# %% [markdown]
# ## Measure it on your GPU
#
# On a machine with a GPU this cell times the last rung and cuBLAS now (on the simulator it
# shows the recorded numbers). For the full table, run `python -m gemm_lessons.runs.bench`
# and re-run this notebook: it reads the newest record.

# %%
measure_step.compare({last: ladder.SGEMM[last]}, size=(4096, 4096, 4096))

# %%
# NBVAL_CHECK_OUTPUT
print("rungs in order:", " -> ".join(ladder.SGEMM))

# %% [markdown]
# ## Exercise 10-next-step: which technique to try next, by the record
#
# You have a kernel from this course and a shape to run it at. Which technique should you try
# next? The record answers with measurements: `leaderboard.technique_effects(record, size)`
# lists, for one recorded size, the rows of the technique table above (technique, lesson, the
# kernel without it, the kernel with it, TFLOPS without, TFLOPS with, change in %), each pair
# timed in the same run. Write `next_step(kernel, size)`: among the rows that start from
# `kernel`, the one with the largest gain, returned as `(kernel with it, change in %)`, or
# `None` when no row from `kernel` gained more than 2 % at that size (the exercise's rule: a
# gain of 2 % or less does not count, whether or not the two p10-p90 ranges overlap). The function sees this record's rows only (not
# the † rows of lesson 05's steps run). The check asks about every kernel of the table at every
# recorded size where the record timed both kernels of its rows, none of them host-bound, and
# compares with the record; the answer differs from size to size.

# %%
def next_step(kernel, size):
    ### BEGIN SOLUTION
    gains = [(after, change) for _, _, before, after, _, _, change in leaderboard.technique_effects(record, size)
             if before == kernel and change > 2]
    return max(gains, key=lambda g: g[1]) if gains else None
    ### END SOLUTION


exercises.check("10-next-step", next_step)

# %% [markdown]
# ## Good and bad techniques, in one sentence each
#
# * **Good:** coalesced loads (01); shared-memory tiles (02); several results per thread in
#   registers, best as a square outer product (03, 04); a transposed A tile, 128-bit loads and
#   compile-time unrolling of the k-step (05); conflict-free shared reads (06); two shared buffers with the next
#   slice's loads under the compute (07); a register cap that keeps two blocks per SM (04, 08).
# * **Bad, measured:** lifting the register cap (04, 08); a runtime buffer index (07); a
#   short-circuit `and` around loads, which made the compiler spill (07); in the sweep, some tile
#   shapes and slice depths (08: the sweep's table above, among them one where one buffer beat
#   two).
# * **Neutral here:** 16x16 vs 32x32 shared tiles (02), warp layout and padding of the A tile
#   (08): changes of 1% or less, most within the spread of the samples (the sweep's "timed in"
#   column says where the ranges were apart all the same) (for the warp layout the bank model predicted none; without
#   padding it predicts 2-way conflicts on the A-tile stores, too few to show in the time).

# %% [markdown]
# ## Sources and further reading
#
# * The source articles this lesson re-tells and tests: [[1]](REFERENCES.md#seed-000), [[2]](REFERENCES.md#seed-001), [[3]](REFERENCES.md#seed-002), [[4]](REFERENCES.md#seed-003), [[5]](REFERENCES.md#seed-004) (their origins and what each
#   covers are in [REFERENCES.md](REFERENCES.md#source-articles)).
# * What to read next: [REFERENCES.md, lesson 10](REFERENCES.md#lesson-10).
# * Terms: the [glossary](GLOSSARY.md); the execution model and the compiler-facts table are
#   introduced in the [primer](00a_primer.ipynb).
