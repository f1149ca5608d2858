# %% [markdown]
# # 00 · Setup and the roofline
#
# This series builds a single-precision matrix product (SGEMM) on the GPU, one idea at a time,
# in Python with `numba.cuda`, and measures every step against NVIDIA's cuBLAS. Lesson 09 does
# the same for a memory-bound kernel, the matrix transpose.
#
# This first notebook sets up the two numbers every later lesson is judged against:
#
# * **how fast the GPU can compute**: its peak FP32 rate, derived from SMs, lanes and clock;
# * **how fast it can move data**: its measured copy bandwidth.
#
# Together they draw the *roofline*: for a kernel that does `I` floating-point operations per
# byte of DRAM traffic, the best possible rate is `min(peak, bandwidth x I)`.
#
# **No GPU?** Everything runs unchanged on numba's CUDA simulator: kernels execute as Python
# threads at small sizes, correctness checks work, nothing is timed, and every table and plot
# shows the *recorded* GPU results, labelled with the device and date they were measured on.

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

# %% [markdown]
# ## The machine
#
# `gl.device_info()` asks the driver for the number of streaming multiprocessors (SMs), the
# compute capability and the clock (the highest, boost clock). The number of FP32 lanes per SM
# (here a lane is one FP32 unit, not a thread of a warp) comes from NVIDIA's
# [throughput table](https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#arithmetic-instructions)
# for that compute capability (128 on Hopper). Each lane finishes one fused
# multiply-add (FMA, 2 FLOP) per clock:
#
# $$\text{peak} = \text{SMs} \times \text{lanes per SM} \times 2 \times \text{clock}$$

# %%
info = gl.device_info()
info

# %%
record = results.load()  # the newest recorded GPU run in results/
rec_dev = record.device
print(f"recorded on {results.label(record)}:")
print(f"  {rec_dev.sm_count} SMs x {rec_dev.fp32_lanes_per_sm} lanes x 2 FLOP x {rec_dev.clock_mhz:.0f} MHz"
      f" = {rec_dev.peak_gflops / 1e3:.1f} TFLOPS peak FP32")
print(f"  DRAM: {rec_dev.memory_bus_bits}-bit bus x 2 transfers per clock x {rec_dev.memory_clock_mhz:.0f} MHz / 8 bits"
      f" = {rec_dev.memory_bandwidth_gbs:,.0f} GB/s (theoretical)")

# %% [markdown]
# ## Counting the work
#
# Each element of `C = alpha*A@B + beta*C` (A is MxK, B is KxN) is a dot product of length K:
# K multiplies and K-1 additions. Scaling by alpha, scaling C by beta and adding them costs three
# more operations, so the exact count is $(2K-1+3)MN = (2K+2)MN$. For large K this is the familiar
# $2MNK$, which is what every GFLOPS figure in this series uses (as cuBLAS benchmarks do).

# %%
# NBVAL_CHECK_OUTPUT
for M, N, K in [(1, 1, 3), (512, 256, 128), (4096, 4096, 4096)]:
    print(f"{M}x{N}x{K}: 2MNK = {counting.sgemm_flops(M, N, K):,}   "
          f"(2K+2)MN = {counting.sgemm_flops(M, N, K, alpha_beta=True):,}")

# %% [markdown]
# ### Exercise 00-flops
# How many floating-point operations does `alpha*A@B + beta*C` take for M=300, N=200, K=100,
# counting alpha and beta? Write the expression, not the number.

# %%
# NBVAL_CHECK_OUTPUT
### BEGIN SOLUTION: answer = None
M, N, K = 300, 200, 100
answer = (2 * K + 2) * M * N
### END SOLUTION
exercises.check("00-flops", answer)

