# %%
# Setup: where the course is not installed (Colab), install it; then say which GPU this is.
import importlib.util, shutil, subprocess, sys
REPOSITORY, BRANCH = '', 'main'  # [tool.gemm-lessons] in the course's pyproject.toml
smi = shutil.which("nvidia-smi")
gpu = subprocess.run([smi, "--query-gpu=name,driver_version", "--format=csv,noheader"], capture_output=True,
                     text=True).stdout.strip().splitlines() if smi else []
gpu_name, driver = (gpu[0].rsplit(", ", 1) + [""])[:2] if gpu else ("", "")
cc = subprocess.run([smi, "--query-gpu=compute_cap", "--format=csv,noheader"], capture_output=True,
                    text=True).stdout.strip().splitlines()[:1] if gpu else []  # older drivers: not a field
cc = cc[0] if cc and cc[0].replace(".", "", 1).isdigit() else ""
if importlib.util.find_spec("gemm_lessons") is None:
    if not REPOSITORY:
        raise ModuleNotFoundError("gemm_lessons is not installed, and this notebook names no repository to install "
                                  "it from: in a clone of the course run  pip install -e .  then restart the kernel")
    major = int(driver.split(".")[0]) if driver.split(".")[0].isdigit() else 0
    # CUDA 13 needs driver 580+ and compute capability 7.5+ (it dropped Maxwell, Pascal and Volta)
    extra = ("[cu13]" if major >= 580 and not (cc and float(cc) < 7.5) else "[cu12]") if gpu_name else ""
    print(f"installing gemm-lessons{extra} from github.com/{REPOSITORY} ({BRANCH}) ...")
    subprocess.run([sys.executable, "-m", "pip", "install", "-q",
                    f"gemm-lessons{extra} @ git+https://github.com/{REPOSITORY}@{BRANCH}"], check=True)
capability = f"compute capability {cc}, " if cc else ""
print(f"GPU: {gpu_name} ({capability}driver {driver})" if gpu_name else
      "No GPU: the lessons run on numba's CUDA simulator, slowly (Colab: Runtime > Change runtime type > T4 GPU).")

# %% [markdown]
# # 00 · Setup and the roofline
#
# **Where we are.** The [primer](00a_primer.ipynb) launched a first kernel and toured the memory
# hierarchy. The series builds a single-precision matrix product (SGEMM) with `numba.cuda`, one
# idea per lesson, each measured against NVIDIA's cuBLAS. First we need the two numbers every
# kernel is judged against: how fast this GPU computes and how fast it moves data. Together they
# draw the *roofline*. Then we time cuBLAS, place it on the roofline, and ask what holds it there.
#
# **No GPU?** numba's CUDA simulator runs kernels as Python threads at small sizes: checks work,
# nothing is timed, and tables and plots show recorded GPU results, labelled with device and date.

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
# units (hardware, not threads; also [lanes](GLOSSARY.md#lane)): 128 on Hopper (NVIDIA's
# [throughput table](https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#arithmetic-instructions)
# gives the count per compute capability). Each finishes one fused multiply-add
# ([FMA](GLOSSARY.md#ffma), 2 FLOP) per clock:
#
# $$\text{peak} = \text{SMs} \times \text{FP32 units per SM} \times 2 \times \text{clock}$$
#
# The driver reports the SMs and the boost clock. DRAM's rate on paper comes the same way: HBM
# makes 2 transfers per clock (double data rate), each as wide as the memory bus.

# %%
dev = results.load().device if gl.SIMULATOR else gl.device_info()  # the simulator: the recorded GPU
print(f"{dev.name}: {dev.sm_count} SMs x {dev.fp32_lanes_per_sm} FP32 units x 2 FLOP x {dev.clock_mhz:,.0f} MHz"
      f" = {dev.peak_gflops / 1e3:.1f} TFLOPS peak FP32")
print(f"DRAM on paper: {dev.memory_bus_bits}-bit bus x 2 transfers per clock x {dev.memory_clock_mhz:,.0f} MHz"
      f" / 8 bits = {dev.memory_bandwidth_gbs:,.0f} GB/s")

# %% [markdown]
# ## Counting the work
#
# Each element of `C = alpha*A@B + beta*C` (A is MxK, B is KxN) is a dot product of length K:
# K multiplies and K-1 additions, plus three operations for alpha, beta and the sum: $(2K+2)MN$
# in all. For large K that is $2MNK$, the count every TFLOPS figure here uses, as cuBLAS
# benchmarks do.

