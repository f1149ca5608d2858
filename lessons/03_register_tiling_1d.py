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
# # 03 · 1-D register tiling: several results per thread
#
# **Where we are.** Lesson 02's `smem_tile` (32x32 tiles) is bound by shared-memory
# [wavefronts](GLOSSARY.md#wavefront): per [warp-FMA](GLOSSARY.md#warp-fma), one for `sB` and half
# of one for `sA` (the next cell reads them from the course's profiled H200
# [limiter run](GLOSSARY.md#limiter-run)). This lesson cuts that count.

# %%
import gemm_lessons as gl  # first: it chooses the GPU, or numba's CUDA simulator when there is none
from gemm_lessons.model import counting
from gemm_lessons.teaching import exercises, figures, limiter_table, measure_step, plots
from gemm_lessons.instruments import compiler_facts, shared_tracer
from gemm_lessons.kernels import ladder
from gemm_lessons.records import results
import functools
import numpy as np
from numba import cuda, float32
# %matplotlib inline
print(gl.banner())
UNIT = {"fp32": "the FP32 lanes", "issue": "instruction issue", "shared": "shared-memory wavefronts",
        "l2": "L2 bandwidth", "dram": "DRAM bandwidth", "latency": "DRAM latency"}  # the model's ceilings

# %%
before = limiter_table.why(["smem_tile"]).row("smem_tile")
print(f"smem_tile at 4096^3: {before.measured_ms:.1f} ms, bound by {UNIT[before.binding]}: "
      f"{limiter_table.per_warp_fma('smem_tile')['shared']:.2f} wavefronts per warp-FMA, "
      f"shared memory {before.utilization_pct['shared']:.0f}% busy.")

# %% [markdown]
# ## Idea: each thread computes a column of TM results
#
# Give each thread a column of TM elements of C. At each k it reads **one** value of `sB` into a
# [register](GLOSSARY.md#register) and uses it against TM values of `sA`. All lanes of a warp read
# each `sA` value at the same address (a [broadcast](GLOSSARY.md#broadcast)): one wavefront. A
# block of 1,024 threads x 16 results covers a 128x128 tile of C, which also cuts global loads
# 4-fold against 32x32 tiles (lesson 02's formula); they did not bind, though.

# %%
figures.register_column(TM=16);

# %% [markdown]
# ## Predict
#
# Per [k-step](GLOSSARY.md#k-step) a warp makes one `sB` load (32 neighbouring words: one
# wavefront) and TM `sA` loads (one wavefront each) for TM warp-FMAs: $(1 + TM)/TM$ wavefronts
# per warp-FMA, plus a little for staging. In lesson 02 the compiler merged four k-steps' `sA`
# reads into one `LDS.128` (half a wavefront each). Here a thread's values at one k lie BK words
# apart (`sA[t_row*TM + i, k]`) and `reg1d`'s k loop is not unrolled, so nothing merges: each read
# costs a whole wavefront. The gain is all `sB`'s: 1 wavefront per warp-FMA becomes 1/TM. Lesson 05
# gets the merging back.
#
# **How many times faster will `reg1d` (a 128x128 tile, TM = 16) run than `smem_tile` at
# 4096^3?** Write it in the next cell. The model also covers `reg1d_64x64` (a 64x64 tile, 512
# threads, TM = 8: kernel 4 of [Boehm's worklog](https://siboehm.com/articles/22/CUDA-MMM)):
# watch which unit binds it.

# %%
my_speedup = None  # your prediction: replace None with a number (for example 2.5)

# %% [markdown]
# The model's answer: the [bank tracer](GLOSSARY.md#bank-tracer) counts the wavefronts in one
# block of each kernel.

# %%
# NBVAL_CHECK_OUTPUT
wavefronts = {}
for rung, (BM, BN, K, threads) in {"smem_tile": (32, 32, 64, 1024), "reg1d": (128, 128, 16, 1024),
                                   "reg1d_64x64": (64, 64, 16, 512)}.items():
    trace = shared_tracer.trace_rung(rung, (BM, BN, K), merge=("ld",))  # merge: as the compiler does
    warp_fmas = BM * BN * K // 32  # one block: BM*BN*K FMAs, 32 per warp-FMA
    total = sum(trace.totals(op, rule="paired")["wavefronts"] for op in ("ld", "st"))
    wavefronts[rung] = total / warp_fmas
    print(f"{rung:12s} {BM}x{BN} tile, {threads:,} threads: {total:,} wavefronts for {warp_fmas:,} warp-FMAs "
          f"= {wavefronts[rung]:.3f} per warp-FMA")