# %% [markdown]
# ## Counting the bytes: arithmetic intensity
#
# A perfect kernel reads A and B once and writes C once: $4(MK + KN + MN)$ bytes (with beta not 0
# it reads C too, 4MN bytes more; the table below takes beta = 0). The ratio FLOP / byte is the problem's
# **[arithmetic intensity](GLOSSARY.md#arithmetic-intensity)**. It grows with size: SGEMM at
# 4096^3 does hundreds of FLOP per byte (the table below). The roofline's
# **[ridge point](GLOSSARY.md#ridge-point)** is the intensity at which moving the bytes at full
# bandwidth takes as long as doing the FLOP at the peak rate: peak / bandwidth, worked out below
# once the copy bandwidth is measured. Below the ridge point the best a kernel can do is set by
# DRAM bandwidth (*memory-bound*), above it by the FP32 units (*compute-bound*)
# ([compute-bound, memory-bound](GLOSSARY.md#compute-bound)). SGEMM's ideal intensity, with each
# value read from DRAM once, lies far above the ridge point. A kernel that reads each value r
# times from DRAM divides its intensity by r, so it stays compute-bound as long as r is below the
# ideal intensity over the ridge point; the whole series is about keeping r small.

# %%
# NBVAL_CHECK_OUTPUT
print(f"{'size':>6} {'GFLOP':>9} {'MB moved':>9} {'FLOP/byte':>10}")
for s in [256, 1024, 4096, 8192]:
    print(f"{s:>6} {counting.sgemm_flops(s, s, s) / 1e9:>9.2f} {counting.sgemm_min_bytes(s, s, s) / 1e6:>9.1f}"
          f" {counting.sgemm_intensity(s, s, s):>10.1f}")

# %% [markdown]
# ### Exercise 00-intensity
# What is the arithmetic intensity (FLOP per byte) of an SGEMM with M = N = 4096 and K = 512,
# with beta = 0? (Not square: the table above does not have it.)

# %%
# NBVAL_CHECK_OUTPUT
### BEGIN SOLUTION: answer = None
M, N, K = 4096, 4096, 512
answer = 2 * M * N * K / (4 * (M * K + K * N + M * N))
### END SOLUTION
exercises.check("00-intensity", answer)

# %% [markdown]
# ## Measured copy bandwidth
#
# The theoretical DRAM figure above is an upper bound; the copy below shows how much of it a
# kernel gets. What matters is that measured figure:
# we time a copy of a 8192x8192 float32 matrix (256 MiB read, 256 MiB written) two ways:
# our own numba kernel moving 16 bytes per thread (`gemm_lessons/kernels/device_copy.py`) and `cudaMemcpy`
# device-to-device. Bandwidth counts bytes read + written.
# Timing uses **[CUDA events](GLOSSARY.md#cuda-events)**: markers queued on the GPU between the
# calls, which the GPU timestamps when it reaches them, so the time between two events is the
# GPU's time, not the host's. Each call is timed after a warm-up, many times; the table gives the
# median and the 10th-90th percentile range ([p10-p90](GLOSSARY.md#p10-p90)) of the repeats.

# %%
bw = measure_step.copy_bandwidth()
bw

# %%
from IPython.display import Markdown, display

# The host's time to issue each call against the GPU's time to run it, and the ridge point, from the table above
peak, ceiling = bw.record.device.peak_gflops, results.copy_bandwidth_gbs(bw.record)
issue = "; ".join(f"`{r.kernel}` {r.host_issue_ms * 1e3:,.0f} µs to issue, {r.median_ms * 1e3:,.0f} µs on the GPU"
                  for r in bw.rows)
text = [f"**Host time against GPU time** ({bw.source}): {issue}. A timing is flagged "
        "[host-bound](GLOSSARY.md#host-bound) when issuing a call took the host at least 80% of the GPU's time "
        "per call: the GPU may then have waited for the host between calls."]
copy = next((r for r in bw.rows if r.kernel == "copy_float4"), None)
for r in bw.rows:
    if r.host_bound and copy is not None and r is not copy and not copy.host_bound and abs(r.gbs / copy.gbs - 1) < 0.02:
        text.append(f"`{r.kernel}` is flagged, yet it ran at {r.gbs:,.0f} GB/s, within 2% of `copy_float4` "
                    f"({copy.gbs:,.0f} GB/s), which is not flagged: so here the GPU likely did not wait, and the host's "
                    "time is that of the driver's copy call itself.")
text.append(f"**Ridge point**: the FP32 peak, {peak / 1e3:.1f} TFLOPS, over the best copy bandwidth, "
            f"{ceiling:,.0f} GB/s: {peak / ceiling:.0f} FLOP per byte. SGEMM at 4096^3 offers "
            f"{counting.sgemm_intensity(4096, 4096, 4096):.0f} (the table of intensities above).")
