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
# # 06 · Bank conflicts, padding and warp shapes
#
# **Where we are.** The [limiter model](GLOSSARY.md#limiter-model), on the
# [limiter run](GLOSSARY.md#limiter-run), names what binds lesson 05's `vec`:

# %%
import gemm_lessons as gl  # first: it chooses the GPU, or numba's CUDA simulator when there is none
from gemm_lessons.model import counting
from gemm_lessons.model.limiter import WHAT
from gemm_lessons.teaching import exercises, figures, limiter_table, measure_step
from gemm_lessons.instruments import bank_model, shared_tracer
from gemm_lessons.instruments.compiler_facts import blocks_per_sm
from gemm_lessons.kernels import ladder
from gemm_lessons.records import results
from gemm_lessons.core.float4 import load4, store4
from gemm_lessons.core.unroll import static, static_range, unrolled
import functools
import matplotlib.pyplot as plt
import numpy as np
from numba import cuda, float32
# %matplotlib inline
print(gl.banner())

prev = limiter_table.why(["vec"])  # the limiter run: every rung timed and profiled on one GPU
r = prev.row("vec")
first, second = sorted(r.ceilings_ms, key=r.ceilings_ms.get, reverse=True)[:2]
print(f"vec at 4096^3 on the {prev.device}: {r.measured_ms:.2f} ms, {2 * 4096**3 / r.measured_ms / 1e9:.1f} TFLOPS. "
      f"Binding ceiling: {WHAT[first].split(' (')[0]}, {r.ceilings_ms[first]:.2f} ms on its own; next, "
      f"{WHAT[second].split(' (')[0]}, {r.ceilings_ms[second]:.2f} ms.")

# %% [markdown]
# This lesson removes `vec`'s wasted [wavefronts](GLOSSARY.md#wavefront).
#
# ## Idea: 32 banks, served in phases
#
# Shared memory has 32 [banks](GLOSSARY.md#bank) of 4-byte words (byte `a` is in bank
# `(a // 4) % 32`), each delivering one word per cycle. A warp's access is served in
# [phases](GLOSSARY.md#phase) of at least one wavefront (one pass of shared memory): one phase
# of 32 lanes for 4-byte accesses (`LDS.32`, the SASS's `LDS`), two of 16 for 8-byte
# (`LDS.64`), four of 8 for 16-byte (`LDS.128`: 8 x 16 bytes, one word per bank).
#
# Lanes reading the *same* word share it (a [broadcast](GLOSSARY.md#broadcast)); a phase whose
# lanes read n *distinct* words of one bank takes n wavefronts (an
# [n-way bank conflict](GLOSSARY.md#bank-conflict)). `bank_model.wavefronts` applies them to
# source article [[3]](REFERENCES.md#seed-002)'s cases:

# %%
# NBVAL_CHECK_OUTPUT
lanes = range(32)
examples = {
    "LDS.32, lane l reads word l": ([4 * l for l in lanes], 4),
    "LDS.32, stride 2 words": ([8 * l for l in lanes], 4),
    "LDS.32, all lanes one word (broadcast)": ([0] * 32, 4),
    "LDS.32, a column of a 32x32 float tile": ([128 * l for l in lanes], 4),
    "LDS.32, a column of a 32x33 tile (padded)": ([132 * l for l in lanes], 4),
    "LDS.64, lane l reads words 2l, 2l+1": ([8 * l for l in lanes], 8),
    "LDS.128, lane l reads words 4l..4l+3": ([16 * l for l in lanes], 16),
}
for name, (addrs, width) in examples.items():
    a = bank_model.wavefronts(addrs, width)
    print(f"{name:<44} {a.wavefronts:>2} wavefronts (ideal {a.ideal}), {a.degree}-way")

