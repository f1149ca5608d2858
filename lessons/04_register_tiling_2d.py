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
# # 04 · 2-D register tiling: the outer product
#
# **Where we are.** In lesson 03's `reg1d`, 17 shared-memory loads (one of B, 16 of A) feed a
# thread's 16 FMAs. What that costs, by the [limiter model](GLOSSARY.md#limiter-model) on the
# [limiter run](GLOSSARY.md#limiter-run):

# %%
import gemm_lessons as gl  # first: it chooses the GPU, or numba's CUDA simulator when there is none
from gemm_lessons.model import counting
from gemm_lessons.model.limiter import WHAT
from gemm_lessons.teaching import exercises, figures, limiter_table, measure_step
from gemm_lessons.instruments import compiler_facts
from gemm_lessons.kernels import ladder
from gemm_lessons.records import results
from gemm_lessons.core.jit import jit  # cuda.jit that also takes GPU-only options (max_registers) on the simulator
import functools
import numpy as np
from numba import cuda, float32
# %matplotlib inline
print(gl.banner())

prev = limiter_table.why(["reg1d"])  # the limiter run: every rung timed and profiled on one GPU
r = prev.row("reg1d")
print(f"reg1d at 4096^3 on the {prev.device}: {r.measured_ms:.1f} ms, {2 * 4096**3 / r.measured_ms / 1e9:.1f} TFLOPS. "
      f"Binding ceiling: {WHAT[r.binding]}, {r.ceilings_ms[r.binding]:.1f} ms on its own.")

# %% [markdown]
# ## Idea: an 8x8 patch of C per thread
#
# Give each thread a TM x TN patch of C. At each [k-step](GLOSSARY.md#k-step) it loads TM values
# of the A slice (a column) and TN of the B slice (a row) into registers and forms all their
# products: an [outer product](GLOSSARY.md#outer-product), TM + TN loads for TM x TN FMAs.
# `reg2d`: a 128x128 tile of C per block, BK = 8, 8x8 results per thread, 256 threads.

# %%
figures.register_block(BM=128, BN=128, BK=8, TM=8, TN=8);

# %% [markdown]
# An x-by-y patch does 2xy FLOPs per k-step from x + y loaded values, a
# [compute-to-memory ratio](GLOSSARY.md#compute-to-memory-ratio) of
# $$\frac{2xy}{x + y} = \frac{2}{1/x + 1/y}\ \text{FLOP per value loaded.}$$
# For a fixed number of accumulators it is largest when the patch is square; a bigger patch
# raises it too.

# %%
# NBVAL_CHECK_OUTPUT
for x, y in [(1, 1), (16, 1), (4, 4), (16, 4), (8, 8)]:
    print(f"{x:>2} x {y:<2}: {x * y:>3} FMAs, {x + y:>2} loads, ratio {counting.compute_to_memory_ratio(x, y):.2f}")


# %% [markdown]
# ## Predict
#
# `reg1d` is the 16 x 1 row above, `reg2d` the 8 x 8: 4.25 times fewer shared loads per FMA.
# Is it 4.25 times faster? The limiter model divides each unit's work per
# [warp-FFMA](GLOSSARY.md#warp-fma) (one [`FFMA`](GLOSSARY.md#ffma), fused multiply-add, for a
# whole warp) by its rate per SM cycle:
#
# * FP32 lanes: 4 warp-FFMAs;
# * [issue](GLOSSARY.md#issue): 4 warp-instructions (one per
#   [warp scheduler](GLOSSARY.md#warp-scheduler)), be it an `FFMA`, a shared load
#   ([`LDS`](GLOSSARY.md#lds)) or an address add;
# * shared memory: 1 [wavefront](GLOSSARY.md#wavefront).
#
# The largest *binds*, setting the time. The profiler's counts:

# %%
work = {rung: limiter_table.counts(rung) for rung in ("reg1d", "reg2d")}  # one launch at 4096^3 each
for rung, n in work.items():
    print(f"{rung}: {n['warp_instructions'] / n['warp_ffma']:.2f} warp-instructions and "
          f"{n['shared_wavefronts'] / n['warp_ffma']:.2f} shared wavefronts per warp-FFMA")
