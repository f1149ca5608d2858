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
# # 11 · From a kernel to a library: edges, call costs, split-K, dispatch
#
# **Where we are.** Lesson 08's `warptile` runs close to cuBLAS at 4096^3 (next cell), assuming K
# and N multiples of 4, 16-byte-aligned arrays, enough 128 x 128 tiles to fill the GPU, and a
# caller who ignores Python's cost per call. A library cannot.
#
# **The idea.** No kernel is best at every shape: a library is many kernels plus a rule that picks
# one per shape. We build `gl.sgemm`, then look at cuBLAS.

# %%
import gemm_lessons as gl  # first: it chooses the GPU, or numba's CUDA simulator when there is none
from gemm_lessons import library
from gemm_lessons.library import dispatch
from gemm_lessons.measure import problems
from gemm_lessons.kernels import ladder
from gemm_lessons.teaching import exercises, limiter_table
from gemm_lessons.model.limiter import WHAT  # the model's ceilings in words
from gemm_lessons.teaching.lesson11 import (call_overhead, dispatch_model, edge_shapes, profile_comparison, shape_suite,
                                            split_k_plans, suite_record)
from gemm_lessons.teaching.lesson11.suite_record import ODD_SHAPE, REFERENCE_SHAPE, SKINNY_SHAPE, shape_name
from gemm_lessons.core.jit import jit  # cuda.jit that also takes GPU-only options (max_registers) on the simulator
import math
import re
import numpy as np
from numba import cuda, float32
# %matplotlib inline
print(gl.banner())

# %%
start = limiter_table.why(["warptile", "cublas"])  # lesson 10's limiter table, not shown: one sentence from it
w, c = start.row("warptile"), start.row("cublas")
what = {name: text.split(" (")[0] for name, text in WHAT.items()}  # "issue": "instruction issue", ...
print(f"warptile: {w.measured_ms:.2f} ms at 4096^3, {100 * c.measured_ms / w.measured_ms:.0f}% of cuBLAS's speed, bound by "
      + (f"{what[w.binding]} like cuBLAS." if w.binding == c.binding else f"{what[w.binding]} (cuBLAS by {what[c.binding]})."))

# %% [markdown]
# ## 1 · Edges and alignment
#
# **The idea.** Lesson 05's `load4(A, row, col)` reads `A[row, col:col + 4]` in one instruction
# ([wide loads](GLOSSARY.md#wide-loads)) from an address that must be a multiple of 16
# ([alignment](GLOSSARY.md#alignment)). Row r of a row-major float32 matrix starts 4 x r x (row
# stride) bytes after row 0, so every row is aligned only if the stride (K floats for a fresh A,
# N for B) is a multiple of 4 and the array starts on a 16-byte boundary (`A_d[1:]` of a 1-D `A_d`
# does not).

# %%
# which rows of a row-major matrix start on a 16-byte boundary, for K = 8 and K = 10
edge_shapes.alignment_figure(ks=(8, 10));

# %% [markdown]
# `warptile` therefore refuses such shapes, and says why:

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
# **Two ways out**, each a **plan**: a kernel, its tile size BM x BN and K's split if any (`wide 64x128`).
#
# * The **any-shape kernel** below is lesson 08's with every global access one float at a time
#   (`load_a`, `load_b`, `store1`) under its own [predicate](GLOSSARY.md#predicate): inside the
#   matrix, inside this block's k. It takes any shape, alignment and stride.
# * The **padded plan** zero-pads B, whose sides are K and N, and A where K is not a multiple of 4
#   or A is misaligned, to sides that are multiples of 4 (one copy launch), then runs `warptile`,
#   the library's **wide kernel**, writing C one float at a time (`ragged_c`) since C's rows need
#   not be aligned.

# %%
from numba import boolean
from gemm_lessons.core.float4 import load1, load4, store1, store4  # one float (load1, store1) or four (load4, store4) at a time
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
# **Check** against float64: the kernel above launched by hand, then `gl.sgemm` on awkward shapes
# and misaligned views of A.

# %%
# NBVAL_CHECK_OUTPUT
cfg64 = dispatch.TILES["64x64"]
any_shape_64 = make_kernel(cfg64)  # the cell above, compiled for 64 x 64 tiles