# %% [markdown]
# ## Warp shapes in the outer product
#
# At each [k-step](GLOSSARY.md#k-step) a `vec` thread reads its 8 columns of the B tile with two
# `LDS.128`. `vec`'s block is 16 x 16 threads; which 8 share a phase depends on the warp's
# shape:
#
# * **2 x 16, lanes along columns** (`vec`): lane l is thread row l // 16, column l % 16; a
#   phase's 8 threads start 32 bytes apart and span 256 bytes: two words per bank, 2-way.
# * **4 x 8, lanes along rows**: lane l is thread row l % 4, column l // 4; a phase covers 2
#   thread columns, each column's 4 threads reading one address (broadcast): no conflict.
# * **2 x 16, each 8x8 tile split into four 4x4**: a thread owns columns `c..c+3` and
#   `c+64..c+67`; a phase's 8 threads read 128 contiguous bytes: no conflict.
#
# `vec_split` keeps 2 x 16 and splits the tile (4 x 8 warps: lesson 08, Lab notes).
#
# The [bank tracer](GLOSSARY.md#bank-tracer) runs one block on the CUDA simulator and prices
# each warp-wide shared access by the rules above (`merge=("ld",)`: `load4`'s four simulated
# 4-byte loads as one `LDS.128`), plus a measured, undocumented *paired-load rule* (Lab notes):
# an `LDS.128` in which every lane shares its 16 bytes with a partner lane takes 2 wavefronts,
# not 4 (`rule="paired"`), as `vec`'s `sAT` reads do.

# %%
shape = (128, 128, 16)  # one 128 x 128 block, K = 16: two slices of BK = 8
traces = {name: shared_tracer.trace_rung(name, shape, merge=("ld",)) for name in ("vec", "vec_split")}
traced = {}
for name, t in traces.items():
    ld, st = t.totals("ld", rule="paired"), t.totals("st")
    traced[name] = ld["wavefronts"] + st["wavefronts"]
    print(f"{name:<10} loads: {ld['instructions']} instructions, {ld['wavefronts']} wavefronts "
          f"({ld['conflicts']} from conflicts); stores: {st['instructions']} instructions, {st['wavefronts']} wavefronts "
          f"(ideal {st['ideal']})")
print("Both kernels' stores: " + "; ".join(
    f"{arr} {sum(i.cost.wavefronts for i in ins)} wavefronts, {max(i.cost.degree for i in ins)}-way" for arr, ins in
    ((a, [i for i in t.instructions if i.op == "st" and i.array == a]) for a in ("sAT", "sB"))))

# %%
maps = {"vec (2 x 16, lanes along columns), traced": traces["vec"].first("ld", array="sB").addresses,
        "4 x 8, lanes along rows (bank_model's addresses)": bank_model.warp_layout_addresses((4, 8), lanes_along="rows"),
        "vec_split (2 x 16, 8x8 split into four 4x4), traced": traces["vec_split"].first("ld", array="sB").addresses}
fig, ax = plt.subplots(3, 1, figsize=(13, 8.5), dpi=85)  # dpi: a smaller picture in the saved notebook
for a, (label, addresses) in zip(ax, maps.items()):
    doc, paired = (bank_model.wavefronts(addresses, 16, paired_loads=p).wavefronts for p in (False, True))
    figures.bank_map(addresses, 16, ax=a, title=f"{label}: {doc} wavefronts (documented rules), {paired} (paired-load rule)")
plt.tight_layout()

# %% [markdown]
# *Warp 0's first 16-byte read of `sB[k, ...]`: a column per bank, a row per 128 bytes, each
# access labelled with its lanes ("0-3": lanes 0 to 3). Colour: the phase; red: a word sharing
# its bank with another of its phase.*
#
# The split leaves the staging stores' conflicts; padding `sAT`'s rows would fix its 2-way
# ones (the exercise; totals broken down: Lab notes). **The GPU agrees:**
# [Nsight Compute](GLOSSARY.md#ncu) (ncu) counted the kernels on a small problem
# (`tools/bank_truth.py`; float64 rows: a test kernel's 8-byte reads):

# %%
truth = results.load_banks(prev.device)  # results/banks-<device>.json, from tools/bank_truth.py
cases = ["sgemm vec", "sgemm vec_split", "float64 consecutive", "float64 stride 2"]
print(f"{'case':<20}{'problem':>11}  {'ld instructions':>17}  {'ld wavefronts':>15}  {'st wavefronts':>15}   (ncu / tracer)")
for row in (r for r in truth.rows if r.case in cases):
    n, t = row.ncu, row.tracer
    print(f"{row.case:<20}{'x'.join(map(str, row.problem)):>11}  {n['ld_instructions']:>8}/{t['ld_instructions']:<8}"
          f"  {n['ld_wavefronts']:>7}/{t['ld_wavefronts_paired']:<7}  {n['st_wavefronts']:>7}/{t['st_wavefronts']:<7}")