display(Markdown("\n\n".join(text)))

# %% [markdown]
# ## cuBLAS: the yardstick
#
# cuBLAS is column-major; our matrices are row-major. A row-major MxN matrix is, byte for byte,
# its column-major transpose, so `C = A@B` is the column-major product `C^T = B^T A^T`: one
# `cublasSgemm` call with A and B swapped and no transposes (`gemm_lessons/measure/cublas.py`, through
# `nvmath-python`'s bindings on raw device pointers). Math mode is the default: true FP32, no
# [TF32](GLOSSARY.md#tf32) (a tensor-core format that rounds the inputs to a 10-bit mantissa, which
# cuBLAS uses only when allowed to).

# %%
sweep = measure_step.cublas_sweep(sizes=(1024, 2048, 4096, 8192))
sweep

# %%
cub = next((r for r in sweep.rows if r.M == 4096), None)
if cub is not None:
    display(Markdown(f"cuBLAS at 4096^3: {cub.gflops / 1e3:.1f} TFLOPS, "
                     f"{100 * cub.gflops / sweep.record.device.peak_gflops:.0f}% of the nominal FP32 peak "
                     f"({sweep.source})."))

# %% [markdown]
# ## The roofline
#
# Black: the roofline, `min(peak, measured copy bandwidth x intensity)`, on a log-log chart; the
# dotted line marks the ridge point (worked out above). A kernel left of it is memory-bound at
# best, right of it compute-bound. SGEMM at 4096^3 sits far to the right, so the memory ceiling
# of this chart does not hold cuBLAS down (its dot sits at the ideal intensity of the table above,
# each value read from DRAM once, not at a measured one); only the nominal FP32 peak is above it, and cuBLAS
# stays below that peak (the fraction is printed above).
# Why is not measured in this course. Two likely contributors, as hypotheses: the SM clock under
# full load may sit below the boost clock the peak assumes, and some issue slots go to loads and
# address arithmetic instead of `FFMA`. Lesson 10 puts every kernel of the series on this chart,
# each at the arithmetic intensity it really achieves.

# %%
plots.roofline(measure_step.merge(bw, sweep));

# %% [markdown]
# cuBLAS at every size of the sweep, in TFLOPS (the axis starts at 0):

# %%
plots.versus_size(measure_step.merge(bw, sweep), kernels=["cublas"]);

# %% [markdown]
# ## Takeaway
#
# * Peak FP32 = SMs x lanes x 2 x clock; copy bandwidth is measured, not read off a data sheet.
# * SGEMM's intensity grows with size: at 4096^3 the work is compute-bound *if* each value is
#   read from DRAM only a few times. The naive kernel of lesson 01 asks global memory for each
#   value of A N times and for each value of B M times: 4,096 times each at 4096^3. Lesson 02
#   cuts those global loads with shared-memory tiles, lesson 03 with larger tiles; lessons 03-04
#   cut the shared-memory loads per FMA; lesson 05 cuts the load instructions around the FMAs
#   (16-byte loads), lesson 06 the shared-memory bank conflicts, lesson 07 hides the global loads
#   behind the FMAs, and lesson 08 tunes the tile sizes.
# * cuBLAS sets the bar. Every speed claim about a kernel in this series is a ratio against
#   cuBLAS measured in the same run; the tables also give each kernel's share of the nominal
#   FP32 peak, and lesson 10 adds a second GPU.

# %% [markdown]
# ## Sources and further reading
#
# * The source articles this lesson re-tells and tests: [[1]](REFERENCES.md#seed-000), [[2]](REFERENCES.md#seed-001), [[5]](REFERENCES.md#seed-004) (their origins and what each
#   covers are in [REFERENCES.md](REFERENCES.md#source-articles)).
# * What to read next: [REFERENCES.md, lesson 00](REFERENCES.md#lesson-00).
# * Terms: the [glossary](GLOSSARY.md); the execution model and the compiler-facts table are
#   introduced in the [primer](00a_primer.ipynb).