print(f"(a k-step of reg2d holds 64 FFMA and 16 LDS, {80 / 64:.2f} instructions per FFMA; the Why section "
      "finds the others)")

# %% [markdown]
# (`reg2d`'s wavefronts: one per load, no [bank conflicts](GLOSSARY.md#bank-conflict), plus
# the stores that stage the slices.) **Your prediction:** find each rung's binding unit (cycles
# per warp-FFMA) and predict `reg2d`'s speedup over `reg1d` at 4096^3.

# %%
my_speedup = None  # your prediction: replace None with a number (for example 2.5)

# %% [markdown]
# The model's own answer:

# %%
binding = {}
for rung, n in work.items():
    cycles = {"FP32": 1 / n["ffma_per_cycle"],
              "issue": n["warp_instructions"] / n["warp_ffma"] / n["issue_per_cycle"],
              "shared": n["shared_wavefronts"] / n["warp_ffma"] / n["wavefronts_per_cycle"]}
    binding[rung] = max(cycles.items(), key=lambda kv: kv[1])
    print(f"{rung}: cycles per warp-FFMA " + ", ".join(f"{k} {v:.2f}" for k, v in cycles.items())
          + f" -> {binding[rung][0]} binds")
model_speedup = binding["reg1d"][1] / binding["reg2d"][1]
fewer = {k: work["reg1d"][k] / work["reg2d"][k] for k in ("shared_wavefronts", "warp_instructions")}
print(f"Model: reg2d {model_speedup:.2f}x as fast as reg1d. Wavefronts fall about {fewer['shared_wavefronts']:.0f}x, "
      f"so shared memory stops binding; instructions fall only {fewer['warp_instructions']:.2f}x, and issue binds.")

# %% [markdown]
# ## The kernel
#
# Per slice, the threads stage A and B in shared memory, then run 8 k-steps of the outer
# product. Two choices matter:
#
# * **Registers.** 64 accumulators, 16 operands and the addresses take many
#   [registers](GLOSSARY.md#register). `MAX_REGISTERS=128`
#   ([max_registers](GLOSSARY.md#max-registers), CUDA C++'s `__maxnreg__`) lets two blocks share
#   the SM's 65,536: 2 x 256 x 128. `reg2d_uncapped` drops the cap.
# * **Where a thread's results lie.** With `SPREAD`, a thread's 8 rows lie 16 apart, as do its 8
#   columns (not side by side as in the figure), so a warp reads neighbouring shared-memory words
#   without bank conflicts. `reg2d_contiguous` keeps them side by side (Lab notes;
#   lesson 06 explains bank conflicts).