# %%
# NBVAL_CHECK_OUTPUT
for M, N, K in [(1, 1, 3), (512, 256, 128), (4096, 4096, 4096)]:
    print(f"{M}x{N}x{K}: 2MNK = {counting.sgemm_flops(M, N, K):,}   "
          f"(2K+2)MN = {counting.sgemm_flops(M, N, K, alpha_beta=True):,}")

# %% [markdown]
# ### Exercise 00-flops
# Exactly how many floating-point operations does `C = A@B` take for M=300, N=200, K=100?
# Count every multiply and add (no alpha or beta). Is it 2MNK?

# %%
# NBVAL_CHECK_OUTPUT
### BEGIN SOLUTION: answer = None
M, N, K = 300, 200, 100
answer = (2 * K - 1) * M * N  # K multiplies and K-1 adds per element of C
### END SOLUTION
exercises.check("00-flops", answer)

# %% [markdown]
# ## Counting the bytes: arithmetic intensity
#
# A perfect kernel reads A and B from DRAM once and writes C once: $4(MK + KN + MN)$ bytes
# (beta = 0; otherwise reading C adds 4MN). FLOP (2MNK) per byte is the problem's
# **[arithmetic intensity](GLOSSARY.md#arithmetic-intensity)**. For SGEMM it grows with size:

# %%
# NBVAL_CHECK_OUTPUT
print(f"{'size':>6} {'GFLOP':>9} {'MB moved':>9} {'FLOP/byte':>10}")
for s in [256, 1024, 4096, 8192]:
    print(f"{s:>6} {counting.sgemm_flops(s, s, s) / 1e9:>9.2f} {counting.sgemm_min_bytes(s, s, s) / 1e6:>9.1f}"
          f" {counting.sgemm_intensity(s, s, s):>10.1f}")

# %% [markdown]
# ### Exercise 00-intensity
# What is the arithmetic intensity, 2MNK FLOP per byte, of an SGEMM with M = N = 4096, K = 512
# and beta = 0?

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
# The DRAM figure on paper is an upper bound; a kernel's rate must be measured. This kernel
# copies a matrix, 16 bytes per thread and row:

# %%
# source: gemm_lessons/kernels/device_copy.py  (the package runs this same code; a test keeps the two identical)
@cuda.jit
def copy_float4(src, dst):
    # each thread copies 4 neighbouring floats (16 bytes: one wide load, one wide store) of
    # each row it visits: row blockIdx.y, then every gridDim.y-th row after it.
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
# We time this copy of an 8192x8192 matrix (256 MiB read, 256 MiB written) and the driver's
# `cudaMemcpy`; bandwidth counts bytes read + written. [CUDA events](GLOSSARY.md#cuda-events),
# timestamps the GPU records, time many repeats after a warm-up; the table gives the median and
# the 10th-90th percentile range ([p10-p90](GLOSSARY.md#p10-p90)). A
# [host-bound](GLOSSARY.md#host-bound) row gives the host's pace, not the copy's (lab notes).

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
# arithmetic and B / bandwidth seconds of memory traffic. Each time is a **ceiling**, the
# shortest time one resource allows; the larger **binds**. So a kernel of intensity I = F / B
# runs at most at **[min(peak, bandwidth x I)](GLOSSARY.md#roofline)**. Drawn against I, that is
# the roofline: a slanted DRAM line, then a flat FP32 line; the binding ceiling is the *lower*
# line. The lines meet at the **[ridge point](GLOSSARY.md#ridge-point)**, peak / bandwidth: left
# of it a kernel is [memory-bound](GLOSSARY.md#compute-bound), right of it
# [compute-bound](GLOSSARY.md#compute-bound).

# %%
I_4096 = counting.sgemm_intensity(4096, 4096, 4096)
allowed = min(peak, ceiling * I_4096)
print(f"Ridge point: {peak / 1e3:.1f} TFLOPS / {ceiling / 1e3:.2f} TB/s = {peak / ceiling:.0f} FLOP per byte. "
      f"SGEMM at 4096^3 offers {I_4096:.0f}: DRAM alone would allow {ceiling * I_4096 / 1e3:,.0f} TFLOPS, "
      f"so the roofline allows {allowed / 1e3:.1f}, the FP32 peak.")