def launch_any_shape(A, B, C, alpha=1.0, beta=0.0):
    M, K = A.shape
    N = B.shape[1]
    grid = ((N + cfg64.BN - 1) // cfg64.BN, (M + cfg64.BM - 1) // cfg64.BM, 1)  # one part along z: all of K
    any_shape_64[grid, cfg64.threads](A, B, C, np.float32(alpha), np.float32(beta), np.int64(K))


def lib(A, B, C, alpha=1.0, beta=0.0):
    gl.sgemm(A, B, C, alpha, beta)


print("the cell's kernel at 67x45x33, right:", problems.check(launch_any_shape, 67, 45, 33, 1.5, -0.5).passed)
print("gl.sgemm on the awkward shapes, right:", gl.check_all(lib, name="gl.sgemm").passed)
B_host = rng.uniform(-1, 1, (32, 12)).astype(np.float32)
flat = rng.uniform(-1, 1, 1 + 20 * 32).astype(np.float32)
big = rng.uniform(-1, 1, (20, 33)).astype(np.float32)
views = {"4 bytes off a boundary": (cuda.to_device(flat)[1:].reshape(20, 32), flat[1:].reshape(20, 32)),
         "rows 33 floats apart": (cuda.to_device(big)[:, 1:], big[:, 1:]),
         "a fresh array": (cuda.to_device(big[:, 1:].copy()), big[:, 1:])}
for name, (A_view, A_host) in views.items():
    C_view = gl.sgemm(A_view, cuda.to_device(B_host)).copy_to_host()
    print(f"20x12x32, A {name}, right:", problems.compare("view", C_view, A_host.astype(np.float64) @ B_host, 1.0, 0.0, 32).passed)

# %%
# the plan gl.sgemm runs for each: where the layout rules out the wide kernel, the library's model
# (section 4) picks among the rest
for name, (A_view, _) in views.items():
    print(f"20x12x32, A {name}: {library.plan_of(A_view, cuda.to_device(B_host))}")

# %% [markdown]
# The padded plan's copy kernel: each thread reads four floats of a row one at a time (a source
# row may start anywhere; zeros outside it) and writes them with one 16-byte store (a padded row
# is aligned).

# %%
# source: gemm_lessons/kernels/library/pad_copy.py  (the package runs this same code; a test keeps the two identical)
@cuda.jit
def pad_copy(src, dst):
    rows, cols = src.shape
    col = 4 * (cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x)  # dst's columns col .. col + 3
    if col >= dst.shape[1]:
        return
    for row in range(cuda.blockIdx.y, dst.shape[0], cuda.gridDim.y):
        v0 = v1 = v2 = v3 = np.float32(0.0)  # zeros outside the source
        if row < rows:
            if col < cols:
                v0 = load1(src, row, col)
            if col + 1 < cols:
                v1 = load1(src, row, col + 1)
            if col + 2 < cols:
                v2 = load1(src, row, col + 2)
            if col + 3 < cols:
                v3 = load1(src, row, col + 3)
        store4(dst, row, col, v0, v1, v2, v3)  # one 16-byte store
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

# %% [markdown]
# **Which way out costs less?** `gl.sgemm` decides with a **model** (section 4): a kernel's FLOP at
# its rate on this GPU, plus any copies at memory bandwidth. The **shape suite**
# (`python -m gemm_lessons.runs.shapes`) checks and times `gl.sgemm` and cuBLAS on 19 shapes after
# it **calibrates** the rates: each kernel and tile size on an aligned 4096^3 square, then on a grid
# of one block per SM, and a copy's bandwidth:

# %%
model = dispatch.model()  # the model gl.sgemm uses on this GPU (on the simulator: the recorded one)

# %%
rec = suite_record.load()  # the shape suite's record
wide_cal, any_cal = (suite_record.calibration(rec, f"{k} 128x128") for k in ("wide", "any_shape"))
pct_any = 100 * any_cal["gflops"] / wide_cal["gflops"]
print(f"any_shape 128x128 ran at {any_cal['gflops'] / 1e3:.1f} TFLOPS, wide 128x128 at {wide_cal['gflops'] / 1e3:.1f} "
      f"({pct_any:.0f}%).")
prof = suite_record.issue_profile()  # Nsight Compute, experiments/shape_classes
if prof:
    a, w = prof["any_shape"], prof["wide"]
    slower = a["per_ffma"] / w["per_ffma"] * w["issue_pct"] / a["issue_pct"]  # instructions / issue rate
    print(f"Why, from Nsight Compute at 4096^3: more instructions ({a['per_ffma']:.2f} per FFMA against {w['per_ffma']:.2f}), "
          f"issued less often ({a['issue_pct']:.0f}% of cycles against {w['issue_pct']:.0f}%): {slower:.2f}x the time.")

# %% [markdown]
# **Predict.** 4095 x 4097 x 4093 is the work of 4096^3 give or take 0.1%, with nothing a multiple
# of 4. Against the any-shape kernel's slower rate, the padded plan reads A and B and writes them
# padded (four passes of 67 MB each) at the calibrated copy rate, about 4 TB/s,
# plus an assumed 5 µs for their one launch; C is written one float at a time (not in the model).
# Which plan wins, and how much longer than at 4096^3 will `gl.sgemm` take [back to back](GLOSSARY.md#single-call), in %?

# %%
my_odd_extra_pct = None  # your prediction: % more time at 4095x4097x4093 than at 4096^3 (for example 10)

# %%
odd_plan, ref_plan = dispatch.choose(*ODD_SHAPE, False, model), dispatch.choose(*REFERENCE_SHAPE, True, model)
t_odd, t_ref = 1e3 * model.estimate_s(odd_plan, *ODD_SHAPE), 1e3 * model.estimate_s(ref_plan, *REFERENCE_SHAPE)
model_odd_extra_pct = 100 * (t_odd / t_ref - 1)
copy_mb = 4 * dispatch.padded_copy_floats(*ODD_SHAPE) / 1e6
copies = (f". The copies' {copy_mb:.0f} MB take {copy_mb / model.bandwidth_gbs:.3f} ms at {model.bandwidth_gbs:,.0f} GB/s, "
          f"plus {dispatch.PADDED_COPY_LAUNCHES} launch of {model.launch_us:.0f} µs: "
          f"{1e3 * model.padding_s(*ODD_SHAPE):.3f} ms" if odd_plan.kernel == "padded" else "")
guessed = [str(p) for p in (odd_plan, ref_plan) if not model.speed(p).measured]  # rates this GPU's suite did not measure
any_plan = min((p for p in dispatch.candidates(*ODD_SHAPE, False, model) if p.kernel == "any_shape"),
               key=lambda p: model.estimate_s(p, *ODD_SHAPE))  # the other way out, at its best
print(f"{any_plan} would take {1e3 * model.estimate_s(any_plan, *ODD_SHAPE):.3f} ms. The model picks {odd_plan} at {shape_name(ODD_SHAPE)} and {ref_plan} at {shape_name(REFERENCE_SHAPE)}, and "
      f"estimates {t_odd:.3f} ms against {t_ref:.3f} ms: {model_odd_extra_pct:+.1f}%{copies}"
      + (f" ({', '.join(guessed)}: a guessed rate, not measured on this GPU)." if guessed else "."))

# %%
# the shape suite run now on these two shapes; on the simulator, its record
edges = shape_suite.measure_shapes([REFERENCE_SHAPE, ODD_SHAPE], single=False)
edges

# %%
ref_row, odd_row = edges.get(REFERENCE_SHAPE), edges.get(ODD_SHAPE)
odd_extra_ms = odd_row.back_to_back_gl.median_ms - ref_row.back_to_back_gl.median_ms
exercises.compare_prediction(my_odd_extra_pct, 100 * odd_extra_ms / ref_row.back_to_back_gl.median_ms,
                             "gl.sgemm at 4095x4097x4093, % more time than at 4096^3 (back to back)", edges.source)

# %% [markdown]
# **Why.** The odd shape took more than the model's copies. Its parts, timed alone (their runs, and
# the model's high 4096^3 estimate: Lab notes):

# %%
stores, copies = suite_record.store_cost(ODD_SHAPE), suite_record.pad_copies(ODD_SHAPE)  # recorded, one run each
TM, TN = dispatch.TILES[odd_plan.tiles].TM, dispatch.TILES[odd_plan.tiles].TN  # results per thread: TM x TN
if odd_plan.kernel == "padded" and stores and copies:
    ref_rec = suite_record.row(rec, REFERENCE_SHAPE).back_to_back_gl.median_ms  # 4096^3 in the suite's run
    parts = {"extra blocks": stores["wide_ms"] - ref_rec, "one-float stores of C": stores["one_float_ms"] - stores["wide_ms"],
             "copies": copies["ms"]}
    print(f"Extra blocks: the wide kernel on the padded sides {stores['wide_ms']:.3f} ms, 4096^3 {ref_rec:.3f}: "
          f"{parts['extra blocks']:+.3f} ms. The same kernel writing C one float at a time: {stores['one_float_ms']:.3f} ms, "
          f"{parts['one-float stores of C']:+.3f} ms ({TM * TN} one-float stores per thread, not {TM * TN // 4} of four).")
    model_copies = 1e3 * model.padding_s(*ODD_SHAPE)
    near = abs(copies["ms"] / model_copies - 1) < 0.15
    print(f"Copies: A's and B's together {copies['ms']:.3f} ms (each timed alone), "
          f"{'about' if near else 'not'} the model's {model_copies:.3f}.")
    odd_rec = suite_record.row(rec, ODD_SHAPE).back_to_back_gl.median_ms
    print(f"Sum {sum(parts.values()):.3f} ms; measured {odd_rec - ref_rec:.3f} ms more in the suite's run "
          f"(4096^3 {ref_rec:.3f} ms there).")
    timed_any = {p: ms for p, ms in suite_record.row(rec, ODD_SHAPE).plans_ms.items() if p.startswith("any_shape")}
    fastest_any = min(timed_any, key=timed_any.get)
    print(f"Still the right choice: the best any-shape plan, {fastest_any}, took {timed_any[fastest_any]:.3f} ms there.")

# %% [markdown]
# Why the extra blocks cost so little: a **block slot** is room for one
# [resident](GLOSSARY.md#resident) block on an SM (SMs x blocks/SM in all); a [wave](GLOSSARY.md#wave)
# fills every slot. 4097 columns, padded to 4100, need a 33rd column of tiles:

# %%
N4, K4 = dispatch.padded_sides(*ODD_SHAPE[1:])
blocks = {"4096^3": math.prod(ref_plan.grid(*REFERENCE_SHAPE[:2])[:2]),
          "padded": math.prod(dispatch.Plan("wide", odd_plan.tiles).grid(ODD_SHAPE[0], N4)[:2])}
slots = model.speed(ref_plan).blocks_per_sm * model.sms
waves = {k: b / slots for k, b in blocks.items()}
print(f"{blocks['4096^3']:,} blocks at 4096^3, {blocks['padded']:,} on the padded sides ({N4} columns): "
      f"{100 * (blocks['padded'] / blocks['4096^3'] - 1):.1f}% more blocks, {waves['4096^3']:.2f} and "
      f"{waves['padded']:.2f} waves of {slots} slots"
      + (": the extra blocks fill the last wave that 4096^3 starts anyway." if math.ceil(waves["padded"]) == math.ceil(waves["4096^3"]) else "."))

# %% [markdown]
# ## 2 · What a call costs
#
# **The idea.** `kernel[grid, block](...)` returns before the GPU starts, but only after numba has
# converted every argument, found the compiled version and called the driver
# ([launch overhead](GLOSSARY.md#launch-overhead)). `gl.sgemm` launches through a
# [Launcher](GLOSSARY.md#launcher), which does that work once. A call costs the host its **issue
# time** (not lesson 10's instruction issue), then the GPU its kernel time. Timed **back to back**
# ([single call, back to back](GLOSSARY.md#single-call)), the host issues the next call while the
# GPU runs this one, so a call costs the longer of the two.
#
# The figure: issue times of five callers (cuBLAS through NVIDIA's
# [nvmath-python](GLOSSARY.md#nvmath-python)). One caller is faster only where its 90th percentile
# lies below the other's 10th ([p10-p90](GLOSSARY.md#p10-p90)).

# %%
costs = call_overhead.call_costs()
call_overhead.issue_figure(costs);

# %%
lib_caller = "gl.sgemm(A, B, C)"
for other in (c for c in costs.callers() if "kernel[grid, block]" in c or c.startswith("cuBLAS")):
    gaps = [g for g in call_overhead.separation(costs, lib_caller, other).values() if g is not None]
    apart = [g for g in gaps if g > 0]
    print(f"{lib_caller} against {other.split(' (')[0]}: at {len(apart)} of {len(gaps)} sizes its 90th percentile "
          f"lay below the other's 10th" + (f", by {min(apart):.0f} µs or more" if apart else "")
          + ("." if len(apart) == len(gaps) else "; elsewhere the spreads overlap and rank nothing."))
alloc = [costs.get("gl.sgemm(A, B) (allocates C)", n) for n in costs.sizes()]
mine = [costs.get(lib_caller, n) for n in costs.sizes()]
print(f"gl.sgemm(A, B), which allocates C, took {min(alloc):.0f} to {max(alloc):.0f} µs to issue"
      + (": pass C." if min(alloc) > max(mine) else "."))
r = suite_record.row(rec, (1024, 1024, 1024))  # single calls: CUDA events around one call, the GPU idle before
print(f"A single call pays its issue time too (the shape suite's record): at 1024^3, gl.sgemm {r.single_gl.median_ms:.3f} ms against "
      f"{r.back_to_back_gl.median_ms:.3f} back to back, cuBLAS {r.single_cublas.median_ms:.3f} against "
      f"{r.back_to_back_cublas.median_ms:.3f}: {r.pct_cublas_single:.0f}% of cuBLAS single, "
      f"{r.pct_cublas_back_to_back:.0f}% back to back.")

# %% [markdown]
# A timing is [host-bound](GLOSSARY.md#host-bound) when issuing a call takes at least 80% of the
# time per call: its % of cuBLAS then compares Python wrappers, not kernels. From here on we
# compare kernels back to back without host-bound shapes.
#
# ## 3 · Split-K: when C is too small to fill the GPU
#
# **The idea.** One block per BM x BN tile of C. At 64 x 8192 x 8192 with
# 64 x 128 tiles that is 64 blocks for a few hundred slots: most of the GPU idles while each
# block walks all of K, a [tail effect](GLOSSARY.md#tail-effect). [Split-K](GLOSSARY.md#split-k) cuts K
# into s parts for s times the blocks, each summing its part into a workspace;
# a second kernel adds the parts. The price: one more launch, and the reduction's (s + 2) x M x N
# floats (s parts read, C read and written).

# %%
split_k_plans.split_k_diagram(splits=4);

# %%
# the model's fastest split-K plan at 64x8192x8192 and the same plan without the split: how their blocks fill the slots
estimate = {p: model.estimate_s(p, *SKINNY_SHAPE) for p in dispatch.candidates(*SKINNY_SHAPE, True, model)}
split = min((p for p in estimate if p.split > 1), key=estimate.get)
whole = dispatch.Plan(split.kernel, split.tiles)
split_k_plans.waves_figure(SKINNY_SHAPE, [whole, split], model);

# %% [markdown]
# **The kernels.** The first half: the any-shape kernel with s layers of blocks along z. Layer z
# sums its chunk of k (`k_begin` to `k_end`; K / s rounded up to a multiple of BK, `Plan.k_chunk`)
# into rows z x M onward of an s·M x N workspace (`out0`), as does the wide kernel. The second half
# adds the parts in a fixed order and applies alpha and beta once:

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
# **Check** split-K from this lesson's two cells, four parts, against float64:

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
# **Predict.** At 64 x 8192 x 8192, how many times as fast as the same plan unsplit is the model's
# fastest split-K plan? Count the busy slots in the figure (the reduction is not in it), and guess
# whether one block alone on an SM runs at 1 / (blocks per SM) of a full SM's rate, or faster
# (calibrated: the Why).

# %%
my_split_gain = None  # your prediction: times as fast (for example 2)

# %%
model_split_gain = estimate[whole] / estimate[split]
guessed = [str(p) for p in (whole, split) if not model.speed(p).measured]  # rates this GPU's suite did not measure
print(f"The model: {whole} {1e3 * estimate[whole]:.3f} ms, {split} {1e3 * estimate[split]:.3f} ms "
      f"(the reduction and its launch included): {model_split_gain:.2f}x as fast"
      + (f" ({', '.join(guessed)}: a guessed rate, not measured on this GPU)." if guessed else "."))

# %%
# on a GPU: every candidate plan timed now, back to back (the progress bar shows how long); on the
# simulator, the suite's record
skinny = shape_suite.measure_shapes([SKINNY_SHAPE], all_plans=True, single=False)
skinny

# %%
plans_ms = skinny.get(SKINNY_SHAPE).plans_ms  # every candidate plan, timed in one pass
whole_ms, split_ms = plans_ms[str(whole)], plans_ms[str(split)]
print(f"Timed again, all plans in one pass: {whole} {whole_ms:.3f} ms, {split} {split_ms:.3f} ms: {whole_ms / split_ms:.2f}x as fast. "
      f"The fastest of all plans timed: "
      f"{min(plans_ms, key=lambda p: plans_ms[p] if isinstance(plans_ms[p], float) else math.inf)}.")
exercises.compare_prediction(my_split_gain, whole_ms / split_ms, f"{split} against {whole} at 64x8192x8192 "
                             "(times as fast)", skinny.source)

# %% [markdown]
# **Why.** The gain is below the ratio of busy slots: a lone block has an SM's instruction issue to
# itself, though too few warps to hide every latency:

# %%
fill = {p: split_k_plans.waves(SKINNY_SHAPE, p, model) for p in (whole, split)}
speed = model.speed(whole)
share = speed.sm_rate(1, model.sms) / speed.sm_rate(speed.blocks_per_sm, model.sms)
M_k, N_k, _ = SKINNY_SHAPE
reduce_us = 1e6 * 4.0 * M_k * N_k * (split.split + 2) / (model.bandwidth_gbs * 1e9)
busy = fill[split]["blocks"] / fill[whole]["blocks"]
print(f"Busy slots: {fill[whole]['blocks']} of {fill[whole]['slots']} without the split, {fill[split]['blocks']} with it: "
      f"{busy:.0f}x.")
print(f"One {whole} block alone on an SM gets {share:.3f} of a full SM's rate, not 1/{speed.blocks_per_sm}, so the "
      f"kernel gains {busy:.0f} / ({speed.blocks_per_sm} x {share:.3f}) ≈ {busy / (speed.blocks_per_sm * share):.1f}x.")
print(f"The reduction ({reduce_us:.1f} µs) and its launch ({model.launch_us:.0f} µs) bring the model to "
      f"{model_split_gain:.2f}x; measured {whole_ms / split_ms:.2f}x, {(whole_ms / split_ms) / model_split_gain:.2f} "
      "times the model.")

# %% [markdown]
# ## 4 · Dispatch: a model, checked by timing
#
# **The rule.** `gemm_lessons.library.dispatch` lists the plans: the wide kernel, the any-shape
# kernel and the padded plan, each with four tile sizes and K split up to 16 ways. For a shape it
# keeps the **candidates** that can run it (wide plans only where K and N are multiples of 4 and the
# arrays aligned; a split only where each part gets at least 128 values of k) and picks the
# smallest estimate:
#
# $$t = \sum_{\text{waves}} \text{blocks on the busiest SM} \times \frac{\text{FLOP of one block}}{\text{that SM's rate}}
#   \;+\; \frac{\text{bytes copied or reduced}}{\text{bandwidth}} + \text{a launch for each}$$
#
# The check: the suite timed every candidate on all shapes but the four largest.

# %%
rec_model = suite_record.recorded_model(rec)  # the model the record's run used
dispatch_model.model_figure(rec, rec_model);

# %%
points = dispatch_model.model_points(rec, rec_model)
off = sorted(abs(est / ms - 1) for _, _, est, ms, _, _ in points)
timed = [r for r in rec.rows if r.plans_ms]
misses = shape_suite.disagreements(rec)
worst = max(points, key=lambda p: max(p[2] / p[3], p[3] / p[2]))
print(f"{len(points)} plans timed on {len(timed)} shapes: half the estimates within {100 * off[len(off) // 2]:.0f}% "
      f"of the measured time, 90% within {100 * off[int(0.9 * (len(off) - 1))]:.0f}%; the worst, {worst[1]} at "
      f"{shape_name(worst[0])}, took {worst[3]:.3f} ms against {worst[2]:.3f} estimated (11b, section 5).")
print(f"The plan chosen was the fastest timed on {len(timed) - len(misses)} of the "
      f"{len(timed)} shapes" + ("." if not misses else "; not on " + "; ".join(
          f"{shape_name(sh)}, where {chosen} took {ms:.4f} ms and {best} {best_ms:.4f} ms "
          f"({100 * (1 - best_ms / ms):.1f}% less)" for sh, chosen, ms, best, best_ms in misses) + "."))

# %% [markdown]
# **The result.** `gl.sgemm` against cuBLAS per shape, single calls and back to back; hatched:
# host-bound. Near-1000 sizes: Lab notes.

# %%
shape_suite.pct_figure(rec);

# %%
mean, kept, left_out = shape_suite.back_to_back_geomean(rec)
lo, hi = (f(kept, key=lambda r: r.pct_cublas_back_to_back) for f in (min, max))
ahead = [r for kind, r, _ in shape_suite.unexplained(rec) if kind == "ahead"]  # over 110%, unexplained
rest = [r.pct_cublas_back_to_back for r in kept if r not in ahead]
without = f"; {math.exp(sum(map(math.log, rest)) / len(rest)):.0f}% without the {len(ahead)} over 110%" if ahead and rest else ""
print(f"Over the {len(kept)} shapes where neither caller was host-bound, gl.sgemm ran at {mean:.0f}% of cuBLAS back "
      f"to back (geometric mean{without}), from {lo.pct_cublas_back_to_back:.0f}% ({shape_name(lo.shape)}) to "
      f"{hi.pct_cublas_back_to_back:.0f}% ({shape_name(hi.shape)}" + (": Lab notes)." if hi.pct_cublas_back_to_back > 110 else ")."))
if not left_out:
    print("No shape was host-bound.")
for r in left_out:
    found = [shape_suite.host_bound_evidence(rec, r, who) + (shape_suite.WHO[who],)
             for who in ("gl", "cublas") if shape_suite.host_bound(rec, r, who)]
    print(f"Left out, hatched: {shape_name(r.shape)}: " + "; ".join(
        f"{who} {issue:.0f} µs to issue, {per_call:.1f} µs per call" for _, issue, per_call, who in found)
          + (". Issue was timed in separate calls of the suite's run, so it can exceed the time per call; either way it"
             " took at least 80% of it." if any(i > t for _, i, t, _ in found)
             else ": issue took at least 80% of the time per call."))

# %% [markdown]
# ## 5 · Why cuBLAS is many kernels plus heuristics
#
# cuBLAS does all this at a larger scale ([REFERENCES.md](REFERENCES.md#lesson-11)). cuBLASLt,
# its lower-level matmul interface, "uses heuristics to pick the most suitable matmul kernel": it
# ranks candidates by estimated time and caches the choice, as `gl.sgemm` caches its plan. Its knobs are
# this lesson's: tile, split-K, pipeline stages, [block order](GLOSSARY.md#block-order), alignment,
# workspace. **CUTLASS**, NVIDIA's open-source kernel templates, builds a kernel per tile shape,
# alignment and more: for Hopper, "in the order of millions of kernels". Which kernel cuBLAS ran,
# from a profile (11b, section 6):

# %%
header, pairs = profile_comparison.ncu_versus_cublas()
profiled_on = re.search(r" run on (.+?), \d{4}-", header).group(1)
picked = [(call.split()[0], profile_comparison.kernel_label(k["kernel"]).split("tiles ")[-1])
          for call, k in pairs if call.endswith(" cublas")]
print(f"cuBLAS on the {profiled_on}: " + "; ".join(f"{tiles} tiles at {shape}" for shape, tiles in picked)
      + (": a kernel per shape." if len({t for _, t in picked}) == len(picked) else "."))

# %% [markdown]
# ## Exercise 11-split-k: write split-K
#
# Write both halves of split-K on lesson 01's one-thread-per-element kernel. The workspace
# `W[z, row, col]` holds part z's sums.
#
# 1. In `sgemm_partial(A, B, W)`, give layer z = `cuda.blockIdx.z` of s = `cuda.gridDim.z` its chunk
#    of k: with chunk = ceil(K / s), k from z x chunk up to min(K, (z + 1) x chunk) - 1.
# 2. Write `splitk_reduce(W, C, alpha, beta)`: one thread per element of C; C = alpha x (W[0] + W[1] +
#    ...) + beta x C, reading C only when beta != 0 (with beta == 0, C may hold NaN).
#
# The check launches both on 16 x 16 blocks covering C (s layers for `sgemm_partial`),
# compares C and each part of W with float64 sums, and reads the access log: each part reads only
# its chunk, C only when beta != 0, all coalesced.

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
# * **Edges cost.** 16-byte loads need aligned rows; a large product can pay for padded copies.
# * **A call costs host time.** Compare kernels back to back, host-bound shapes left out.
# * **Fill the GPU.** When C has fewer tiles than slots, split K.
# * **Choose per shape**, then check the choice by timing every plan.
# * **cuBLAS is the same idea at scale.**

# %% [markdown]
# ## Sources and further reading
#
# * No source article covers this lesson ([REFERENCES.md](REFERENCES.md#source-articles)); NVIDIA's
#   documentation does: [lesson 11's reading](REFERENCES.md#lesson-11).
# * Terms: the [glossary](GLOSSARY.md). Experiments: [11b](11b_what_we_tried.ipynb).

# %% [markdown]
# ## Lab notes
#
# * Why split-K sums into a workspace, not with [atomic adds](GLOSSARY.md#atomic-add) into C: the
#   workspace gives the same sum, bit for bit, on every call (floating-point addition is not
#   associative, and atomics add in whatever order blocks finish), and C needs no pass that scales
#   it by beta first.
# * The model charges the split-K reduction (s + 2) x M x N floats even when beta == 0 and C is not
#   read.
# * The wide kernel splits K like the any-shape kernel (`TileConfig(split_k=True)`, lesson 07).
# * The dispatch model is blind to L2 reuse, the clock and Python. Its plans' tile sizes are
#   (128 x 128, 64 x 128, 128 x 64, 64 x 64), its splits of K 1, 2, 3, 4, 6, 8, 12 or 16 ways.
# * Section 2's issue times: 10 batches of 20 calls at four sizes for each caller. Section 4's
#   host-bound line takes both its numbers from the shape suite's run, from two parts of it: the
#   issue time measured as section 2's, at the nearest square size, and the time per call from
#   CUDA events around calls back to back. Two measurements need not add up: at 512^3 cuBLAS's
#   issue time (41 µs) exceeds its time per call (28.3).
# * The copy kernel (section 1) loops each block over rows: a grid has at most 65,535 blocks in y.
# * Section 1's two misaligned views of A (20 x 12 x 32) run the any-shape plan, not the padded
#   one: on a product that small, the padded plan's copy launch (5 µs in the model) outweighs the
#   any-shape kernel's slower rate.
# * The next cell prints the shape suite's provenance. The probes of 11b and the profile of section 5
#   ran on an H100, except 11b's allocation probe (H200).
# * The odd shape's parts (section 1) come from other runs than this notebook's: the copies and
#   the stores from kernels timed alone (`experiments/shape_classes`, its README). Why C's
#   one-float stores cost 0.1 ms was not measured; a warp-wide one-float store spreads its 32
#   floats over 16 or more 32-byte sectors, a quarter of each, where a 16-byte store fills 16 sectors: C
#   takes about four times the store transactions.
# * The model charges a wave by its busiest SM, so 4096^3's last, part-filled wave (3.88 waves)
#   counts as a full one: it estimates its own calibration shape 3% high (2.912 ms against 2.82).
#   The Predict's ratio cancels this. Rates solved so that the model reproduces each calibration
#   square rank the suite's timed plans worse (`experiments/shape_classes`, `wave_rates.py`), so the
#   model keeps the calibrated ones.
# * The model's 5 µs per launch is an assumed gap on the GPU between kernels (`dispatch.py`), not
#   section 2's issue time on the host.
# * The any-shape kernel's main loop compiled offline (`experiments/shape_classes/sass_loop.py`;
#   the next cell): where its extra instructions are. What its spills cost on their own, and why it
#   issues less often, was not measured.
# * The copy kernel's first form moved one float per thread, read and written, and ran at a third
#   of the float4 copy's rate the model charges; writing four floats with one 16-byte store reaches
#   it (`experiments/shape_classes`, the padded-parts probe).
# * Sizes near 1000: at 999 x 1001 x 1003 and 1023 x 1021 x 1025 the plan is padded 128x128 split 4,
#   the two copies, the split kernel (the wide kernel, K split 4 ways) and the
#   [reduction](GLOSSARY.md#split-k): four launches when
#   section 4's suite ran it at 68% and 72% of cuBLAS. Two changes since, timed launch by launch
#   under [Nsight Compute](GLOSSARY.md#ncu) at 999 x 1001 x 1003 (`experiments/shape_classes`, the
#   near-1000 probe): the one-float reduction took 16.3-16.6 µs, and now, reading the partial sums
#   16 bytes at a time, 7.9-8.1 µs; the copies took 4.7-4.9 µs each, and now 6.5-6.6 µs from one
#   launch. Under the profiler the three launches now sum to 66 µs, the four before 78. [Back to back](GLOSSARY.md#single-call)
#   in that run, `gl.sgemm` took 63 µs against 76 for the four launches of before and cuBLAS's 51: 81%
#   of cuBLAS, 85% at 1023 x 1021 x 1025; the split kernel alone took 50 µs. Issuing the call took
#   the host 29 µs, under half of the 63: the GPU sets the pace.
# * Two runs, two commits: the shape suite's record (its commit in the next cell's first line) and
#   this notebook's GPU run (the commit printed under its imports). In both the padded plan made its
#   copies in two launches, so section 1's table ("now" in its title means that GPU run) and the
#   suite's 0.177 ms come from then; the one launch that section 1's Predict describes came later.
#   The Predict's cell and the Why's cell after it were computed again without a GPU, from the
#   recorded model and probes, once the model charged one copy launch: its estimate drops 5 µs,
#   small next to the 0.177 ms measured.
# * Single calls against their issue time plus their time back to back, every shape:
#   [11b](11b_what_we_tried.ipynb) section 1; the next cell lists any that took over twice their
#   time back to back, or says there are none.
# * Where `gl.sgemm` ran more than 10% ahead of cuBLAS back to back (the next cell; section 4's
#   120% at 12288 x 12288 x 256), no measurement here explains it: which kernel cuBLAS chose there
#   was not recorded.
# * Everything else (the call-cost table in full, the launch probe, the 16-byte reduction, split-K in
#   one launch, the profile next to cuBLAS, larger tiles, cp.async stages, the transpose for every
#   shape) is in [11b · what we tried](11b_what_we_tried.ipynb).

# %%
print(f"shape suite: {suite_record.label(rec)}, commit {rec.git_commit}, `{suite_record.command(rec)}`")
loops = suite_record.main_loops()  # offline sm_90 compile: two slices of BK = 8, 1,024 FFMAs per thread
if loops:
    la, lw = loops["any_shape"], loops["wide"]
    more = {k: la.get(k, 0) - lw.get(k, 0) for k in ("LDG", "STS", "spill", "other")}
    print(f"any_shape's main loop, compiled offline: {sum(la.values()):,} instructions per {la['FFMA']:,} FFMAs against "
          f"{sum(lw.values()):,}: {more['LDG']:+} global loads, {more['STS']:+} shared stores, {more['spill']:+} spill "
          f"accesses, {more['other']:+} for addresses, predicates and constants.")
print(f"dispatch model in use here: {model.source}")
unexplained = shape_suite.unexplained(rec)
if not any(kind == "ahead" for kind, _, _ in unexplained):
    print("no shape ran over 10% ahead of cuBLAS back to back")
if not any(kind == "single" for kind, _, _ in unexplained):
    print("no single call took over twice its time back to back")
for kind, r, who in unexplained:
    if kind == "ahead":
        print(f"{shape_name(r.shape)}: gl.sgemm at {r.pct_cublas_back_to_back:.0f}% of cuBLAS back to back")
    else:
        one, b2b = getattr(r, f"single_{who}"), getattr(r, f"back_to_back_{who}")
        print(f"{shape_name(r.shape)}: one {shape_suite.WHO[who]} call {one.median_ms:.3f} ms, "
              f"{one.median_ms / b2b.median_ms:.1f}x its time back to back")