# %% [markdown]
# The [limiter model](GLOSSARY.md#limiter-model) turns counts into SM cycles per warp-FMA
# (instructions/4, wavefronts/1, 1/4 for FP32); the largest binds. Instruction counts are the
# profiler's on the H200; the [limiter run](GLOSSARY.md#limiter-run) lacks `reg1d_64x64`, so its
# count comes from a separate profile (`experiments/reg1d_64x64`).

# %%
machine = limiter_table.machine()
probe = {k["kernel"]: k for k in results.experiment_record("reg1d_64x64", device="NVIDIA H200")["kernels"]}
instructions = {"smem_tile": limiter_table.per_warp_fma("smem_tile")["issue"],
                "reg1d": limiter_table.per_warp_fma("reg1d")["issue"],
                "reg1d_64x64": probe["reg1d_64x64"]["per_warp_fma"]["instructions"]}
cycles = {}
print(f"{'SM cycles per warp-FMA':24s} {'issue':>6s} {'shared':>7s} {'FP32':>5s}")
for rung in instructions:
    cycles[rung] = {"issue": instructions[rung] / machine.issue_per_sm_cycle,
                    "shared": wavefronts[rung] / machine.shared_wavefronts_per_sm_cycle,
                    "fp32": 32 / machine.fp32_lanes_per_sm}
    print(f"{rung:24s} {cycles[rung]['issue']:6.2f} {cycles[rung]['shared']:7.2f} {cycles[rung]['fp32']:5.2f}")
slowest = {rung: max(c.items(), key=lambda kv: kv[1]) for rung, c in cycles.items()}
for rung in ("reg1d", "reg1d_64x64"):
    unit, c = slowest[rung]
    print(f"The model: {rung} {slowest['smem_tile'][1] / c:.2f} times as fast as smem_tile ({c:.2f} cycles of "
          f"{UNIT[unit]} per warp-FMA against {slowest['smem_tile'][1]:.2f} of {UNIT[slowest['smem_tile'][0]]}).")

# %% [markdown]
# ## The kernel
#
# `acc = cuda.local.array(TM, float32)` looks like an array in memory, but once the
# `for i in range(TM)` loops are [unrolled](GLOSSARY.md#unrolling) every index is a constant, so the
# compiler keeps it in registers. Indexed by a run-time value, it would move to slow
# [local memory](GLOSSARY.md#local-memory).
#
# Each thread stages one value of each tile, so the factory requires `BM*BN/TM == BM*BK == BK*BN`.

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


# %% [markdown]
# ## Check
#
# Both tile shapes against a float64 reference, then the compiler facts: registers per thread,
# local bytes (0: the accumulators stayed in registers), the
# [blocks per SM](GLOSSARY.md#blocks-per-sm) they allow, and the shared loads by width. The `FFMA`
# counts include the write-back's, one per result; `reg1d`'s 17 `LDS` are one k-step's.

# %%
from gemm_lessons.kernels.sgemm import reg1d, smem_tile

reg1d_128 = make_sgemm_reg1d()                         # 128x128x8, 16 results per thread
reg1d_64 = make_sgemm_reg1d(BM=64, BN=64, BK=8, TM=8)  # 64x64x8, 8 results per thread
gl.check_all(functools.partial(reg1d.sgemm, kernel=reg1d_128), name="reg1d 128x128")

# %%
check64 = gl.check_all(functools.partial(reg1d.sgemm, kernel=reg1d_64), name="reg1d 64x64")
check64 if not check64 else print(f"reg1d 64x64: the same {len(check64)} shapes, all pass.")