# %%
# source: gemm_lessons/kernels/sgemm/reg2d.py  (the package runs this same code; a test keeps the two identical)
def make_sgemm_reg2d(BM=128, BN=128, BK=8, TM=8, TN=8, SPREAD=True, MAX_REGISTERS=128):
    """BM x BN tile of C per block, TM x TN results per thread.  With SPREAD, a thread's
    TM rows are BM//TM apart and its TN columns BN//TN apart (instead of side by side), so
    that the threads of a warp read neighbouring shared-memory words (lesson 06 says why).
    MAX_REGISTERS caps registers per thread so that two 256-thread blocks fit on an SM."""
    THREADS = (BM // TM) * (BN // TN)
    A_LOADS = BM * BK // THREADS  # values of the A tile each thread stages
    B_LOADS = BK * BN // THREADS
    ACC = TM * TN  # array shapes must be compile-time constants: computed here
    ROW_STEP = BM // TM if SPREAD else 1
    COL_STEP = BN // TN if SPREAD else 1
    ROW_SPAN = 1 if SPREAD else TM
    COL_SPAN = 1 if SPREAD else TN

    @jit(max_registers=MAX_REGISTERS)  # cuda.jit; the cap is dropped on the simulator
    def sgemm_reg2d(A, B, C, alpha, beta):
        sA = cuda.shared.array((BM, BK), float32)
        sB = cuda.shared.array((BK, BN), float32)
        acc = cuda.local.array(ACC, float32)
        a_reg = cuda.local.array(TM, float32)
        b_reg = cuda.local.array(TN, float32)
        for i in range(ACC):
            acc[i] = 0.0
        tid = cuda.threadIdx.x
        row0 = cuda.blockIdx.y * BM
        col0 = cuda.blockIdx.x * BN
        M, K = A.shape
        N = B.shape[1]
        # this thread owns rows t_row + i*ROW_STEP and columns t_col + j*COL_STEP of the tile
        t_row = (tid // (BN // TN)) * ROW_SPAN
        t_col = (tid % (BN // TN)) * COL_SPAN
        for k0 in range(0, K, BK):
            for l in range(A_LOADS):  # consecutive threads stage consecutive values
                idx = tid + l * THREADS
                r, c = idx // BK, idx % BK
                sA[r, c] = A[row0 + r, k0 + c] if row0 + r < M and k0 + c < K else np.float32(0.0)
            for l in range(B_LOADS):
                idx = tid + l * THREADS
                r, c = idx // BN, idx % BN
                sB[r, c] = B[k0 + r, col0 + c] if k0 + r < K and col0 + c < N else np.float32(0.0)
            cuda.syncthreads()
            for k in range(BK):
                for i in range(TM):  # a column of the A tile and a row of the B tile ...
                    a_reg[i] = sA[t_row + i * ROW_STEP, k]
                for j in range(TN):
                    b_reg[j] = sB[k, t_col + j * COL_STEP]
                for i in range(TM):  # ... make TM*TN products from TM+TN shared reads
                    for j in range(TN):
                        acc[i * TN + j] += a_reg[i] * b_reg[j]
            cuda.syncthreads()
        for i in range(TM):
            row = row0 + t_row + i * ROW_STEP
            for j in range(TN):
                col = col0 + t_col + j * COL_STEP
                if row < M and col < N:
                    if beta == 0:
                        C[row, col] = alpha * acc[i * TN + j]
                    else:
                        C[row, col] = alpha * acc[i * TN + j] + beta * C[row, col]

    sgemm_reg2d.tile = (BM, BN, BK, TM, TN)
    return sgemm_reg2d


# %%
from gemm_lessons.kernels.sgemm import reg2d

reg2d_default = make_sgemm_reg2d()                          # spread, 128 registers
reg2d_uncapped = make_sgemm_reg2d(MAX_REGISTERS=None)        # spread, registers left to the compiler
reg2d_contiguous = make_sgemm_reg2d(SPREAD=False)           # each thread's 8x8 side by side (Lab notes)
gl.check_all(functools.partial(reg2d.sgemm, kernel=reg2d_default), name="reg2d")

# %% [markdown]
# ## What the compiler made of it
#
# The [compiler facts](GLOSSARY.md#compiler-facts) from the [SASS](GLOSSARY.md#sass) (the GPU's
# machine code), with [spills](GLOSSARY.md#register-spill),
# [blocks per SM](GLOSSARY.md#blocks-per-sm) and the [main loop](GLOSSARY.md#k-step) split into
# the k-step loop (*inner loop*, 8 times per slice) and the rest (*loop around it*). Writing C
# back (`alpha * acc + beta * C`) holds 64 of the 128 `FFMA`, 64 of the 72 `LDG.E` (8 stage a
# slice) and all `STG.E`, 64 per branch of `beta == 0`.

# %%
kernels = {"reg2d": reg2d_default, "reg2d_uncapped": reg2d_uncapped, "reg1d": ladder.SGEMM["reg1d"].kernel}
threads = {"reg2d": 256, "reg2d_uncapped": 256, "reg1d": 1024}
h200 = results.read(results.path_for("experiment", "NVIDIA H200", "lesson04"))  # the simulator shows this H200 run
facts = compiler_facts.compiler_facts(kernels, threads=threads, record=h200, loops=True)
facts

# %%
warps = {name: compiler_facts.blocks_per_sm(f["registers"], f.get("shared_bytes", 0), threads[name])[0]
         * threads[name] // 32 for name, f in facts.facts.items()}
spills = [name for name, f in facts.facts.items() if f.get("local_bytes")]
print(f"Left alone, the compiler gives reg2d_uncapped {facts['reg2d_uncapped']['registers']} registers per thread: "
      f"{warps['reg2d_uncapped']} resident warps per SM, against {warps['reg2d']} for reg2d and {warps['reg1d']} "
      "for reg1d. " + (f"Spilled to local memory: {', '.join(spills)}." if spills
                       else "Local memory: 0 bytes in all three, no spill."))

# %% [markdown]
# ## Measure

# %%
table = measure_step.compare({
    "reg2d": functools.partial(reg2d.sgemm, kernel=reg2d_default),
    "reg2d_uncapped": functools.partial(reg2d.sgemm, kernel=reg2d_uncapped),
    "reg2d_contiguous": functools.partial(reg2d.sgemm, kernel=reg2d_contiguous),
    "reg1d": ladder.SGEMM["reg1d"],
}, size=(4096, 4096, 4096), record=h200)
table

# %%
exercises.compare_prediction(my_speedup, table.speedup("reg2d", "reg1d"), "reg2d vs reg1d at 4096^3 (times faster)",
                             table.source)

# %% [markdown]
# ## Why: the limiter model
#
# The prediction is the binding ceiling stretched by the last [wave](GLOSSARY.md#wave) of blocks,
# which leaves SMs idle:

# %%
why = limiter_table.why(["reg1d", "reg2d", "cublas"], measured=table)
why

# %%
r1, r2, rc = (why.row(rung) for rung in ("reg1d", "reg2d", "cublas"))
short = limiter_table.SHORT
pred, meas = r1.predicted_ms / r2.predicted_ms, r1.measured_ms / r2.measured_ms
agree = [r.rung for r in (r1, r2) if r.agrees]
print(f"reg1d: {short[r1.binding]}-bound ({r1.ceilings_ms[r1.binding]:.1f} ms). The outer product cuts the shared "
      f"ceiling to {r2.ceilings_ms['shared']:.1f} ms, and {short[r2.binding]} binds: "
      f"{r2.ceilings_ms[r2.binding]:.2f} ms, x {r2.tail:.2f} for the last wave = {r2.predicted_ms:.2f} ms. "
      f"Predicted {pred:.2f}x, measured {meas:.2f}x" + ("" if r1.measured_here and r2.measured_here
                                                      else " (limiter run)")
      + ". The profiler's busiest unit is the binding one for " + (" and ".join(agree) if agree else "neither") + ".")
u1, u2 = r1.utilization_pct[r1.binding], r2.utilization_pct[r2.binding]
print(f"Measured/predicted: {r1.ratio:.2f} (reg1d), {r2.ratio:.2f} (reg2d). The model assumes the binding unit "
      f"busy every cycle; the profiler found it {u1:.0f}% and {u2:.0f}% busy. The other cycles are stalls: warps "
      f"waiting at barriers, for loads, for the previous FFMA's result. So {meas:.2f}x = {pred:.2f}x x "
      f"{r1.ratio:.2f}/{r2.ratio:.2f}" + (f": reg2d stalls more, with {warps['reg2d']} resident warps per SM to issue "
                                          f"from against reg1d's {warps['reg1d']}." if r2.ratio > r1.ratio else "."))

# %% [markdown]
# ### Where reg2d's instructions come from
#
# Per slice: the k-step loop 8 times, the loop around it once, 512 `FFMA`:

# %%
def per_ffma(loop, BK=8):
    """Instructions the main loop issues per FFMA: the k-step loop BK times, the loop around it once."""
    return (BK * loop["inner"] + loop["outer_rest"]) / (BK * loop["inner_FFMA"])


lp, n2, nc = facts["reg2d"]["loop"], limiter_table.counts("reg2d"), limiter_table.counts("cublas")
ipf_cublas = nc["warp_instructions"] / nc["warp_ffma"]
other = lp["inner"] - lp["inner_FFMA"] - lp["inner_LDS"]
f = 8 * lp["inner_FFMA"]  # FFMA per slice
print(f"A k-step: {lp['inner_FFMA']} FFMA, {lp['inner_LDS']} LDS and {other} other instructions; a slice adds "
      f"{lp['outer_rest']} around the k-step loop. Per FFMA: 1 + {8 * lp['inner_LDS'] / f:.2f} (LDS) + "
      f"{8 * other / f:.2f} (the k-step's integer arithmetic) + {lp['outer_rest'] / f:.2f} (around it) = {per_ffma(lp):.2f}; "
      f"the profiler counted {n2['warp_instructions'] / n2['warp_ffma']:.2f} (cuBLAS: {ipf_cublas:.2f}).")

# %% [markdown]
# The k-step's other instructions are integer arithmetic: the 16 shared addresses, recomputed
# every k-step, and the loop counter. The loop around it stages the slices, bounds-checking
# each value. Lesson 05 writes the loops out at compile time, so each address is a base plus a
# constant.
#
# ### The register cap
#
# The cap costs instructions (uncapped: 126 per k-step, not 155) but buys warps, which the
# model does not count.
# `reg2d_uncapped`'s issue ceiling, scaled by its own compiled loops:

# %%
ipf = {name: per_ffma(facts[name]["loop"]) for name in ("reg2d", "reg2d_uncapped")}
issue_un = r2.ceilings_ms["issue"] * ipf["reg2d_uncapped"] / ipf["reg2d"]
longer, w_cap, w_un = table.speedup("reg2d", "reg2d_uncapped"), warps["reg2d"], warps["reg2d_uncapped"]
print(f"reg2d_uncapped: {ipf['reg2d_uncapped']:.2f} instructions per FFMA against reg2d's {ipf['reg2d']:.2f}, an issue "
      f"ceiling of {issue_un:.1f} ms against {r2.ceilings_ms['issue']:.1f} ms. It took {longer:.2f}x as long as "
      f"reg2d, with {w_un} resident warps per SM against {w_cap}"
      + (": with fewer warps, a scheduler more often finds none ready while the others wait for global loads "
         "(Lab notes)." if longer > 1 and w_un < w_cap else "."))

# %% [markdown]
# ## Exercises
#
# ### 04-ratio
# The 8x8 patch does 8 FLOP per value loaded. Which square patch would do twice as many, and how
# many accumulators would a thread need for it (one register each, of at most 255 per thread)?
# Answer with a pair (side, accumulators).

# %%
# NBVAL_CHECK_OUTPUT
### BEGIN SOLUTION: answer = None
answer = (16, 16 * 16)
### END SOLUTION
exercises.check("04-ratio", answer)

# %% [markdown]
# ### 04-kernel: the outer product
# A small version of the kernel above: a 32 x 32 tile, BK = 8, 64 threads, each with 4 x 4
# results side by side in `acc[i, j]`. The staging is given; write the products of one
# [slice](GLOSSARY.md#k-step).
#
# The check compares your kernel with the float64 reference, counts its global reads and traces
# its shared-memory loads: at most TM + TN = 8 per k-step.

# %%
# NBVAL_CHECK_OUTPUT
def make_my_reg2d(BM=32, BN=32, BK=8, TM=4, TN=4):
    THREADS = (BM // TM) * (BN // TN)
    A_LOADS, B_LOADS = BM * BK // THREADS, BK * BN // THREADS  # values of each tile a thread stages

    @cuda.jit
    def my_reg2d(A, B, C, alpha, beta):
        sA = cuda.shared.array((BM, BK), float32)
        sB = cuda.shared.array((BK, BN), float32)
        acc = cuda.local.array((TM, TN), float32)
        a_reg = cuda.local.array(TM, float32)
        b_reg = cuda.local.array(TN, float32)
        for i in range(TM):
            for j in range(TN):
                acc[i, j] = 0.0
        tid = cuda.threadIdx.x
        row0, col0 = cuda.blockIdx.y * BM, cuda.blockIdx.x * BN
        M, K = A.shape
        N = B.shape[1]
        t_row = (tid // (BN // TN)) * TM  # this thread owns rows t_row .. t_row + TM - 1
        t_col = (tid % (BN // TN)) * TN  # and columns t_col .. t_col + TN - 1 of the tile
        for k0 in range(0, K, BK):
            for l in range(A_LOADS):
                idx = tid + l * THREADS
                r, c = idx // BK, idx % BK
                sA[r, c] = A[row0 + r, k0 + c] if row0 + r < M and k0 + c < K else np.float32(0.0)
            for l in range(B_LOADS):
                idx = tid + l * THREADS
                r, c = idx // BN, idx % BN
                sB[r, c] = B[k0 + r, col0 + c] if k0 + r < K and col0 + c < N else np.float32(0.0)
            cuda.syncthreads()
            ### BEGIN SOLUTION
            for k in range(BK):
                for i in range(TM):
                    a_reg[i] = sA[t_row + i, k]
                for j in range(TN):
                    b_reg[j] = sB[k, t_col + j]
                for i in range(TM):
                    for j in range(TN):
                        acc[i, j] += a_reg[i] * b_reg[j]
            ### END SOLUTION
            cuda.syncthreads()
        for i in range(TM):
            for j in range(TN):
                row, col = row0 + t_row + i, col0 + t_col + j
                if row < M and col < N:
                    C[row, col] = alpha * acc[i, j] + (beta * C[row, col] if beta != 0 else np.float32(0.0))

    my_reg2d.tile = (BM, BN, BK, TM, TN)  # the check's launch reads the tile shape from here
    return my_reg2d


exercises.check("04-kernel", make_my_reg2d())

# %% [markdown]
# ## Takeaway
#
# * The outer product reuses each loaded value in both directions: an 8x8 patch does 8 FLOP per
#   value loaded.
# * Four times fewer shared loads did not make it four times faster: issue took over, as the
#   model predicted.
# * Most of `reg2d`'s instructions are address arithmetic and staging; lesson 05 cuts them.
# * Registers per thread set how many warps an SM holds; fewer warps stall more than the model
#   predicts.

# %% [markdown]
# ## Sources and further reading
#
# * Source articles: [[1]](REFERENCES.md#seed-000), [[3]](REFERENCES.md#seed-002), [[5]](REFERENCES.md#seed-004)
#   (origins and contents: [REFERENCES.md](REFERENCES.md#source-articles)).
# * What to read next: [REFERENCES.md, lesson 04](REFERENCES.md#lessons-02-04).
# * Terms: the [glossary](GLOSSARY.md) and the [primer](00a_primer.ipynb).

# %% [markdown]
# ## Lab notes
#
# **Spread vs side by side.** The [bank tracer](GLOSSARY.md#bank-tracer) runs one block of each
# layout on the simulator (K = 8: 8 warps x 8 k-steps) and counts the wavefronts of its
# shared-memory loads. Side by side, the 16 threads along a block row read `sB` 8 words apart,
# in 4 of the 32 [banks](GLOSSARY.md#bank): each `sB` load is 4-way; a warp's two rows of
# threads read `sA` 64 words apart, in one bank: 2-way. Per k-step and warp, 8 x 2 + 8 x 4 = 48
# wavefronts against 16: three times `reg2d`'s.

# %%
# NBVAL_CHECK_OUTPUT
from gemm_lessons.instruments import shared_tracer
for name in ("reg2d", "reg2d_contiguous"):
    t = shared_tracer.trace_rung(name, (128, 128, 8), merge=False).totals("ld")
    print(f"{name:<17} loads: {t['instructions']} warp instructions, {t['wavefronts']} wavefronts "
          f"({t['wavefronts'] // 64} per k-step and warp), {t['conflicts']} from conflicts")

# %% [markdown]
# In its SASS the side-by-side kernel also spills: 8 values stored (`STL`) once before the main
# loop and loaded back (`LDL`) once per slice, while staging.

# %%
side = compiler_facts.compiler_facts({"reg2d_contiguous": reg2d_contiguous}, threads={"reg2d_contiguous": 256},
                                     record=h200, loops=True)
fc = side.facts["reg2d_contiguous"]
wf = {name: sum(shared_tracer.trace_rung(name, (128, 128, 8), merge=False).totals(op)["wavefronts"] for op in ("ld", "st"))
      for name in ("reg2d", "reg2d_contiguous")}
shared_c = r2.ceilings_ms["shared"] * wf["reg2d_contiguous"] / wf["reg2d"]
issue_c = r2.ceilings_ms["issue"] * per_ffma(fc["loop"]) / ipf["reg2d"]
per_slice = 8 * fc["loop"]["inner"] + fc["loop"]["outer_rest"]
print(f"reg2d_contiguous: {fc['registers']} registers and {fc['local_bytes']} bytes of local memory per thread "
      f"(LDL x {fc['sass'].get('LDL', 0)}, STL x {fc['sass'].get('STL', 0)}): the LDL are {fc['sass'].get('LDL', 0)} of "
      f"its {per_slice:,} instructions per slice. Scaled by its traced wavefronts (loads and stores) and compiled loops, its "
      f"shared ceiling is {shared_c:.1f} ms and its issue ceiling {issue_c:.1f} ms, against reg2d's binding "
      f"{r2.ceilings_ms[r2.binding]:.1f} ms ({short[r2.binding]}). It ran {table.speedup('reg2d_contiguous', 'reg2d'):.2f}x "
      f"as fast as reg2d.")
bind_c = "shared" if shared_c >= issue_c else "issue"
print("So at this rung the conflicts cost little: "
      + (f"issue binds reg2d, and the side-by-side kernel's binding ceiling ({bind_c}) is only "
         f"{max(shared_c, issue_c) / r2.ceilings_ms[r2.binding]:.2f}x reg2d's. " if r2.binding == "issue" else "")
      + "Lesson 05 starts from the side-by-side layout, because 16-byte loads need a thread's values to be "
        "neighbours; once it has cut the instructions, shared memory binds again, and lesson 06 removes the conflicts.")

# %% [markdown]
# **Wider loads.** Wider loads alone would not remove `reg2d`'s extra instructions: four 16-byte
# shared loads (`LDS.128`, lesson 05) instead of sixteen save 0.19 instructions per FFMA.
#
# **The register cap, through the profiler.** [Nsight Compute](GLOSSARY.md#ncu)'s counters of
# `reg2d` and `reg2d_uncapped`: achieved [occupancy](GLOSSARY.md#occupancy) (warps resident on
# average against the most an SM holds) and [stall reasons](GLOSSARY.md#stall-reasons).

# %%
prof04 = gl.profile({"reg2d": functools.partial(reg2d.sgemm, kernel=reg2d_default),
                     "reg2d_uncapped": functools.partial(reg2d.sgemm, kernel=reg2d_uncapped)},
                    size=(4096, 4096, 4096), lesson="04")
prof04

# %%
if all(prof04.counters.get(n) for n in ("reg2d", "reg2d_uncapped")):
    occ = {n: prof04.value(n, "occupancy") for n in ("reg2d", "reg2d_uncapped")}
    waits = {n: dict(prof04.top_stalls(n, 10)).get("long_scoreboard", 0) for n in ("reg2d", "reg2d_uncapped")}
    print(f"Achieved occupancy {occ['reg2d_uncapped']:.1f}% (uncapped) against {occ['reg2d']:.1f}%; warps waiting "
          f"on global memory (long scoreboard) {waits['reg2d_uncapped']:.0f}% of their cycles against "
          f"{waits['reg2d']:.0f}% ({prof04.source}).")
    c = {n: prof04.counters[n] for n in ("reg2d", "reg2d_uncapped")}
    if c["reg2d_uncapped"].get("launch__shared_mem_config_size"):
        print("The profiler names shared memory as a limit of reg2d_uncapped too because the driver set aside only "
              f"{c['reg2d_uncapped']['launch__shared_mem_config_size'] / 1024:.0f} KiB of each SM for shared memory "
              f"({c['reg2d']['launch__shared_mem_config_size'] / 1024:.0f} KiB for reg2d): room for the "
              f"{c['reg2d_uncapped']['launch__occupancy_limit_registers']:.0f} block its registers allow.")
    extra = prof04.value("reg2d", "shared_ld_conflicts")
    if extra:
        print(f"The profiler's {extra:,.0f} bank conflicts in reg2d are negligible: {extra / (1024 * 512):.2f} per block "
              "and slice, whose loads take 1,024 wavefronts.")
else:
    print(f"No counters for both kernels ({prof04.source}).")