TICKS = (10, 20, 30, 40, 50, 60, 70)  # TFLOPS: a grid fine enough to read a point against the peak
plots.roofline(bw.record, points=[], yticks=TICKS,
               marks=[("SGEMM 4096^3, each value read once", I_4096)]);

# %% [markdown]
# ## More ceilings than two
#
# The roofline's two ceilings are two of the six in the [primer](00a_primer.ipynb)'s
# **[limiter model](GLOSSARY.md#limiter-model)**: one ceiling per GPU resource, the time the
# kernel would take if that resource were all that mattered. The other four:
# **instruction [issue](GLOSSARY.md#issue)** (an SM's four [schedulers](GLOSSARY.md#warp-scheduler)
# issue one warp-instruction each per cycle), **shared-memory [wavefronts](GLOSSARY.md#wavefront)**
# (one per SM per cycle), **[L2](GLOSSARY.md#l2) bandwidth**, and **DRAM [latency](GLOSSARY.md#latency)**
# (too few bytes in flight to keep DRAM busy, by [Little's law](GLOSSARY.md#littles-law)).
#
# Issue matters from the first kernel on: an SM's 128 FP32 units finish 4
# [warp-FFMAs](GLOSSARY.md#warp-fma) per cycle (128 / 32 threads), and its schedulers issue 4
# warp-instructions per cycle. So only a kernel that issues nothing but `FFMA` reaches the peak:
# each load, address computation or branch takes a slot an FFMA could have had.
#
# ## Predict
#
# cuBLAS computes `C = A@B` at 4096^3; the roofline allows it the full FP32 peak. What % of the
# peak will it reach, and which ceiling will stop it? Write both before running the next cells.

# %%
my_cublas_pct = None      # your prediction: % of the FP32 peak, a number from 0 to 100
my_cublas_ceiling = None  # which ceiling binds: "fp32", "issue", "shared", "l2", "dram" or "latency"

# %% [markdown]
# ## cuBLAS: the yardstick
#
# cuBLAS is column-major; our matrices are row-major. A row-major MxN matrix is, byte for byte,
# its column-major transpose, so `C = A@B` is the column-major product `C^T = B^T A^T`: one
# `cublasSgemm` call with A and B swapped, no transposes. The default math mode is true FP32, no
# [TF32](GLOSSARY.md#tf32). First the check against a float64 reference, on random non-square
# sizes, with alpha and beta.

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
cub_pct = 100 * cub.gflops / peak
print(f"cuBLAS at 4096^3: {cub.gflops / 1e3:.1f} TFLOPS, {cub_pct:.0f}% of the {peak / 1e3:.1f} TFLOPS FP32 peak.")
exercises.compare_prediction(my_cublas_pct, cub_pct, "cuBLAS at 4096^3, % of the FP32 peak", sweep.source)

# %% [markdown]
# On the roofline, at the ideal intensity:

# %%
plots.roofline(measure_step.merge(bw, sweep), yticks=TICKS,
               points=[(f"cuBLAS {cub.gflops / 1e3:.1f}", I_4096, cub.gflops)]);

# %% [markdown]
# ## Why: the limiter model
#
# DRAM is far from binding, yet cuBLAS stops short of the FP32 ceiling. The model for cuBLAS at
# 4096^3 takes its counts of instructions, wavefronts and bytes from one launch read by the
# [profiler](GLOSSARY.md#ncu). The first column names the [rung](GLOSSARY.md#rung), here the
# cuBLAS yardstick. The prediction is the binding ceiling stretched by the last
# [wave](GLOSSARY.md#wave) of blocks, which leaves some SMs idle. Latency has no column here: it
# binds only memory-bound kernels (lesson 09).

# %%
why = limiter_table.why(["cublas"], measured=sweep)
why

# %% [markdown]
# The model assumes the binding unit busy every cycle. It is not: warps stall at a barrier, on a
# load, or on an earlier instruction's result. So a measured time sits above the prediction, here
# and in every lesson.