# %%
rows = [r for r in truth.rows if r.case in cases]
worst = max(abs(r.ncu[k] / r.tracer[k2] - 1) for r in rows for k, k2 in
            [("ld_instructions", "ld_instructions"), ("ld_wavefronts", "ld_wavefronts_paired"),
             ("st_wavefronts", "st_wavefronts")])
worst_all = max(abs(r.ncu[k] / r.tracer[k2] - 1) for r in truth.rows for k, k2 in
                [("ld_instructions", "ld_instructions"), ("ld_wavefronts", "ld_wavefronts_paired"),
                 ("st_wavefronts", "st_wavefronts")])
print(f"ncu ({truth.device}) and the tracer differ by at most {100 * worst:.1f}% for these four cases; "
      f"up to {100 * worst_all:.1f}% on the other kernels (Lab notes).")

# %% [markdown]
# ## Predict
#
# The model (lesson 04): per cycle an SM's FP32 lanes do 4 [warp-FFMAs](GLOSSARY.md#warp-fma),
# [issue](GLOSSARY.md#issue) 4 warp-instructions, shared memory 1 wavefront; the unit needing
# most cycles *binds*. The limiter run's profiler counted both kernels at 4096^3 (beside:
# the tracer):

# %%
work = {rung: limiter_table.counts(rung) for rung in ("vec", "vec_split")}  # one launch at 4096^3 each
warp_ffmas = 256 // 32 * shape[2] * 64  # the traced block: 8 warps x 16 k-steps x 64 FFMA
for rung, n in work.items():
    print(f"{rung:<10} {n['warp_instructions'] / n['warp_ffma']:.3f} warp-instructions and "
          f"{n['shared_wavefronts'] / n['warp_ffma']:.3f} wavefronts per warp-FFMA "
          f"(tracer: {traced[rung] / warp_ffmas:.3f} wavefronts)")

# %% [markdown]
# The split changes only address constants, not instructions. **Your prediction:** which unit
# binds each rung, and how many times faster than `vec` will `vec_split` run at 4096^3?

# %%
my_speedup = None  # your prediction: replace None with a number

# %% [markdown]
# The model's answer:

# %%
binding = {}
for rung, n in work.items():
    cycles = {"FP32": 1 / n["ffma_per_cycle"],
              "issue": n["warp_instructions"] / n["warp_ffma"] / n["issue_per_cycle"],
              "shared": n["shared_wavefronts"] / n["warp_ffma"] / n["wavefronts_per_cycle"]}
    binding[rung] = max(cycles.items(), key=lambda kv: kv[1])
    print(f"{rung:<10} cycles per warp-FFMA: " + ", ".join(f"{k} {v:.3f}" for k, v in cycles.items())
          + f" -> {binding[rung][0]} binds")
model_speedup = binding["vec"][1] / binding["vec_split"][1]
cut = work["vec"]["shared_wavefronts"] / work["vec_split"]["shared_wavefronts"]
print(f"Model: vec_split {model_speedup:.2f}x as fast as vec. Wavefronts fall {cut:.2f}x, but issue was "
      f"right behind, and the instructions stay.")

# %% [markdown]
# ## The kernel
#
# Lesson 05's kernel: `split=True` sets `ROW_GAP = COL_GAP = 64` and `SPAN = 4`, so a thread
# owns rows (and columns) `t..t+3` and `t+64..t+67`.

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

my_vec, my_vec_split = make_sgemm_vec(), make_sgemm_vec(split=True)
gl.check_all(functools.partial(vec.sgemm, kernel=my_vec_split), name="vec_split",
             shapes=[(68, 44, 36, 1.0, 0.0), (36, 72, 20, 1.5, -0.5)] if gl.SIMULATOR else
                    [(68, 44, 36, 1.0, 0.0), (516, 1028, 260, -1.0, 0.5), (4, 4, 4, 2.0, 1.0)])

# %% [markdown]
# ## Measure

# %%
table = measure_step.compare({"vec_split": functools.partial(vec.sgemm, kernel=my_vec_split),
                              "vec": functools.partial(vec.sgemm, kernel=my_vec)}, size=(4096, 4096, 4096))
table

# %%
exercises.compare_prediction(my_speedup, table.speedup("vec_split", "vec"), "vec_split vs vec at 4096^3 (times faster)",
                             table.source)

