# %% [markdown]
# # 00 · Setup and the roofline
#
# **Where we are.** The [primer](00a_primer.ipynb) launched a first kernel and toured the memory
# hierarchy. This series now builds a single-precision matrix product (SGEMM) in Python with
# `numba.cuda`, one idea per lesson, each measured against NVIDIA's cuBLAS. Before any of that we
# need the two numbers every kernel is judged against: how fast this GPU can compute, and how fast
# it can move data. Together they draw the *roofline*. Then we time cuBLAS, place it on the
# roofline, and ask what holds it there.
#
# **No GPU?** Everything runs on numba's CUDA simulator: kernels run as Python threads at small
# sizes, checks work, nothing is timed, and every table and plot shows recorded GPU results,
# labelled with their device and date.

# %%
import gemm_lessons as gl  # first: it chooses the GPU, or numba's CUDA simulator when there is none
from gemm_lessons.model import counting
from gemm_lessons.teaching import exercises, limiter_table, measure_step, plots
from gemm_lessons.records import results
from gemm_lessons.core.float4 import load4, store4  # 16-byte loads and stores (lesson 05 explains them)
from gemm_lessons.measure import cublas
from IPython.display import Markdown, display
import numpy as np
from numba import cuda
# %matplotlib inline
print(gl.banner())

# %% [markdown]
# ## The machine: peak FP32
#
# A GPU computes in its streaming multiprocessors ([SMs](GLOSSARY.md#sm)). Each SM has FP32
# lanes (units, not threads: 128 per SM on Hopper; NVIDIA's
# [throughput table](https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#arithmetic-instructions)
# gives the count per compute capability), and each lane finishes one fused multiply-add
# ([FMA](GLOSSARY.md#ffma), 2 FLOP) per clock:
#
# $$\text{peak} = \text{SMs} \times \text{lanes per SM} \times 2 \times \text{clock}$$
#
# The driver reports the SMs and the (boost) clock.

# %%
dev = results.load().device if gl.SIMULATOR else gl.device_info()  # the simulator: the recorded GPU
print(f"{dev.name}: {dev.sm_count} SMs x {dev.fp32_lanes_per_sm} lanes x 2 FLOP x {dev.clock_mhz:,.0f} MHz"
      f" = {dev.peak_gflops / 1e3:.1f} TFLOPS peak FP32")
print(f"DRAM on paper: {dev.memory_bus_bits}-bit bus x 2 transfers per clock x {dev.memory_clock_mhz:,.0f} MHz"
      f" / 8 bits = {dev.memory_bandwidth_gbs:,.0f} GB/s")

# %% [markdown]
# ## Counting the work
#
# Each element of `C = alpha*A@B + beta*C` (A is MxK, B is KxN) is a dot product of length K:
# K multiplies and K-1 additions. Scaling by alpha, scaling C by beta and adding them costs three
# more, so the exact count is $(2K+2)MN$. For large K this is the familiar $2MNK$, which every
# TFLOPS figure in this series uses (as cuBLAS benchmarks do).

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
# A perfect kernel reads A and B from DRAM once and writes C once: $4(MK + KN + MN)$ bytes (with
# beta = 0; otherwise it reads C too, 4MN bytes more). FLOP per byte is the problem's
# **[arithmetic intensity](GLOSSARY.md#arithmetic-intensity)**. For SGEMM it grows with size:

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
# The DRAM figure on paper is an upper bound; what a kernel gets is measured. The kernel below
# copies a matrix, each thread moving 16 bytes with one load and one store:

# %%
# source: gemm_lessons/kernels/device_copy.py  (the package runs this same code; a test keeps the two identical)
@cuda.jit
def copy_float4(src, dst):
    # one row per block row of the grid (grid-stride if there are more rows than blocks),
    # 16 bytes per thread with LDG.128 / STG.128.  No integer division: a 64-bit division
    # per thread (to turn a flat index into row and column) measurably slowed a copy down.
    rows, cols = src.shape
    c = (cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x) * 4
    if c < cols:
        for r in range(cuda.blockIdx.y, rows, cuda.gridDim.y):
            v0, v1, v2, v3 = load4(src, r, c)
            store4(dst, r, c, v0, v1, v2, v3)

# %%
# Check: copy a 6x12 matrix with 3 rows of blocks (so each block row does two rows)
src = cuda.to_device(np.random.default_rng(0).random((6, 12), dtype=np.float32))
dst = cuda.device_array_like(src)
copy_float4[(1, 3), 4](src, dst)
print("copy_float4 copies exactly:", np.array_equal(dst.copy_to_host(), src.copy_to_host()))

# %% [markdown]
# We time the package's copy of an 8192x8192 matrix (256 MiB read, 256 MiB written) and, for
# comparison, the driver's `cudaMemcpy`; bandwidth counts bytes read + written. Timing uses
# [CUDA events](GLOSSARY.md#cuda-events), timestamps the GPU itself records, after a warm-up and
# over many repeats: the table gives the median and the 10th-90th percentile range
# ([p10-p90](GLOSSARY.md#p10-p90)). A row marked [host-bound](GLOSSARY.md#host-bound) is one
# where issuing a call took the host nearly as long as running it took the GPU (the lab notes
# give both times).

