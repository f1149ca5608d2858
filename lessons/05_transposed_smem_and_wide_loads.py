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
# # 05 · Transposed shared memory and 128-bit loads
#
# **Where we are.** The [limiter model](GLOSSARY.md#limiter-model) (on the
# [limiter run](GLOSSARY.md#limiter-run)) finds lesson 04's `reg2d` bound by
# [instruction issue](GLOSSARY.md#issue):

# %%
import gemm_lessons as gl  # first: it chooses the GPU, or numba's CUDA simulator when there is none
from gemm_lessons.model import limiter
from gemm_lessons.model.limiter import WHAT
from gemm_lessons.teaching import exercises, figures, lesson05_steps, limiter_table, measure_step
from gemm_lessons.instruments.compiler_facts import blocks_per_sm
from gemm_lessons.kernels import ladder
from gemm_lessons.records import results
from gemm_lessons.core import tables
from gemm_lessons.core.unroll import expanded_source, static, static_range, unrolled  # compile-time loops
from gemm_lessons.core.float4 import load4, store4  # the 16-byte load/store intrinsics
from gemm_lessons.core.jit import jit  # cuda.jit that also takes GPU-only options (max_registers) on the simulator
from dataclasses import replace
from IPython.display import Markdown, display
import functools
import numpy as np
from numba import cuda, float32
# %matplotlib inline
print(gl.banner())

prev = limiter_table.why(["reg2d"])  # the limiter run
r, n = prev.row("reg2d"), limiter_table.counts("reg2d")
print(f"reg2d at 4096^3 on the {prev.device}: {r.measured_ms:.1f} ms, {2 * 4096**3 / r.measured_ms / 1e9:.1f} TFLOPS. "
      f"Binding ceiling: {WHAT[r.binding]}, {r.ceilings_ms[r.binding]:.1f} ms on its own: "
      f"{n['warp_instructions'] / n['warp_ffma']:.2f} instructions issued per FFMA.")

# %% [markdown]
# ## Idea: 16 bytes per instruction
#
# A load or store moves 4, 8 or 16 bytes per thread ([`.128`](GLOSSARY.md#width-128): 16 bytes)
# for one issue slot. Per [k-step](GLOSSARY.md#k-step), `reg2d` reads 8 values of A and 8 of B
# with sixteen 4-byte `LDS` for 64 FMAs; four 16-byte `LDS.128`, with less address arithmetic,
# would do if each four were neighbours on a 16-byte boundary. Two layout changes make them so:
#
# * a thread's 8x8 results **side by side** (lesson 04's `reg2d_contiguous`): its 8 values of B
#   for one k are neighbours in `sB[k, :]`;
# * the A tile stored **transposed**, `sAT[k, m]`, as it is staged: its 8 values of A too.

# %%
figures.transposed_tile();

# %% [markdown]
# Per slice of BK = 8 k-steps (512 slices at K = 4096), a thread issues:

# %%
# NBVAL_CHECK_OUTPUT
BM, BN, BK, TM, TN, THREADS, K = 128, 128, 8, 8, 8, 256, 4096
issued = {"shared loads (every k-step)": BK * (TM + TN),
          "global loads (staging the tiles)": (BM + BN) * BK // THREADS,
          "stores of C (64 at the end, per slice)": TM * TN / (K // BK)}
for what, four in issued.items():
    print(f"{what:<35} {four:>5.3g} 4-byte or {four / 4:>6.3g} 16-byte instructions")
print(f"{'FFMA':<35} {BK * TM * TN:>5}")

# %% [markdown]
# ## 16-byte instructions from numba
#
# * `load4(X, i, j)` / `store4(X, i, j, x0, x1, x2, x3)` ([intrinsics](GLOSSARY.md#intrinsic))
#   access `X[i, j:j+4]` with one `LDG.128` / `STG.128` (global array) or `LDS.128` (shared).
#   Rows must start on 16-byte boundaries ([alignment](GLOSSARY.md#alignment)): `vec` requires
#   K and N multiples of 4.
# * `@unrolled` writes out every `static_range` loop before numba compiles
#   ([unrolling](GLOSSARY.md#unrolling)): indices into `acc` become constants, shared addresses
#   a base plus a constant, where lesson 04's were recomputed every k-step. `range` loops
#   (k-steps) stay.
#
# ## Five changes, one at a time
#
# One change a step, `vec` two (diffs: Lab notes):
#
# 1. `reg2d_contiguous`: results side by side (lesson 04), no gain alone;
# 2. `reg2d_unrolled`: loops over a thread's results written out;
# 3. `transposed_a`: A tile transposed, both tiles read with `LDS.128`;
# 4. `wide_loads`: tiles staged with `LDG.128`;
# 5. `vec`: C written with `STG.128` (and no register cap: Lab notes).

# %% [markdown]
# ## Predict
#
# Lesson 04's model, per [warp-FFMA](GLOSSARY.md#warp-fma): FP32 lanes 1/4 cycle, schedulers
# 1/4 cycle per instruction, shared memory one cycle per [wavefront](GLOSSARY.md#wavefront); the
# most cycles *bind*. The next cell counts instructions per FFMA from each step's
# [compiler facts](GLOSSARY.md#compiler-facts) and wavefronts with the
# [bank tracer](GLOSSARY.md#bank-tracer). Side by side costs wavefronts, `LDS.128` wins most
# back: the tracer's last column, by rules lesson 06 teaches.

# %%
STEPS, RUNGS = lesson05_steps.NAMES, {**ladder.SGEMM, **ladder.VARIANTS}  # reg2d and the five steps
facts = lesson05_steps.compiler_facts({s: RUNGS[s].kernel for s in STEPS})  # the GPU's compiler (on the simulator: the steps' record)
WARP_FFMA_PER_SLICE = THREADS // 32 * BK * TM * TN  # one block: 8 warps x 8 k-steps x 64


def per_ffma(loop):
    """Instructions issued per FFMA in the main loop: the k-step loop BK times, the rest once."""
    return (BK * loop["inner"] + loop["outer_rest"]) / (BK * loop["inner_FFMA"])


narrow = [s for s in STEPS if not facts[s]["sass"].get("LDS.128")]  # shared loads as wide as the facts show
traced = lesson05_steps.traced_loads(STEPS, narrow=narrow)  # the bank tracer: one block, one slice, each step
ipf, wpf, rows = {}, {}, []
for s in STEPS:
    f = facts[s]
    ipf[s] = per_ffma(f["loop"])
    wpf[s] = traced[s]["wavefronts"] / WARP_FFMA_PER_SLICE
    sass = f["sass"]
    rows.append([f"`{s}`", sass.get("LDS", 0), sass.get("LDS.128", 0), sass.get("LDG.E.128", 0),
                 sass.get("STG.E.128", 0), f"{f['loop']['inner']}", f"{f['loop']['outer_rest']}", f"{ipf[s]:.2f}",
                 f"{wpf[s]:.2f}"])
older = [s for s in narrow if traced[s]["load_bytes"] == 16]  # code asks for LDS.128, the facts show 4-byte LDS
Markdown(f"Per step ({facts.source}):\n\n" + tables.markdown(
    ["step", "LDS", "LDS.128", "LDG.128", "STG.128", "k-step loop (instructions)", "rest of the slice loop",
     "instructions per FFMA", "wavefronts per warp-FFMA"], rows, "lrrrrrrrr")
         + (f"\n\nThese facts show 4-byte `LDS` for {' and '.join(f'`{s}`' for s in older)}: they come from earlier "
            "versions that left merging the shared reads to the compiler (Lab notes). The counts here, and the "
            "model below, follow the facts." if older else ""))

# %% [markdown]
# *Rest of the slice loop*: staging, barriers and counting outside the k-steps. Most savings
# are address arithmetic, not loads.
#
# **Your prediction.** Which unit binds each step, and which step gains most? How many times
# faster than `reg2d` will `vec` run at 4096^3?

# %%
my_speedup = None  # your prediction: replace None with a number (for example 1.5)

# %% [markdown]
# The model's answer (FP32: 0.25 cycles for all):

# %%
machine, base = limiter_table.machine(), limiter_table.work("reg2d")  # the limiter run's GPU, and reg2d's launch
model, gain, rows = {}, {}, []
for i, s in enumerate(STEPS):  # reg2d's grid and bytes; the step's own instructions, wavefronts, blocks per SM
    work = replace(base, warp_instructions=base.ffma / 32 * ipf[s], shared_wavefronts=base.ffma / 32 * wpf[s],
                   blocks_per_sm=blocks_per_sm(facts[s]["registers"], facts[s]["shared_bytes"], THREADS)[0])
    model[s] = limiter.predict(work, machine)
    if i:
        gain[s] = model[STEPS[i - 1]].seconds / model[s].seconds
    rows.append([f"`{s}`", f"{ipf[s] / 4:.2f}", f"{wpf[s]:.2f}", limiter_table.SHORT[model[s].binding],
                 f"{model[s].seconds * 1e3:.2f}", f"{gain[s]:.2f}x" if i else ""])
best = max(gain, key=gain.get)
model_speedup = model["reg2d"].seconds / model["vec"].seconds
Markdown(f"At 4096^3 ({machine.name}, {machine.clock_mhz:,.0f} MHz):\n\n"
         + tables.markdown(["step", "issue (cycles per warp-FFMA)", "shared (cycles per warp-FFMA)", "binds",
                            "predicted (ms)", "x the step before"], rows, "lrrlrr")
         + f"\n\nModel: `vec` {model_speedup:.2f}x as fast as `reg2d`; largest step `{best}` ({gain[best]:.2f}x).")

# %% [markdown]
# ## The kernel: `vec`
#
# Each thread stages one float4 of each tile per slice, scatters A's into `sAT`, reads both
# tiles with `load4` and writes C with `store4`. `split` (lesson 06) is off (gaps of 4:
# results side by side); `unroll_k`: Lab notes.

# %%
# source: gemm_lessons/kernels/sgemm/vec.py  (the package runs this same code; a test keeps the two identical)
BM, BN, BK, TM, TN = 128, 128, 8, 8, 8
THREADS = (BM // TM) * (BN // TN)  # 256
assert BM * BK == 4 * THREADS and BK * BN == 4 * THREADS  # one float4 of each tile per thread


def make_sgemm_vec(unroll_k=False, split=False):
    """unroll_k: write out the k-loop too (lesson 05 times it against the loop).
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
            # one condition (& rather than `and`): the load is predicated, not branched around (lesson 07)
            if (row0 + a_r < M) & (k0 + a_c < K):
                x0, x1, x2, x3 = load4(A, row0 + a_r, k0 + a_c)
            else:
                x0 = x1 = x2 = x3 = np.float32(0.0)
            sAT[a_c + 0, a_r] = x0  # transposing on the way in: four 4-byte stores
            sAT[a_c + 1, a_r] = x1
            sAT[a_c + 2, a_r] = x2
            sAT[a_c + 3, a_r] = x3
            if (k0 + b_r < K) & (col0 + b_c < N):
                y0, y1, y2, y3 = load4(B, k0 + b_r, col0 + b_c)
            else:
                y0 = y1 = y2 = y3 = np.float32(0.0)
            sB[b_r, b_c + 0] = y0  # four scalar stores (the SASS: NVVM does not merge them here)
            sB[b_r, b_c + 1] = y1
            sB[b_r, b_c + 2] = y2
            sB[b_r, b_c + 3] = y3
            cuda.syncthreads()
            for k in static_range(BK) if static(unroll_k) else range(BK):
                for h in static_range(TM // 4):  # 8 + 8 shared values: 2 + 2 LDS.128
                    a[4 * h], a[4 * h + 1], a[4 * h + 2], a[4 * h + 3] = load4(sAT, k, t_row + h * ROW_GAP)
                for h in static_range(TN // 4):
                    b[4 * h], b[4 * h + 1], b[4 * h + 2], b[4 * h + 3] = load4(sB, k, t_col + h * COL_GAP)
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
from gemm_lessons.kernels.sgemm import vec

my_vec = make_sgemm_vec()
gl.check_all(functools.partial(vec.sgemm, kernel=my_vec), name="vec",
             shapes=[(68, 44, 36, 1.0, 0.0), (36, 72, 20, 1.5, -0.5)] if gl.SIMULATOR else
                    [(68, 44, 36, 1.0, 0.0), (516, 1028, 260, -1.0, 0.5), (4, 4, 4, 2.0, 1.0)])

# %% [markdown]
# ## Measure

# %%
kernels = {s: RUNGS[s] for s in STEPS}
kernels["vec"] = functools.partial(vec.sgemm, kernel=my_vec)  # your cell's kernel
table = measure_step.compare(kernels, size=(4096, 4096, 4096), record=lesson05_steps.load())
table

# %%
exercises.compare_prediction(my_speedup, table.speedup("vec", "reg2d"), "vec vs reg2d at 4096^3 (times faster)",
                             table.source)

# %% [markdown]
# ## Why: the limiter model
#
# Ceilings and busiest unit from the limiter run's profiler counts (with an older `vec`), so
# predictions differ slightly from above (Lab notes); times from this run:

# %%
why = limiter_table.why(["reg2d", "vec", "cublas"], measured=table)
why

# %%
ms = {row.kernel: 2 * 4096**3 / (row.gflops * 1e9) * 1e3 for row in table.rows}
ratio = {s: ms[s] / (model[s].seconds * 1e3) for s in STEPS}
measured_gain = {s: ms[STEPS[i - 1]] / ms[s] for i, s in enumerate(STEPS) if i}
Markdown(f"4096^3, ms ({table.source}):\n\n" + tables.markdown(
    ["step", "predicted", "measured", "measured / predicted", "x the step before"],
    [[f"`{s}`", f"{model[s].seconds * 1e3:.2f}", f"{ms[s]:.2f}", f"{ratio[s]:.2f}",
      f"{measured_gain[s]:.2f}x" if s in measured_gain else ""] for s in STEPS], "lrrrr"))

# %%
r2, rv = why.row("reg2d"), why.row("vec")
agree = [r.rung for r in (r2, rv) if r.agrees]
print(f"Measured / predicted: {min(ratio.values()):.2f} to {max(ratio.values()):.2f}. The model assumes the binding "
      f"unit busy every cycle; the profiler found reg2d's ({limiter_table.SHORT[r2.binding]}) "
      f"{r2.utilization_pct[r2.binding]:.0f}% busy, vec's ({limiter_table.SHORT[rv.binding]}) "
      f"{rv.utilization_pct[rv.binding]:.0f}%, and named it the busiest unit for {' and '.join(agree) or 'neither'}. "
      "The other cycles are stalls: warps waiting at barriers, for loads, for the previous FFMA's result.")
print(f"vec against reg2d: predicted {model_speedup:.2f}x, measured {table.speedup('vec', 'reg2d'):.2f}x.")

# %% [markdown]
# In the model, fewer instructions pay while issue binds, fewer wavefronts while shared memory
# binds (**binds** column). Measured, single steps stray by stalls the model does not count
# (residuals: Lab notes): `reg2d_unrolled` gained though shared memory binds it. `wide_loads` gains
# outside the k-steps: one guarded `load4` per tile replaces four guarded loads and their index
# arithmetic.

# %% [markdown]
# ## Exercise 05-stage-a
# With BK = 16, each of `vec`'s 256 threads stages two float4s of the 128 x 16 slice of A.
# Write `stage_a(tid, p)`: the (row, first column) of thread `tid`'s float4 `p` (0 or 1), so
# that in each load instruction neighbouring threads read neighbouring 16-byte pieces of a row
# (a warp reads whole rows: coalesced, lesson 01).

# %%
# NBVAL_CHECK_OUTPUT
def stage_a(tid, p):
    ### BEGIN SOLUTION
    return tid // 4 + 64 * p, (tid % 4) * 4
    ### END SOLUTION

exercises.check("05-stage-a", stage_a)

# %% [markdown]
# ## Exercise 05-transpose-a
#
# `vec` with 64 x 64 tiles and 64 threads; each thread stages two float4s of A per slice (tile
# rows `a_r` and `a_r + 32`). Write:
#
# 1. where `x0..x3` (`A[m, k0 + a_c + d]`, `d = 0..3`, `m = a_r + p * A_STEP`) go in
#    `sAT[k, m]`;
# 2. the k-step's `load4` of a thread's 8 values of A (tile rows `t_row .. t_row + 7`), as for B.
#
# The check tests two awkward shapes and traces the shared loads: four neighbouring, aligned
# floats per lane.

# %%
import numpy as np
from gemm_lessons.teaching import exercises  # before numba.cuda: gemm_lessons picks the GPU or the simulator
from numba import cuda, float32
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
            for h in static_range(TM // 4):  # A[row0 + t_row + 4h + d, k0 + k], d = 0..3: one 16-byte load
                ### BEGIN SOLUTION: a[4 * h] = a[4 * h + 1] = a[4 * h + 2] = a[4 * h + 3] = np.float32(0.0)
                a[4 * h], a[4 * h + 1], a[4 * h + 2], a[4 * h + 3] = load4(sAT, k, t_row + 4 * h)
                ### END SOLUTION
            for h in static_range(TN // 4):
                b[4 * h], b[4 * h + 1], b[4 * h + 2], b[4 * h + 3] = load4(sB, k, t_col + 4 * h)
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
# * A 16-byte instruction moves four floats for one issue slot if they are neighbours on a
#   16-byte boundary: results side by side, A stored transposed.
# * It pays where it runs often, with the address arithmetic it replaces. The model got the
#   whole jump close, single steps less so.
# * numba: `load4` / `store4`; `@unrolled` with `static_range`. Check the compiler facts.
# * Next (lesson 06): the wavefronts `vec` still loses to bank conflicts.

# %% [markdown]
# ## Sources and further reading
#
# * Source articles: [[1]](REFERENCES.md#seed-000), [[4]](REFERENCES.md#seed-003), [[5]](REFERENCES.md#seed-004)
#   ([origins and coverage](REFERENCES.md#source-articles)).
# * Read next: [REFERENCES.md, lesson 05](REFERENCES.md#lesson-05).
# * Terms: the [glossary](GLOSSARY.md) and the [primer](00a_primer.ipynb).

# %% [markdown]
# ## Lab notes
#
# **The steps' kernels.** Each step's code, and its diff against the step before (the package's
# files; lesson 04 shows `reg2d` and `reg2d_contiguous`, its factory with `SPREAD=False`).
# The first diff starts from `reg2d.py`, so it also shows the spread layout turning side by
# side. `vec`'s options `split` and `unroll_k` are off by default; its 18 `LDG.128`
# (`LDG.E.128` in the SASS) are 2 staging loads + 16 reads of C for beta ≠ 0; its 32
# `STG.128`, 16 per branch.

# %%
from gemm_lessons.course import lesson_source
for s in STEPS[2:]:
    before = lesson05_steps.step(lesson05_steps.previous(s)).module
    print(lesson_source.kernel_diff(before, lesson05_steps.step(s).module), end="\n\n")

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
            for h in static_range(TM // 4):  # a row of the transposed A tile: 8 neighbours, two LDS.128
                a[4 * h], a[4 * h + 1], a[4 * h + 2], a[4 * h + 3] = load4(sAT, k, t_row + 4 * h)
            for h in static_range(TN // 4):  # a row of the B tile: 8 neighbours, two LDS.128
                b[4 * h], b[4 * h + 1], b[4 * h + 2], b[4 * h + 3] = load4(sB, k, t_col + 4 * h)
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
        # one condition (& rather than `and`): the load is predicated, not branched around (lesson 07)
        if (row0 + a_r < M) & (k0 + a_c < K):
            x0, x1, x2, x3 = load4(A, row0 + a_r, k0 + a_c)
        else:
            x0 = x1 = x2 = x3 = np.float32(0.0)
        sAT[a_c + 0, a_r] = x0  # transposing on the way in: four 4-byte stores
        sAT[a_c + 1, a_r] = x1
        sAT[a_c + 2, a_r] = x2
        sAT[a_c + 3, a_r] = x3
        if (k0 + b_r < K) & (col0 + b_c < N):
            y0, y1, y2, y3 = load4(B, k0 + b_r, col0 + b_c)
        else:
            y0 = y1 = y2 = y3 = np.float32(0.0)
        sB[b_r, b_c + 0] = y0  # four scalar stores (the SASS: NVVM does not merge them here)
        sB[b_r, b_c + 1] = y1
        sB[b_r, b_c + 2] = y2
        sB[b_r, b_c + 3] = y3
        cuda.syncthreads()
        for k in range(BK):
            for h in static_range(TM // 4):  # a row of the transposed A tile: 8 neighbours, two LDS.128
                a[4 * h], a[4 * h + 1], a[4 * h + 2], a[4 * h + 3] = load4(sAT, k, t_row + 4 * h)
            for h in static_range(TN // 4):  # a row of the B tile: 8 neighbours, two LDS.128
                b[4 * h], b[4 * h + 1], b[4 * h + 2], b[4 * h + 3] = load4(sB, k, t_col + 4 * h)
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
from gemm_lessons.kernels.sgemm import reg2d_unrolled, transposed_a, wide_loads

for name, module, kernel in (("reg2d_unrolled", reg2d_unrolled, sgemm_reg2d_unrolled),
                             ("transposed_a", transposed_a, sgemm_transposed_a),
                             ("wide_loads", wide_loads, sgemm_wide_loads)):
    display(gl.check_all(functools.partial(module.sgemm, kernel=kernel), name=name,
                         shapes=[(68, 44, 36, 1.0, 0.0), (36, 72, 20, 1.5, -0.5)]))

# %% [markdown]
# **Rows not 16-byte aligned**, refused:

# %%
# NBVAL_CHECK_OUTPUT
A = cuda.to_device(np.ones((8, 6), np.float32))
B = cuda.to_device(np.ones((6, 8), np.float32))
try:
    vec.sgemm(A, B, cuda.device_array((8, 8), np.float32))
except ValueError as e:
    print("ValueError:", e)

# %% [markdown]
# **What `@unrolled` hands numba**: the kernel with every `static_range` loop written out, and each
# element of a local array indexed by constants written as a variable of its own (`acc[1, 2]`
# becomes `acc_1_2`), which is what the compiler does anyway to keep it in registers. `vec`'s
# k-step:

# %%
lines = expanded_source(my_vec).splitlines()
start = next(i for i, line in enumerate(lines) if "for k in range(BK)" in line)
print("\n".join(lines[start:start + 14]))
print(f"    ... {len(lines)} lines in all")

# %% [markdown]
# **Spills, register cap, occupancy.** The steps before `vec` carry lesson 04's
# `max_registers=128`; `vec` has no cap, a second difference from `wide_loads`. Under the cap,
# `reg2d_contiguous` and `transposed_a` spill a few bytes (below); whether those spills cost
# time, no run here separates.

# %%
blocks = {s: blocks_per_sm(facts[s]["registers"], facts[s]["shared_bytes"], 256)[0] for s in STEPS}
for s in STEPS:
    print(f"{s:<17} {facts[s]['registers']:>3} registers, {facts[s]['local_bytes']:>3} bytes of local memory "
          f"(spills), {blocks[s]} blocks per SM")
uncapped = facts["vec"]["registers"]
print(f"vec, uncapped, takes {uncapped} registers per thread: "
      + ("the cap of 128 would not bind it." if uncapped <= 128 else "more than the cap of 128 allows the others.")
      + (" Every step holds the same blocks per SM." if len(set(blocks.values())) == 1 else ""))

# %% [markdown]
# **Explicit `LDS.128`.** Earlier versions of the steps read shared memory by plain indexing,
# `sAT[k, t_row + i]`, leaving NVVM to merge four reads into one `LDS.128`. Compiled for an
# H100, only their `vec` got `LDS.128`:

# %%
old = lesson05_steps.load(results.REFERENCE_DEVICE)
if old is not None and not old.compiler["transposed_a"]["sass"].get("LDS.128"):  # a record of the earlier kernels
    print(f"{old.device.name}, {old.date[:10]}, commit {old.git_commit}: " + "; ".join(
        f"{s} {old.compiler[s]['sass'].get('LDS', 0)} LDS and {old.compiler[s]['sass'].get('LDS.128', 0)} LDS.128"
        for s in ("transposed_a", "wide_loads", "vec")) + ".")

# %% [markdown]
# So `load4` on the shared arrays makes the width part of the code. The limiter run (the Why
# section's ceilings and profiler) timed and profiled such an earlier `vec`, which read shared
# memory by plain indexing. Its ceilings come from the profiler's counts, the Predict table's
# from the compiled main loop and the tracer (below): hence slightly different
# predictions (`reg2d` 6.26 and 6.24 ms, `vec` 3.07 and 3.05 ms).
#
# **The tracer against the profiler.** The model's wavefronts above are the tracer's, with the
# paired-load rule of lesson 06 (an `LDS.128` whose lanes pair up on the same 16 bytes takes 2
# wavefronts, not 4). The limiter run's profiler counted `reg2d` and `vec` on the GPU:

# %%
for s in ("reg2d", "vec"):
    print(f"{s:<6} wavefronts per warp-FFMA: tracer {wpf[s]:.3f}, profiler {limiter_table.per_warp_fma(s)['shared']:.3f}; "
          f"instructions per FFMA: compiled main loop {ipf[s]:.2f}, profiler {limiter_table.per_warp_fma(s)['issue']:.2f}")

# %% [markdown]
# **Residuals.** Where measured / predicted moves between steps, the model missed something the
# step changed: stalls, which it does not count. Which stalls (for `reg2d_unrolled`'s 1.18x with
# shared memory binding, `transposed_a`'s 1.42x against 1.73x) is not settled here: the limiter
# run profiled `reg2d` and `vec` only, not the steps between them.

# %%
for s in STEPS[1:]:
    print(f"{s:<17} step gain predicted {gain[s]:.2f}x, measured {measured_gain[s]:.2f}x; "
          f"measured / predicted {ratio[STEPS[STEPS.index(s) - 1]]:.2f} -> {ratio[s]:.2f}")

# %% [markdown]
# **The k-step loop written out too** (`unroll_k=True`): all eight k-steps written out, against
# the loop (`vec` keeps the loop; lessons 07-08's kernels write every k-step out). Timed side
# by side:

# %%
my_vec_unrolled_k = make_sgemm_vec(unroll_k=True)
unrolled_table = measure_step.compare({"vec": functools.partial(vec.sgemm, kernel=my_vec),
                                       "vec_unrolled_k": functools.partial(vec.sgemm, kernel=my_vec_unrolled_k)},
                                      size=(4096, 4096, 4096), record=lesson05_steps.load())
unrolled_facts = lesson05_steps.compiler_facts({"vec": my_vec, "vec_unrolled_k": my_vec_unrolled_k})
display(unrolled_table, unrolled_facts)
u = unrolled_facts["vec_unrolled_k"]
print(f"Written out, the k-loop ran {unrolled_table.speedup('vec_unrolled_k', 'vec'):.2f}x as fast as the loop, with "
      f"{u['sass'].get('LDS.128', 0)} LDS.128 and {u['sass'].get('LDS', 0)} LDS"
      + (": this record's vec_unrolled_k is the earlier vec's, with plain shared indexing, which NVVM did not merge "
         "once the k-loop was written out." if not u["sass"].get("LDS.128") else "."))