# %% [markdown]
# ## Why: the limiter model
#
# Busy shares below (the limiter run's) name their unit: the table shows each rung's busiest
# (for `vec`, shared memory), the text issue's too. *Short scoreboard* is a
# [stall reason](GLOSSARY.md#stall-reasons) (table: Lab notes): a warp waiting for a
# shared-memory result.

# %%
why = limiter_table.why(["vec", "vec_split", "cublas"], measured=table, decimals=2)
why

# %%
rv, rs = why.row("vec"), why.row("vec_split")
short = limiter_table.SHORT
agree = [x.rung for x in (rv, rs) if x.agrees]
print(f"Measured/predicted is {rv.ratio:.2f} and {rs.ratio:.2f}: the model assumes the binding unit (the profiler's "
      f"busiest for {' and '.join(agree) if agree else 'neither rung'}) always busy; "
      f"it was {rv.utilization_pct[rv.binding]:.0f}% and {rs.utilization_pct[rs.binding]:.0f}% busy (stalls: barriers, "
      "waits for loads).")
u_v, u_s = rv.utilization_pct["issue"], rs.utilization_pct["issue"]
gain, model_gain = rv.measured_ms / rs.measured_ms, rv.predicted_ms / rs.predicted_ms
prof_06 = gl.profile({"vec": ladder.SGEMM["vec"], "vec_split": ladder.SGEMM["vec_split"]}, size=(4096, 4096, 4096),
                     lesson="06")  # Nsight Compute's counters for both kernels (the table: Lab notes)
waits = {n: dict(prof_06.top_stalls(n, 10)).get("short_scoreboard", 0) for n in ("vec", "vec_split")}
print(f"vec_split: {short[rs.binding]} binds; the model predicts {100 * (model_gain - 1):+.0f}% over vec, measured "
      f"{100 * (gain - 1):+.0f}%. With {100 * (1 - 1 / cut):.0f}% "
      f"fewer wavefronts, warps wait less on shared loads (short scoreboard {waits['vec']:.0f}% -> {waits['vec_split']:.0f}% "
      f"of cycles, {prof_06.source.split(' (')[0].split(',')[0]}) and issue more often (issue busy {u_v:.0f}% -> "
      f"{u_s:.0f}% in the limiter run, {u_s / u_v:.2f}x): with the instruction count unchanged, the time falls with "
      f"the issue rate ({gain:.2f}x in this run).")
st = {n: traces[n].totals("st") for n in traces}
print(f"The stores' conflicts are {st['vec_split']['wavefronts'] - st['vec_split']['ideal']:,} of vec_split's "
      f"{traced['vec_split']:,} wavefronts per traced block; shared memory no longer binds: removing them buys nothing.")

# %% [markdown]
# The next rungs must cut instructions: cuBLAS's issue ceiling is lower than `vec_split`'s.
#
# ## Padding, and why the float4 GEMM does not pad by one
#
# [Padding](GLOSSARY.md#padding) each row by one float shifts the next row one bank: a column
# read becomes conflict-free (the 32x33 case). A float4 GEMM cannot pad by one: rows of 129
# floats start at byte 516k, on a 16-byte boundary only when k is a multiple of 4, so no
# `LDS.128`. Padding both tiles' rows by 4 floats keeps them aligned but grows shared memory
# per block; near a boundary, that costs a whole block per SM (source article
# [[4]](REFERENCES.md#seed-003); Lab notes).

# %%
# NBVAL_CHECK_OUTPUT
addrs = [4 * (129 * 1 + 4 * l) for l in range(32)]  # row k = 1 of a B tile padded to 129 floats
try:
    bank_model.wavefronts(addrs, 16)
except ValueError as e:
    print("16-byte access on a padded row:", e)
vec_facts = results.load().compiler["vec"]  # the compiler's facts of vec in the benchmark's record
regs, smem = vec_facts["registers"], vec_facts["shared_bytes"]
for label, regs, smem in [("vec, unpadded", regs, smem), ("vec, rows padded by 4 floats", regs, smem + 2 * 8 * 4 * 4)]:
    print(f"{label:<29} -> %d blocks per SM (%s)" % blocks_per_sm(regs, smem, 256))