# %%
bw = measure_step.copy_bandwidth()
bw

# %%
peak, ceiling = bw.record.device.peak_gflops, results.copy_bandwidth_gbs(bw.record)
print(f"The best copy moved {ceiling:,.0f} GB/s, {100 * ceiling / bw.record.device.memory_bandwidth_gbs:.0f}% "
      f"of the DRAM bandwidth on paper.")

# %% [markdown]
# ## The roofline
#
# A kernel that does F FLOP and moves B bytes of DRAM needs at least F / peak seconds of
# arithmetic and at least B / bandwidth seconds of memory traffic; it takes at least the larger
# of the two. Each of these is a **ceiling**, and the larger one **binds**. Divided by the time,
# this reads as a rate: a kernel of intensity I = F / B runs at most at
# **[min(peak, bandwidth x I)](GLOSSARY.md#roofline)**. Drawn against I, that is the roofline: a
# slanted DRAM ceiling, then a flat FP32 ceiling. They meet at the
# **[ridge point](GLOSSARY.md#ridge-point)**, peak / bandwidth: left of it a kernel is
# memory-bound, right of it compute-bound ([compute-bound, memory-bound](GLOSSARY.md#compute-bound)).

# %%
print(f"Ridge point: {peak / 1e3:.1f} TFLOPS / {ceiling:,.0f} GB/s = {peak / ceiling:.0f} FLOP per byte. "
      f"SGEMM at 4096^3 offers {counting.sgemm_intensity(4096, 4096, 4096):.0f}.")
TICKS = (10, 20, 30, 40, 50, 60, 70)  # TFLOPS: a grid fine enough to read a point against the peak
plots.roofline(bw.record, points=[], yticks=TICKS,
               marks=[("SGEMM 4096^3, each value read once", counting.sgemm_intensity(4096, 4096, 4096))]);

# %% [markdown]
# ## Predict
#
# cuBLAS computes `C = A@B` at 4096^3. If it reads each value from DRAM once (the dashed line),
# what rate does the roofline allow it, in TFLOPS? Write your number before running the next
# cells.

# %%
my_cublas_tflops = None  # your prediction, TFLOPS

# %% [markdown]
# ## cuBLAS: the yardstick
#
# cuBLAS is column-major; our matrices are row-major. A row-major MxN matrix is, byte for byte,
# its column-major transpose, so `C = A@B` is the column-major product `C^T = B^T A^T`: one
# `cublasSgemm` call with A and B swapped and no transposes, on the pointers of numba device
# arrays (`gemm_lessons/measure/cublas.py`, through `nvmath-python`). Math mode is the default:
# true FP32, no [TF32](GLOSSARY.md#tf32). First the check: against a float64 reference, on
# random non-square sizes, with alpha and beta.

# %%
if cublas.available():
    display(gl.check_all(cublas.sgemm, name="cublas"))
else:
    print("cuBLAS needs a GPU: on the simulator the check is skipped.")

# %%
sweep = measure_step.cublas_sweep(sizes=(1024, 2048, 4096, 8192))
sweep

# %%
cub = next(r for r in sweep.rows if r.M == 4096)
allowed = min(peak, ceiling * counting.sgemm_intensity(4096, 4096, 4096))
print(f"cuBLAS at 4096^3: {cub.gflops / 1e3:.1f} TFLOPS, {100 * cub.gflops / peak:.0f}% of the FP32 peak; "
      f"the roofline allows {allowed / 1e3:.1f}.")
exercises.compare_prediction(my_cublas_tflops, cub.gflops / 1e3, "cuBLAS at 4096^3, TFLOPS", sweep.source)

# %% [markdown]
# On the roofline (cuBLAS's dot sits at the ideal intensity, each value read once):

# %%
plots.roofline(measure_step.merge(bw, sweep), yticks=TICKS,
               points=[(f"cuBLAS {cub.gflops / 1e3:.1f}", counting.sgemm_intensity(4096, 4096, 4096), cub.gflops)]);

# %% [markdown]
# ## Why: the limiter model
#
# DRAM is far from binding here, yet cuBLAS stops well short of the FP32 ceiling. The roofline's
# two ceilings are the first two of the course's **[limiter model](GLOSSARY.md#limiter-model)**
# (defined in the [primer](00a_primer.ipynb)): one time per resource of the GPU, the time the
# whole kernel would take if that resource were all that mattered; the largest binds. It has four
# more ceilings; this lesson needs the first, later lessons the rest: **instruction issue** (an
# SM's four [schedulers](GLOSSARY.md#warp-scheduler) issue one warp-instruction each per cycle),
# **shared-memory [wavefronts](GLOSSARY.md#wavefront)** (one per SM per cycle),
# **[L2](GLOSSARY.md#l2) bandwidth**, and **DRAM [latency](GLOSSARY.md#latency)** (too few bytes in
# flight to keep DRAM busy, by [Little's law](GLOSSARY.md#littles-law)).
#
# Here is the model for cuBLAS at 4096^3. Its counts of instructions, wavefronts and bytes come
# from one profiled run (the heading names the GPU):