# %%
r = why.row("cublas")
c = r.ceilings_ms
pct = lambda ms: 100 * c["fp32"] / ms  # % of the FP32 peak that a time of ms allows
dram_bytes = limiter_table.work("cublas").dram_bytes
min_bytes = counting.sgemm_min_bytes(4096, 4096, 4096)
print(f"FFMAs alone would take {c['fp32']:.2f} ms (100% of the peak). cuBLAS issues "
      f"{c['issue'] / c['fp32']:.2f} warp-instructions per warp-FFMA, which raises the issue ceiling to "
      f"{c['issue']:.2f} ms ({pct(c['issue']):.0f}%); the last wave stretches that to the prediction, "
      f"{r.predicted_ms:.2f} ms ({pct(r.predicted_ms):.0f}%); "
      + (f"stalls bring it to the measured {r.measured_ms:.2f} ms ({pct(r.measured_ms):.0f}%)."
         if r.measured_ms > r.predicted_ms else
         f"the measured {r.measured_ms:.2f} ms ({pct(r.measured_ms):.0f}%) is within it."))
print(f"The profiler's busiest unit is {limiter_table.SHORT[r.busiest]}, busy {r.busiest_pct:.0f}% of the "
      f"cycles (the model assumes 100%). The DRAM column counts the bytes the profiler saw, {dram_bytes / 1e6:,.0f} MB, "
      f"{dram_bytes / min_bytes:.1f} times the {min_bytes / 1e6:,.0f} MB minimum (A and B are read more than "
      f"once); even so, its time is {100 * c['dram'] / c[r.binding]:.0f}% of the binding ceiling's.")
held, rated = why.clock_mhz, dev.clock_mhz
print(f"The model's run held the SM clock at {held:,.0f} MHz"
      + (", the clock the peak assumes: the gap to the peak is not the clock."
         if abs(held / rated - 1) < 0.005 else f", against the {rated:,.0f} MHz the peak assumes."))
print("You named no ceiling yet." if my_cublas_ceiling is None else
      f"You named {my_cublas_ceiling!r}; the model's binding ceiling is {r.binding!r}"
      + (", and the profiler agrees." if r.agrees else f", the profiler's busiest unit {r.busiest!r}."))

# %% [markdown]
# ## Takeaway
#
# * Peak FP32 = SMs x FP32 units x 2 x clock; the DRAM ceiling is a measured copy, not a data
#   sheet.
# * SGEMM does 2MNK FLOP on at least 4(MK + KN + MN) bytes: 683 FLOP per byte at 4096^3, far
#   right of the ridge point, so DRAM bandwidth need not limit it.
# * A ceiling is the shortest time one resource allows; the largest binds (on the roofline, the
#   lower line). The limiter model adds issue, shared-memory wavefronts, L2 and latency to the
#   roofline's FP32 and DRAM.
# * An SM issues as many warp-instructions per cycle as its FP32 units finish warp-FFMAs, so the
#   peak needs every issue slot to be an FFMA: cuBLAS at 4096^3 is issue-bound.
# * Every later kernel is measured as a % of cuBLAS in the same run.

# %% [markdown]
# ## Sources and further reading
#
# * Source articles re-told and tested here: [[1]](REFERENCES.md#seed-000), [[2]](REFERENCES.md#seed-001), [[5]](REFERENCES.md#seed-004)
#   (origins and coverage: [REFERENCES.md](REFERENCES.md#source-articles)).
# * Read next: [REFERENCES.md, lesson 00](REFERENCES.md#lesson-00), among them the roofline paper.
# * Terms: the [glossary](GLOSSARY.md) and the [primer](00a_primer.ipynb).

# %% [markdown]
# ## Lab notes
#
# * **Two runs on the simulator.** There the tables show the H200's recorded bench run and the
#   model's table its limiter run (`results/limiter-nvidia-h200.json`), made on different days:
#   cuBLAS's time in the model's table is the limiter run's (starred). On an H200 the model's
#   table takes this notebook's own cuBLAS time at 4096^3. The model table's heading names its GPU.
# * **The cuBLAS call.** `gemm_lessons/measure/cublas.py` calls `cublasSgemm` through
#   `nvmath-python`, on the pointers of numba device arrays.
# * **Host time against GPU time** for the two copies. A copy would be marked
#   [host-bound](GLOSSARY.md#host-bound) if issuing a call took the host nearly as long as
#   running it took the GPU:

# %%
for row in bw.rows:
    print(f"{row.kernel}: {row.host_issue_ms * 1e3:,.0f} µs to issue a call, {row.median_ms * 1e3:,.0f} µs on the "
          f"GPU, {row.gbs:,.0f} GB/s" + (" (host-bound)" if row.host_bound else ""))