# %%
threads = {"smem_tile": 32 * 32, "reg1d": 128 * 128 // 16, "reg1d_64x64": 64 * 64 // 8}
facts = compiler_facts.compiler_facts({"smem_tile": smem_tile.kernel_for(32), "reg1d": reg1d_128,
                                       "reg1d_64x64": reg1d_64}, threads=threads)
facts

# %%
blocks_per_sm = {name: compiler_facts.blocks_per_sm(f["registers"], f["shared_bytes"], threads[name])[0]
                 for name, f in facts.facts.items()}
r = facts["reg1d"]
print(f"reg1d: {r['registers']} registers x {threads['reg1d']:,} threads = {r['registers'] * threads['reg1d']:,}, "
      f"the whole register file: {blocks_per_sm['reg1d']} block per SM. Its shared loads: {r['sass'].get('LDS', 0)} "
      f"LDS and {r['sass'].get('LDS.128', 0)} LDS.128 (smem_tile: {facts['smem_tile']['sass'].get('LDS.128', 0)} "
      f"LDS.128): no sA read is merged.")

# %% [markdown]
# ## Measure
#
# Both tile shapes, `smem_tile` and cuBLAS, in one run at 4096^3.

# %%
table = measure_step.compare({
    "reg1d": functools.partial(reg1d.sgemm, kernel=reg1d_128),
    "reg1d_64x64": functools.partial(reg1d.sgemm, kernel=reg1d_64),
    "smem_tile": ladder.SGEMM["smem_tile"],
}, size=(4096, 4096, 4096))
table

# %%
print(f"reg1d vs smem_tile: {table.speedup('reg1d', 'smem_tile'):.2f}x; "
      f"reg1d_64x64 vs smem_tile: {table.speedup('reg1d_64x64', 'smem_tile'):.2f}x.")

# %%
exercises.compare_prediction(my_speedup, table.speedup("reg1d", "smem_tile"), "reg1d vs smem_tile at 4096^3 (times faster)",
                             table.source)

# %% [markdown]
# ## Why
#
# The model's table for the rungs:

# %%
why = limiter_table.why(["smem_tile", "reg1d", "cublas"], measured=table)
why

# %%
s, r, v = why.row("smem_tile"), why.row("reg1d"), probe["reg1d_64x64"]
sms = machine.sm_count
waves = 1024 / (sms * blocks_per_sm["reg1d"])  # 4096^3 / (128 x 128 tiles) = 1,024 blocks
print(f"reg1d is bound by {UNIT[r.binding]}; the profiler's busiest unit: {UNIT[r.busiest]}, {r.busiest_pct:.0f}% "
      f"busy. At {blocks_per_sm['reg1d']} block per SM its 1,024 blocks run in {waves:.2f} waves on {sms} SMs; "
      f"the last, partly filled one stretches the time by {r.tail:.2f}. With that, the model predicted it "
      f"{s.predicted_ms / r.predicted_ms:.2f}x as fast as smem_tile; it ran {s.measured_ms / r.measured_ms:.2f}x as "
      f"fast. Its issue ceiling ({r.ceilings_ms['issue']:.3g} ms) is "
      f"{'close behind' if r.ceilings_ms['issue'] > 0.8 * r.ceilings_ms[r.binding] else 'below'} "
      f"the binding one ({r.ceilings_ms[r.binding]:.3g} ms).")
print(f"reg1d_64x64 is bound by {UNIT[v['binding']]}; the profiler's busiest unit: {UNIT[v['profiler_busiest']]}, "
      f"{v['profiler_utilization_pct'][v['profiler_busiest']]:.0f}% busy. The model predicted it "
      f"{s.predicted_ms / v['predicted_ms']:.2f}x as fast as smem_tile (with the last wave's stretch; "
      f"{slowest['smem_tile'][1] / slowest['reg1d_64x64'][1]:.2f}x before the measurement, without it); it ran "
      f"{table.speedup('reg1d_64x64', 'smem_tile'):.2f}x as fast.")

# %% [markdown]
# Both shapes cut the wavefronts about equally, but `reg1d_64x64` issues far more instructions per
# warp-FMA. Each slice carries work that is not an FMA (staging with bounds checks, index
# arithmetic, barriers, the k loop, not unrolled in `reg1d`); with 8 results per thread it is
# shared among BK x 8 FMAs instead of BK x 16. An estimate from `reg1d`'s counts:

# %%
BK = 8
loop = {name: 2 + 1 / tm for name, tm in (("reg1d", 16), ("reg1d_64x64", 8))}  # per FMA: 1 FFMA, 1 sA LDS, 1/TM sB LDS
per_slice = (instructions["reg1d"] - loop["reg1d"]) * BK * 16  # reg1d's other instructions per slice, per warp
estimate = loop["reg1d_64x64"] + per_slice / (BK * 8)
print(f"reg1d: {loop['reg1d']:.2f} instructions per warp-FMA in the k loop, {instructions['reg1d']:.1f} in all: "
      f"about {per_slice:.0f} other instructions per slice. Shared by {BK * 8} FMAs instead of {BK * 16}, they give "
      f"reg1d_64x64 {estimate:.1f} instructions per warp-FMA; the profiler counted {instructions['reg1d_64x64']:.1f}. "
      f"Its issue ceiling lies above smem_tile's shared one: the model puts it no faster than lesson 02.")

# %% [markdown]
# ## Exercise 03-kernel: a row of results per thread
# The kernel above gives each thread a *column* of TM results, reusing one value of `sB`. Turn it
# around: each thread computes a *row* of TN = 4 neighbouring results,
# `C[row0 + t_row, col0 + t_col + j]` for j = 0 .. TN-1, in a 32 x 32 tile with BK = 8 and
# 256 threads. Staging and write-back are given; write the products of one slice.
#
# The check compares your kernel with the float64 reference, then, on the simulator, counts its
# global reads (reading A or B from global memory in the loop fails) and traces its shared-memory
# loads: at most 1 + TN = 5 per k-step for its TN FMAs. It counts loads as your Python writes
# them: a value re-read inside the `j` loop counts each time.

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
# ## Takeaway
#
# * One `sB` value in a register, reused TM times, cuts wavefronts per warp-FMA from about 1.5 to
#   $(1 + TM)/TM$, though the unmerged `sA` reads rise from 1/2 to 1.
# * Local arrays indexed by constants live in registers; the compiler facts confirm it.
# * The limiter model predicts the speedup from counts per warp-FMA; only the binding count pays
#   to cut.
# * With fewer results per thread (TM = 8), each slice's overhead falls on fewer FMAs: issue
#   binds, and the speedup is gone.
# * Every FMA still needs one `sA` read. Lesson 04 reuses values in *both* directions.

# %% [markdown]
# ## Sources and further reading
#
# * Source article: [[3]](REFERENCES.md#seed-002) (origin and contents:
#   [REFERENCES.md](REFERENCES.md#source-articles)).
# * What to read next: [REFERENCES.md, lesson 03](REFERENCES.md#lessons-02-04).
# * Terms: the [glossary](GLOSSARY.md) and the [primer](00a_primer.ipynb).

# %% [markdown]
# ## Lab notes
#
# **Stalls.** The separate profile also recorded each kernel's main warp stall reasons (cycles a
# warp waited per instruction issued). They say what the model says: `reg1d_64x64` waits mostly as
# `not_selected` (ready, while the scheduler issues another warp), `smem_tile` as `mio_throttle`
# (the shared-memory pipe full). `reg1d` too waits more as `not_selected` than as `mio_throttle`:
# its issue ceiling is close behind its binding shared one. (The profile's counts for `smem_tile`
# and `reg1d` match the limiter run's.)
#
# **The worklog's kernel 4.** The worklog reports its kernel 4 about 2.2 times as fast as its
# kernel 3 (32x32 shared tiles). Its CUDA C++ has no bounds checks and walks pointers; numba's code
# for each slice is heavier (the per-slice work in the Why section), and at 8 results per thread
# that makes instruction issue bind.
#
# **Model and measurement.** As in lesson 02, measured times exceed the model's: it lets the
# binding unit work every cycle, while warps also wait at barriers and for global loads. By how
# much differs: the profiler found `reg1d_64x64`'s issue 83% busy but `smem_tile`'s shared memory
# 74%, so `reg1d_64x64` ran 0.98x as fast as `smem_tile` where the model said 0.88x.
#
# **The 64x64 instructions.** The estimate in the Why section, from `reg1d`'s per-slice work,
# leaves part of `reg1d_64x64`'s count unexplained: its code differs in more than the share (it
# holds 18 LDS, two k-steps' worth, where `reg1d`'s holds one k-step's 17), and the compiler facts
# here do not split the instructions inside and outside the loop.

# %%
for name, k in probe.items():
    top = list(k["stalls_per_issue"].items())[:3]
    print(f"{name:12s} stalls: " + ", ".join(f"{reason} {cycles_:.1f}" for reason, cycles_ in top))

# %% [markdown]
# **Across sizes.** The recorded benchmark, an earlier run on an H100 (the cell prints which; the
# rest of this lesson ran on an H200, with as many SMs), timed every rung at four square sizes in
# one run; this rung, the one before it and cuBLAS. At 1024^3 `reg1d` launches only 64 blocks of
# 128x128 for 132 SMs: at most 64 SMs work, and there `reg1d` is slower than `smem_tile`.

# %%
plots.rung_versus_size("reg1d");

# %%
bench = results.load()
print(f"Recorded on {results.label(bench)}:")
tflops = {(name, n): rows[0].gflops / 1e3 for name in ("reg1d", "smem_tile") for n in (1024, 2048, 4096, 8192)
          if (rows := results.sgemm_rows(bench, name, (n, n, n)))}
sms = bench.device.sm_count
for n in (1024, 2048, 4096, 8192):
    blocks = (n // 128) ** 2  # reg1d: one block of 1,024 threads per 128x128 tile, one block per SM
    print(f"{n}^3: reg1d {tflops[('reg1d', n)]:.2f} TFLOPS, smem_tile {tflops[('smem_tile', n)]:.2f}; "
          f"reg1d launches {blocks:,} blocks for {sms} SMs"
          + (f": at most {blocks} SMs work, and the model stretches its time by {sms / blocks:.2f}" if blocks < sms else ""))