# %%
why = limiter_table.why(["cublas"], measured=sweep)
why

# %% [markdown]
# Why issue? A Hopper SM's 128 lanes finish 4 [warp-FFMAs](GLOSSARY.md#warp-fma) per cycle
# (128 / 32 threads), and its schedulers issue 4 warp-instructions per cycle. So the FP32 peak
# needs *every* issue slot to carry an `FFMA`: each load, address computation or branch takes a
# slot an FFMA could have had.

# %%
r = why.row("cublas")
c = r.ceilings_ms
per_ffma = c["issue"] / c["fp32"]  # 4 issue slots and 4 warp-FFMAs per cycle: the ratio of the two times
print(f"cuBLAS issues {per_ffma:.2f} warp-instructions per warp-FFMA, so issue allows {100 / per_ffma:.0f}% of "
      f"the FP32 peak ({c['issue']:.2f} ms against {c['fp32']:.2f} ms). The last wave of blocks leaves some SMs "
      f"idle and stretches that by {100 * (r.tail - 1):.0f}%: predicted {r.predicted_ms:.2f} ms, "
      f"{100 * c['fp32'] / r.predicted_ms:.0f}% of the peak. Measured: {r.measured_ms:.2f} ms, "
      f"{100 * c['fp32'] / r.measured_ms:.0f}% of the peak, {r.ratio:.2f} times the prediction.")
print(f"The model assumes the binding unit busy every cycle; the profiler found the busiest unit, "
      f"{limiter_table.SHORT[r.busiest]}, busy {r.busiest_pct:.0f}% of them. The other cycles are stalls: warps "
      f"waiting at a barrier, for a load, or for the result of an earlier instruction.")

# %% [markdown]
# The model's times are taken at the clock the GPU held (the table's heading), so the gap between
# cuBLAS and the peak is not the clock and not memory: it is instructions other than FFMA, plus
# stalls. Every rung of this series will be read the same way: its ceilings, the binding one,
# and how close it gets.
#
# ## Takeaway
#
# * Peak FP32 = SMs x lanes x 2 x clock; the DRAM ceiling is a measured copy, not a data sheet.
# * SGEMM does 2MNK FLOP on at least 4(MK + KN + MN) bytes: 683 FLOP per byte at 4096^3, far
#   right of the ridge point, so DRAM bandwidth need not limit it.
# * A ceiling is a time; the largest binds. The roofline draws two (FP32, DRAM); the limiter model
#   adds issue, shared-memory wavefronts, L2 and latency.
# * cuBLAS at 4096^3 is issue-bound: the FP32 peak needs every issue slot to be an FFMA. Every
#   later kernel is measured as a % of cuBLAS in the same run.

# %% [markdown]
# ## Sources and further reading
#
# * The source articles this lesson re-tells and tests: [[1]](REFERENCES.md#seed-000), [[2]](REFERENCES.md#seed-001), [[5]](REFERENCES.md#seed-004) (their origins and what each
#   covers are in [REFERENCES.md](REFERENCES.md#source-articles)).
# * What to read next: [REFERENCES.md, lesson 00](REFERENCES.md#lesson-00), among them the roofline paper.
# * Terms: the [glossary](GLOSSARY.md); the execution model and the compiler-facts table are
#   introduced in the [primer](00a_primer.ipynb).

# %% [markdown]
# ## Lab notes
#
# * **Two GPUs on the simulator.** There the tables show the recorded H100 run and the model's
#   table the H200 limiter run (`results/limiter-nvidia-h200.json`). The two GPUs have the same
#   SMs and clock, so the same FP32 and issue rates; the H200's DRAM is faster, which
#   moves its ridge point left and changes nothing for cuBLAS. On an H200 the model's table takes
#   this notebook's own cuBLAS time.
# * **Host time against GPU time** for the two copies, the numbers behind the host-bound flag:

# %%
copy = next((row for row in bw.rows if row.kernel == "copy_float4"), None)
for row in bw.rows:
    print(f"{row.kernel}: {row.host_issue_ms * 1e3:,.0f} µs to issue a call, {row.median_ms * 1e3:,.0f} µs on the "
          f"GPU, {row.gbs:,.0f} GB/s" + (" (host-bound)" if row.host_bound else ""))
    if row.host_bound and copy is not None and row is not copy and not copy.host_bound \
            and abs(row.gbs / copy.gbs - 1) < 0.02:
        print(f"  {row.kernel} moved as many bytes per second as copy_float4 (within 2%), which is not host-bound: "
              "a GPU that waited for the host between calls would have moved fewer, so here it did not wait; "
              "the host's time is the driver's copy call itself.")