# %% [markdown]
# `vec`'s registers decide its occupancy: padding costs it nothing. Nor would it fix the `sB`
# reads, whose lanes share one row.
#
# ## Exercise 06-conflict-free
#
# Lesson 05's exercise kernel (64 x 64 tile, 64 threads) has `vec`'s two 2-way conflicts:
#
# * **stores into `sAT`**: rows `d` and `d + 4` of a column share a bank;
# * **loads from `sB`**: a thread's 8 columns are side by side (`col_of(j) = tc * 8 + j`), so
#   a phase's 8 lanes read 32 bytes apart.
#
# Remove both, keeping the loads 16 bytes wide (the tracer merges 4 consecutive, aligned reads
# into one; the SASS's `LDS.128` count is reported, not judged): choose `PAD`, the padding of
# `sAT`'s rows (rows must start on 16-byte boundaries), and rewrite `col_of(j)`, the tile
# column of a thread's result column `j = 0..7` (it places the `sB` loads and C stores).

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
# ## Takeaway
#
# * A warp access is served in phases of 32, 16 or 8 lanes (4-, 8-, 16-byte accesses), each
#   costing as many wavefronts as its busiest bank holds distinct words.
# * Fixes: pad rows for column reads (by multiples of 4 floats for 16-byte loads), a 4 x 8
#   warp, or split a thread's 8x8 tile into four 4x4.
# * `vec_split` removes a third of `vec`'s wavefronts; issue binds now. It beats the model's
#   +2%: warps stall less and issue more often.

# %% [markdown]
# ## Sources and further reading
#
# * Source articles: [[3]](REFERENCES.md#seed-002), [[1]](REFERENCES.md#seed-000), [[4]](REFERENCES.md#seed-003)
#   ([origins and coverage](REFERENCES.md#source-articles)).
# * Read next: [REFERENCES.md, lesson 06](REFERENCES.md#lesson-06).
# * Terms: the [glossary](GLOSSARY.md) and the [primer](00a_primer.ipynb).

# %% [markdown]
# ## Lab notes
#
# **The paired-load rule.** The documented rules give 4 wavefronts for every `LDS.128`; the H100
# and H200 counted 2 where every lane n shares its address with a partner, lane n XOR 1 (or
# every lane with n XOR 2). Shared memory returns 128
# bytes, one register per lane, per wavefront; an answer in NVIDIA's developer forum
# (["Unexpected shared memory bank conflict"](https://forums.developer.nvidia.com/t/unexpected-shared-memory-bank-conflict/77228))
# says the return is then packed two lanes per register, for compute capability 7.0-7.5.
#
# **The occupancy cliff.** Near the shared-memory boundary a block is lost (256-thread blocks;
# an SM has 228 KiB and reserves 1 KiB per block: 5 x (44 + 1) KiB fit, 5 x (45 + 1) do not):

# %%
for label, regs, smem in [("44 KiB, 32 registers", 32, 44 * 1024), ("45 KiB, 32 registers", 32, 45 * 1024)]:
    print(f"{label:<29} -> %d blocks per SM (%s)" % blocks_per_sm(regs, smem, 256))

# %% [markdown]
# **The traced totals, broken down.** Loads, per warp and k-step: two `sAT` reads of 2
# wavefronts each (paired-load rule), two `sB` reads of 8 (`vec`) or 4 (`vec_split`), as in the
# map; over 8 warps x 16 k-steps, 128 x (4 + 16) = 2,560 and 128 x (4 + 8) = 1,536 wavefronts.
# Stores, per warp and slice: four 4-byte stores into each tile. `sAT`'s transposing stores are
# 2-way (lanes 2t and 2t+1 write rows d and d + 4 of one column: one bank), `sB`'s scalar stores
# 4-way (lanes 16 bytes apart).
#
# **Why `split` splits rows too.** Only so that one `SPAN` serves both: a phase's 8 lanes share
# a thread row, so their `sAT` reads are broadcasts either way.
#
# **Warp shape and reuse.** A 4 x 8 warp of 8x8-per-thread tiles covers 32 x 64 results, a
# 2 x 16 warp 16 x 128: the squarer one reads fewer distinct shared values per FMA, a higher
# compute-to-memory ratio $2/(1/x + 1/y)$ (lesson 04). The 4 x 8 lanes pair up: by the paired-load
# rule (not measured for this layout) it costs half of `vec_split`'s wavefronts.

# %%
# NBVAL_CHECK_OUTPUT
layouts = {"2 x 16, lanes along columns (vec)": dict(shape=(2, 16)),
           "4 x 8, lanes along rows": dict(shape=(4, 8), lanes_along="rows"),
           "2 x 16, 8x8 split into four 4x4 (vec_split)": dict(shape=(2, 16), split=True)}
for label, kw in layouts.items():
    addrs = bank_model.warp_layout_addresses(**kw)
    print(f"{label:<45} {bank_model.wavefronts(addrs, 16).wavefronts} wavefronts (documented rules), "
          f"{bank_model.wavefronts(addrs, 16, paired_loads=True).wavefronts} (paired-load rule)")
print(f"2/(1/x+1/y) of a warp's results: 32 x 64 -> {counting.compute_to_memory_ratio(32, 64):.2f}, "
      f"16 x 128 -> {counting.compute_to_memory_ratio(16, 128):.2f}")

# %% [markdown]
# **Every case of the ground-truth run**, with the documented rule's load wavefronts too. The
# transposes are lesson 09's kernels (`smem_padded` is 3% above the tracer); `sgemm smem_tile`
# (lesson 02) is the paired-load rule on another layout; "float64 broadcast" (every lane reads
# one float64) costs 1 wavefront per `LDS.64`, not 2: a measured broadcast rule.

# %%
print(f"{truth.device}, {truth.date[:10]}: ncu / tracer (documented rules) / tracer (paired-load rule)")
print(f"{'case':<28}{'problem':>12}{'blocks':>7}{'ld instr':>16}{'ld wavefronts':>34}{'st wavefronts':>20}")
for row in truth.rows:
    n, t = row.ncu, row.tracer
    print(f"{row.case:<28}{'x'.join(map(str, row.problem)):>12}{row.blocks:>7}{n['ld_instructions']:>8}/{t['ld_instructions']:<8}"
          f"{n['ld_wavefronts']:>10}/{t['ld_wavefronts']:<9}/{t['ld_wavefronts_paired']:<10}"
          f"{n['st_wavefronts']:>10}/{t['st_wavefronts']:<9}")

# %% [markdown]
# **Wavefronts the addresses do not explain.** The 32x32-thread transposes (and `vec_split`'s
# stores) show more wavefronts than the tracer (the table), and so do both GEMMs at 4096^3 (below).
# The addresses are the same in every block, yet the extras are not a multiple of the number of
# blocks; ncu counts every wavefront beyond the ideal as a "conflict", whatever delayed it.
# Contention between warps for the shared-memory pipeline is the hypothesis; it is not measured.

# %%
slices = (4096 // 128) ** 2 * (4096 // 8)  # blocks x slices of BK = 8 at 4096^3
per_slice = {name: traced[name] / (shape[2] // 8) for name in traced}  # the traced block at K = 16 has two slices
for name in ("vec", "vec_split"):
    prof = work[name]["shared_wavefronts"]
    print(f"{name:<10} at 4096^3: the limiter run's profiler {prof / 1e6:.1f} M wavefronts, the tracer scaled "
          f"to the grid {per_slice[name] * slices / 1e6:.1f} M ({100 * (prof / (per_slice[name] * slices) - 1):+.1f}%)")

# %% [markdown]
# **Stall reasons.** Nsight Compute's counters for both kernels at 4096^3
# ([stall reasons](GLOSSARY.md#stall-reasons): *short scoreboard* is a wait for a shared-memory
# result, *not selected* a ready warp waiting for its turn):

# %%
prof_06

# %% [markdown]
# **Across sizes.** The recorded benchmark (a third run, besides the limiter run and this
# notebook's) timed every [rung](GLOSSARY.md#rung) at four square sizes; the split's gain over
# `vec` at each:

# %%
from gemm_lessons.teaching import plots
plots.rung_versus_size("vec_split");
rec = results.load()
tf = {k: {r.M: r.gflops for r in plots.sgemm_rows(rec, k) if r.M == r.N == r.K} for k in ("vec", "vec_split")}
print("vec_split / vec: " + ", ".join(f"{n}^3 {tf['vec_split'][n] / tf['vec'][n]:.3f}x"
                                      for n in sorted(tf["vec"]) if n in tf["vec_split"]))

# %% [markdown]
# **Explore.** The widget redraws the bank map for other warp shapes, widths and paddings.

# %%
figures.bank_explorer()
