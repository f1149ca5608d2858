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
# # 08 · Warp tiles and tuning
#
# **Where we are.** Lesson 07's `dbuf`, on the [limiter run](GLOSSARY.md#limiter-run):

# %%
import gemm_lessons as gl  # first: it chooses the GPU, or numba's CUDA simulator when there is none
from gemm_lessons.model.limiter import WHAT
from gemm_lessons.teaching import exercises, figures, limiter_table, measure_step, plots
from gemm_lessons.instruments import bank_model, shared_tracer
from gemm_lessons.kernels import ladder
from gemm_lessons.kernels.sgemm import dbuf_first_attempt, warptile
from gemm_lessons.kernels.sgemm.warptile import TileConfig
from gemm_lessons.records import results
from gemm_lessons.records.schema import TuningRecord
from gemm_lessons.runs import tuning
from dataclasses import replace
import functools
import matplotlib.pyplot as plt
import numpy as np
# %matplotlib inline
print(gl.banner())

prev = limiter_table.why(["dbuf", "cublas"])  # the limiter run: every rung timed and profiled on one GPU
d = prev.row("dbuf")
first, second = sorted(d.ceilings_ms, key=d.ceilings_ms.get, reverse=True)[:2]
print(f"dbuf at 4096^3 on the {prev.device}: {d.measured_ms:.2f} ms, {2 * 4096**3 / d.measured_ms / 1e9:.1f} TFLOPS, "
      f"{100 * prev.row('cublas').measured_ms / d.measured_ms:.0f}% of cuBLAS. Binding ceiling: "
      f"{WHAT[first].split(' (')[0]}, {d.ceilings_ms[first]:.2f} ms on its own; next, "
      f"{WHAT[second].split(' (')[0]}, {d.ceilings_ms[second]:.2f} ms.")

# %% [markdown]
# ## Idea: block tile → warp tile → thread tile
#
# A block's BM x BN tile of C splits among its 8 warps as [warp tiles](GLOSSARY.md#warp-tile)
# of WM x WN, and a warp tile among its 32 lanes as TM x TN thread tiles (in 4x4 pieces). Lanes
# are row-major: lane `l` sits at `(l // LN, l % LN)` of an LM x LN grid, LM = WM / TM,
# LN = WN / TN. `dbuf`'s warp tiles are 16 x 128 (2 x 16 lanes); this lesson's rung,
# `warptile`, has squarer 32 x 64 ones (4 x 8 lanes):

# %%
fig, ax = plt.subplots(1, 2, figsize=(11, 5.5))
figures.warp_tiles(WM=16, WN=128, ax=ax[0])
figures.warp_tiles(WM=32, WN=64, ax=ax[1])
plt.tight_layout()

# %% [markdown]
# *Pale: a 128 x 128 block's 8 warps. In warp 0's tile, each lane's four 4x4 pieces, numbered
# by lane.*
#
# Per [k-step](GLOSSARY.md#k-step) a warp reads a value of A per row of its warp tile and one
# of B per column: 144 floats for 16 x 128, 96 for 32 x 64. Fewer distinct floats pay where one
# phase serves the whole warp, as with 4-byte loads (`LDS.32`): there 2 x 16 lanes' B reads are 2-way
# [bank conflicts](GLOSSARY.md#bank-conflict), 4 x 8's are not.
#
# ## Predict
#
# Lesson 06's [wavefronts](GLOSSARY.md#wavefront): an `LDS.128` is served a quarter warp (8
# lanes) at a time, one wavefront per conflict-free quarter, lanes reading one address sharing
# it ([broadcast](GLOSSARY.md#broadcast)); by the paired-load rule it takes 2, not 4, when every
# lane n reads the address of lane n XOR 1 (or n XOR 2). Per k-step a thread issues 64 FFMA, 2
# `LDS.128` of B and 2 of A (stored transposed, lesson 05: a 4x4 piece's 4 A values are
# adjacent). **Your prediction:** a warp's wavefronts per k-step with 2 x 16 lanes and with
# 4 x 8 (on paper), and `warptile`'s speed at 4096^3 as a multiple of `dbuf`'s.

# %%
my_speedup = None  # your prediction: replace None with a number

# %% [markdown]
# The model's answer: the [bank tracer](GLOSSARY.md#bank-tracer) prices warp 0's first loads
# in one simulated block of each kernel:

# %%
# NBVAL_CHECK_OUTPUT
WARPS, BK = 8, 8
print("first LDS.128 of A, of B: addresses per quarter warp (per warp) -> wavefronts")
for name in ("dbuf", "warptile"):
    t = shared_tracer.trace_rung(name, (128, 128, BK), merge=("ld", "st"))  # one block, one slice of K
    cost, seen = {}, []
    for tile, array in (("A", "sA0"), ("B", "sB0")):
        ins = t.first("ld", array)
        quarters = [len(set(ins.addresses[q:q + 8])) for q in range(0, 32, 8)]
        cost[tile] = ins.measured_cost.wavefronts  # the paired-load rule
        seen.append(f"{tile} {quarters} ({len(set(ins.addresses))}) -> {cost[tile]}")
    loads = t.totals("ld", rule="paired")["wavefronts"] // (WARPS * BK)
    stores = sum(i.cost.wavefronts for i in t.instructions if i.op == "st" and i.array in ("sA0", "sB0")) // (WARPS * BK)
    print(f"{name:<9} {'; '.join(seen)}; per k-step 2 x {cost['A']} + 2 x {cost['B']} = {loads}, "
          f"{loads + stores} with the stores")

# %% [markdown]
# 4 x 8's quarters read the same 8 B addresses, but quarters merge only by the paired-load
# rule, and lanes n and n XOR 1 read different B columns. Stores: a slice's staging, per
# k-step. The profiler agrees at 4096^3:

# %%
why_model = limiter_table.why(["dbuf", "warptile"])
for name in ("dbuf", "warptile"):
    n, r = limiter_table.counts(name), why_model.row(name)
    print(f"{name:<9} per warp-FFMA: {n['warp_instructions'] / n['warp_ffma']:.3f} instructions, "
          f"{n['shared_wavefronts'] / n['warp_ffma']:.3f} wavefronts; ceilings: issue {r.ceilings_ms['issue']:.2f} ms, "
          f"shared {r.ceilings_ms['shared']:.2f}")
model_speedup = why_model.row("dbuf").predicted_ms / why_model.row("warptile").predicted_ms
print(f"The tracer's {loads + stores} per 64 FFMA: {(loads + stores) / 64:.3f}. Model: warptile {model_speedup:.2f}x as fast as dbuf.")

# %% [markdown]
# Same instructions, so issue still binds, shared memory's ceiling below it: even 8 wavefronts
# (Lab notes) would buy no time.
#
# Lesson 06's 4 x 8 warp had *lanes along rows* (lane l at thread row l % 4, column l // 4),
# so its B reads pair. By `bank_model`, with `LDS.32` of B beside:

# %%
# NBVAL_CHECK_OUTPUT
lane_orders = {"2 x 16, row-major (dbuf)": (lambda l: l // 16, lambda l: l % 16),
               "4 x 8, row-major (warptile)": (lambda l: l // 8, lambda l: l % 8),
               "4 x 8, lanes along rows (lesson 06)": (lambda l: l % 4, lambda l: l // 4)}
for label, (row, col) in lane_orders.items():
    a, b = (bank_model.wavefronts([16 * f(l) for l in range(32)], 16, paired_loads=True).wavefronts for f in (row, col))
    b32 = bank_model.wavefronts([16 * col(l) for l in range(32)], 4).wavefronts  # one float of B per lane
    print(f"{label:<36} LDS.128 A {a}, B {b}: {2 * a + 2 * b} per k-step; LDS.32 B {b32}")

# %% [markdown]
# Lanes along rows pair B and unpair A: 12 again.
#
# ## The sweep
#
# A label lists the fields (`128x128x8` is BM x BN x BK): `stages` counts buffers, `pad` pads
# the A tile, `regs` is the [register cap](GLOSSARY.md#max-registers), `spread` stages the next
# slice float4 by float4 across the k-steps, `guard` is lesson 07's load guard (`if`, unnamed in
# labels, or clamped loads: `select`). `TileConfig.validate()` rejects what cannot work:

# %%
# NBVAL_CHECK_OUTPUT
for bad in [dict(WM=64, WN=64)]:
    try:
        TileConfig(**bad).validate()
    except ValueError as e:
        print("ValueError:", e)

# %% [markdown]
# `tuning.sweep(configs)` checks and times each valid configuration at 4096^3 with cuBLAS, in
# one run: a grid (four tile shapes, BK 8 or 16, one or two buffers) and single changes around
# `tuning.SWEEP_BASE`, `TileConfig()` with clamped loads, where the sweep began before `if` won
# (Lab notes; also how to read the grid). Grid cells compare with each other, not with the `if`
# kernels below.

# %%
RUN_SWEEP = False  # True: run the whole sweep here (a GPU only; several minutes)
if RUN_SWEEP and not gl.SIMULATOR:
    rows, where = tuning.sweep(tuning.lesson_configs()), "this run"
else:
    record = TuningRecord.read(results.course_path("tuning"))
    runs = len(record.runs)
    rows, where = record.rows, f"{record.device.name}, {record.date[:10]}, {runs} run{'s' if runs > 1 else ''}"
grid = {replace(tuning.SWEEP_BASE, **shape, BK=bk, stages=s) for shape in tuning.TILE_SHAPES for bk in (8, 16) for s in (1, 2)}
grid_rows = [r for r in rows if r.config and TileConfig(**r.config) in grid]
by_row = {}
for r in grid_rows:
    by_row.setdefault(tuning.tile_shape_and_cap(r.config), []).append(r)


def row_facts(cfg):
    """block / warp / thread tile (threads), register cap; registers, warps per SM"""
    rs = by_row[tuning.tile_shape_and_cap(cfg)]
    span = lambda v: f"{min(v)}" if min(v) == max(v) else f"{min(v)}-{max(v)}"  # noqa: E731
    return (f"{tuning.tile_shape_and_cap(cfg)}\n{span([r.registers for r in rs])} registers, "
            f"{span([r.blocks_per_sm * r.threads // 32 for r in rs])} warps/SM")


tuning.heatmap(grid_rows, x=tuning.depth_buffers, y=row_facts,
               title=f"SGEMM 4096^3, clamped loads: TFLOPS and % of cuBLAS ({where})");


# %% [markdown]
# A single change alters one field of the base; it counts if over 1% with
# [p10-p90](GLOSSARY.md#p10-p90) ranges apart (why 1%: Lab notes). Beside each, the compiler's
# facts that moved:

# %%
SAME = 1.0  # %: a smaller change is a tie
timed = [r for r in rows if r.config and r.gflops]
base = next(r for r in timed if TileConfig(**r.config) == tuning.SWEEP_BASE)
FACTS = {"registers": "registers", "local_bytes": "spill bytes", "blocks_per_sm": "blocks/SM"}
verdicts, changed = {}, {}
print(f"base (TileConfig() with clamped loads): {base.gflops / 1e3:.2f} TFLOPS; "
      + ", ".join(f"{getattr(base, f)} {what}" for f, what in FACTS.items()))
for fields_, before in tuning.CHANGES:
    for a, b in tuning.single_changes(timed, fields_, before):
        if base in (a, b):
            other = b if a is base else a
            names = (fields_,) if isinstance(fields_, str) else fields_
            change = f"{'x'.join(names)} -> {'x'.join(str(other.config[f]) for f in names)}"
            pct = tuning.change_pct(base, other)
            verdicts[change], changed[change] = ("tie" if abs(pct) <= SAME or not tuning.ranges_apart(base, other)
                                                 else "faster" if pct > 0 else "slower"), other
            moved = [f"{what} {getattr(base, f)} -> {getattr(other, f)}" for f, what in FACTS.items()
                     if getattr(base, f) != getattr(other, f)]
            print(f"  {change:<22} {pct:+6.1f}%  {verdicts[change]:<6}  {', '.join(moved) or 'same facts'}")
faster = [c for c, v in verdicts.items() if v == "faster"]
print(f"The warp tile: {'a tie, as the model predicts' if verdicts['WMxWN -> 16x128'] == 'tie' else verdicts['WMxWN -> 16x128'] + ', where the model predicts a tie'}. "
      f"Faster than the base: {', '.join(faster) or 'no change'}.")

# %% [markdown]
# Without the cap, a block per SM is lost; one buffer is lesson 07's loss; BK 16 spills 80 bytes;
# `spread` moves no fact (Lab notes).
#
# **The sweep found nothing faster than `dbuf`**: 16x128 gives `dbuf` with clamped loads (a
# tie); the one faster change restores `dbuf`'s own guard, `if`. The last rung keeps the
# 32 x 64 warp tile, free here and the shape [tensor-core](GLOSSARY.md#tensor-core) kernels
# build on ([CUTLASS](REFERENCES.md#lessons-07-08)).
#
# ## The kernel: `TileConfig()`
#
# `TileConfig()` is `warptile`, the kernel behind `gl.sgemm` (edit the fields to try another):

# %%
best = tuning.best(rows)
print(f"fastest in the sweep: {best.label}" + (" = TileConfig()" if TileConfig(**best.config) == TileConfig() else
                                                f"; TileConfig() is {TileConfig().short()}"))
mine = TileConfig()  # BM=128, BN=128, BK=8, WM=32, WN=64, TM=8, TN=8, stages=2, pad_a=4, guard="if", max_registers=128
old = dbuf_first_attempt.DBUF_CONFIG
print("warptile = dbuf with " + ", ".join(f"{f} {getattr(old, f)} -> {getattr(mine, f)}"
                                          for f in TileConfig.__dataclass_fields__ if getattr(old, f) != getattr(mine, f)))
my_warptile = warptile.kernel_for(mine.validate())  # validate() returns the configuration, or raises

# %% [markdown]
# ## Check

# %%
gl.check_all(functools.partial(warptile.sgemm, kernel=my_warptile), name="warptile",
             shapes=[(68, 44, 36, 1.0, 0.0), (36, 72, 20, 1.5, -0.5)] if gl.SIMULATOR else
                    [(68, 44, 36, 1.0, 0.0), (516, 1028, 260, -1.0, 0.5), (4, 4, 4, 2.0, 1.0)])

# %% [markdown]
# ## Measure

# %%
course_record = results.load(results.COURSE_DEVICE)  # on the simulator: the H200's recorded benchmark
kernels = {"warptile": functools.partial(warptile.sgemm, kernel=my_warptile), "dbuf": ladder.SGEMM["dbuf"]}
table = measure_step.compare(kernels, size=(4096, 4096, 4096), record=course_record)
table

# %%
exercises.compare_prediction(my_speedup, table.speedup("warptile", "dbuf"), "warptile vs dbuf at 4096^3 (times as fast)",
                             table.source)

# %% [markdown]
# At four sizes, one run (hollow marker: [host-bound](GLOSSARY.md#host-bound)):

# %%
if gl.SIMULATOR:
    sizes = course_record
else:
    from gemm_lessons.measure import rung_timing
    sizes = measure_step.session_record(sgemm=rung_timing.time_sgemm(
        kernels, [(n, n, n) for n in (1024, 2048, 4096, 8192)], 10))
plots.versus_size(sizes, ["dbuf", "warptile", "cublas"])
plt.show()
twin = max(abs(a.gflops / b.gflops - 1) for a in results.sgemm_rows(sizes, "dbuf")
           for b in results.sgemm_rows(sizes, "warptile") if a.size == b.size)
blocks, sms = (1024 // 128) ** 2, sizes.device.sm_count
print(f"dbuf's and warptile's lines overlap: at every size their speeds differ by {100 * twin:.1f}% at most. "
      f"At 1024^3, 128 x 128 tiles make {blocks} blocks for {sms} SMs"
      + (f": {sms - blocks} SMs sit idle." if blocks < sms else "."))

# %% [markdown]
# ## Why: the limiter model

# %%
why = limiter_table.why(["dbuf", "warptile", "cublas"], measured=table, decimals=2)
why

# %%
rd, rw, rc = why.row("dbuf"), why.row("warptile"), why.row("cublas")
gain, model_gain = rd.measured_ms / rw.measured_ms, rd.predicted_ms / rw.predicted_ms
bind = (f"Both rungs bind on {WHAT[rw.binding].split(' (')[0]}" if rd.binding == rw.binding else
        f"dbuf binds on {limiter_table.SHORT[rd.binding]}, warptile on {limiter_table.SHORT[rw.binding]}")
print(f"{bind}; the model predicts warptile {model_gain:.2f}x as fast as dbuf, measured {gain:.2f}x. "
      f"Measured/predicted is {rd.ratio:.2f} and {rw.ratio:.2f}: the model assumes the binding unit always busy; "
      f"the profiler saw it {rd.utilization_pct[rd.binding]:.0f}% and {rw.utilization_pct[rw.binding]:.0f}% busy.")
n_w, n_c = limiter_table.counts("warptile"), limiter_table.counts("cublas")
fewer = (n_w["warp_instructions"] / n_w["warp_ffma"]) / (n_c["warp_instructions"] / n_c["warp_ffma"])
busier = rc.utilization_pct[rc.binding] / rw.utilization_pct[rw.binding]
print(f"cuBLAS binds on {limiter_table.SHORT[rc.binding]}{' too' if rc.binding == rw.binding else ''} and runs "
      f"{rw.measured_ms / rc.measured_ms:.3f}x as fast: {abs(100 * (1 - 1 / fewer)):.1f}% "
      f"{'fewer' if fewer >= 1 else 'more'} instructions per warp-FFMA, and a binding unit "
      f"{abs(100 * (busier - 1)):.1f}% {'busier' if busier >= 1 else 'less busy'} "
      f"({rc.utilization_pct[rc.binding]:.0f}%): {fewer:.3f} x {busier:.3f} = {fewer * busier:.3f}x.")
print(f"DRAM was {rw.utilization_pct['dram']:.0f}% busy for warptile, the L2 {rw.utilization_pct['l2']:.0f}%.")

# %% [markdown]
# The warp tile moves addresses, not instructions: issue still binds. DRAM idles, so a block
# order reading less of it cannot help (Lab notes).

# %% [markdown]
# ## Exercise 08-warp-tile: map the lanes of a warp onto a warp tile
#
# A block of 2 warps computes a 32 x 128 tile of C, 8x8 results per thread. `row_of(i)` and
# `col_of(j)` give the tile row and column of a thread's result row `i` and column `j`
# (`i, j = 0..7`). As given, they use lesson 06's layout: threads in rows of 16, a thread's
# four 4x4 pieces half the *block* tile apart. Rewrite them for 32 x 64 warp tiles: warp 0
# owns columns 0-63, warp 1 64-127; a warp's lanes form a row-major 4 x 8 grid (LM x LN), each
# lane's four 4x4 pieces half the *warp* tile apart (LM * 4 rows, LN * 4 columns), as in the
# figure above. The check also traces one block (a float per load, the `LDS.32` case):
# each warp must read 96 distinct floats per k-step, conflict-free.

# %%
import numpy as np
from gemm_lessons.teaching import exercises  # before numba.cuda: gemm_lessons picks the GPU or the simulator
from numba import cuda, float32
from gemm_lessons.core.float4 import load4, store4
from gemm_lessons.core.unroll import static_range, unrolled

BM, BN, BK, TM, TN = 32, 128, 8, 8, 8  # the check launches ceil(N/128) x ceil(M/32) blocks of 64 threads
WM, WN = 32, 64                        # the warp tile
LM, LN = WM // TM, WN // TN            # 4 x 8 lanes
THREADS = (BM // WM) * (BN // WN) * 32  # 64
A_STEP = THREADS // (BK // 4)           # 32: rows between a thread's float4s of A (it stages only one)
B_STEP = THREADS // (BN // 4)           # 2: four float4s of B per thread, 2 rows apart
A_ROW = BM + 4                          # padded rows of the transposed A tile (exercise 06)


@cuda.jit
@unrolled
def sgemm_ex08(A, B, C, alpha, beta):
    sAT = cuda.shared.array((BK, A_ROW), float32)
    sB = cuda.shared.array((BK, BN), float32)
    tid = cuda.threadIdx.x
    warp, lane = tid // 32, tid % 32
    row0 = cuda.blockIdx.y * BM
    col0 = cuda.blockIdx.x * BN
    M, K = A.shape
    N = B.shape[1]
    a_r = tid // (BK // 4)
    a_c = (tid % (BK // 4)) * 4
    b_r = tid // (BN // 4)
    b_c = (tid % (BN // 4)) * 4

    def row_of(i):  # the tile row of this thread's result row i (i = 0..7, a constant)
        ### BEGIN SOLUTION: return (tid // 16) * 4 + i % 4 + i // 4 * (BM // 2)
        return (warp // (BN // WN)) * WM + (lane // LN) * 4 + i % 4 + i // 4 * (LM * 4)
        ### END SOLUTION

    def col_of(j):  # the tile column of this thread's result column j (j = 0..7, a constant)
        ### BEGIN SOLUTION: return (tid % 16) * 4 + j % 4 + j // 4 * (BN // 2)
        return (warp % (BN // WN)) * WN + (lane % LN) * 4 + j % 4 + j // 4 * (LN * 4)
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
            if (row0 + a_r + p * A_STEP < M) & (k0 + a_c < K):  # `&`, not `and` (lesson 07)
                x0, x1, x2, x3 = load4(A, row0 + a_r + p * A_STEP, k0 + a_c)
            sAT[a_c + 0, a_r + p * A_STEP] = x0
            sAT[a_c + 1, a_r + p * A_STEP] = x1
            sAT[a_c + 2, a_r + p * A_STEP] = x2
            sAT[a_c + 3, a_r + p * A_STEP] = x3
        for q in static_range(BK * BN // 4 // THREADS):
            y0 = y1 = y2 = y3 = np.float32(0.0)
            if (k0 + b_r + q * B_STEP < K) & (col0 + b_c < N):
                y0, y1, y2, y3 = load4(B, k0 + b_r + q * B_STEP, col0 + b_c)
            store4(sB, b_r + q * B_STEP, b_c, y0, y1, y2, y3)
        cuda.syncthreads()
        for k in range(BK):
            for i in static_range(TM):
                r = row_of(i)
                a[i] = sAT[k, r]
            for j in static_range(TN):
                c = col_of(j)
                b[j] = sB[k, c]
            for i in static_range(TM):
                for j in static_range(TN):
                    acc[i, j] += a[i] * b[j]
        cuda.syncthreads()
    for i in static_range(TM):
        r = row_of(i)
        row = row0 + r
        for j in static_range(TN):
            c = col_of(j)
            col = col0 + c
            if row < M and col < N:
                if beta == 0:
                    C[row, col] = alpha * acc[i, j]
                else:
                    C[row, col] = alpha * acc[i, j] + beta * C[row, col]


exercises.check("08-warp-tile", sgemm_ex08)

# %% [markdown]
# ## Takeaway
#
# * Block tile → warp tile → thread tile: a squarer warp tile reads fewer distinct values per
#   warp (96 floats per k-step, not 144), which pays where one phase serves the whole warp.
# * Here it ties: `LDS.128` is priced per quarter warp, each quarter reads 1 address of A and 8
#   of B either way; same instructions, and issue binds.
# * Credit a field only by a same-run change of it alone, read beside the compiler's facts.
# * cuBLAS's lead is in issue: fewer instructions, a busier issue unit (lesson 10).

# %% [markdown]
# ## Sources and further reading
#
# * Source article [[3]](REFERENCES.md#seed-002) (warp shapes 2x16 and 4x8); CUTLASS and
#   Triton: [REFERENCES.md](REFERENCES.md#lessons-07-08).
# * Terms: the [glossary](GLOSSARY.md) and the [primer](00a_primer.ipynb).

# %% [markdown]
# ## Lab notes
#
# **Every configuration of the sweep**, fastest first, and every pair in it that differs in one
# field (`tuning.CHANGES`), not only those around the base, with its verdict by the 1% rule.
# The sweep varies everything around clamped loads (`guard="select"`); its single change to
# `if` came out fastest and became `TileConfig()`'s default. Every change but `guard` itself was
# timed with clamped loads; none was timed again with `if`.

# %%
from IPython.display import Markdown
Markdown(tuning.table_markdown(rows) + "\n\n" + tuning.changes_markdown(rows, same=SAME))

# %% [markdown]
# **Reading the grid** (the heatmap of the sweep). Each cell is one configuration, with clamped
# loads: its TFLOPS and % of cuBLAS. A row is a tile shape (block / warp / thread tile, register
# cap) with its registers and warps per SM; a column is BK and the number of
# shared buffers. 8x16 thread tiles need over 200 registers
# (no cap): half the base's warps per SM to hide latency. 64x128 blocks fit 3 or 4 per SM
# uncapped. With one buffer, BK 16 beats BK 8: each slice waits once for its loads (lesson 07),
# and BK 16 has half as many. The worst cell, 64x128 blocks at BK 16 with two buffers (28.4
# TFLOPS), spills nothing: below, "What the compiler's facts leave open".

# %% [markdown]
# **Why 1%.** The sweep holds two configurations that the benchmark record of the same GPU also
# timed, days earlier: `TileConfig()` (the rung `warptile`) and `dbuf` with clamped loads
# (`dbuf_select`):

# %%
twins = {"warptile": TileConfig(), "dbuf_select": replace(dbuf_first_attempt.DBUF_CONFIG, guard="select")}
for name, cfg in twins.items():
    s = next(r for r in rows if r.config and TileConfig(**r.config) == cfg)
    b = results.sgemm_rows(course_record, name, (4096, 4096, 4096))[0]
    print(f"{name:<12} {course_record.device.name}: {b.gflops / 1e3:.2f} TFLOPS in the benchmark ({course_record.date[:10]}), "
          f"{s.gflops / 1e3:.2f} in the sweep: {abs(tuning.change_pct(b, s)):.2f}% apart, ranges "
          f"{'apart' if tuning.ranges_apart(b, s) else 'overlapping'}")

# %% [markdown]
# Two runs of one kernel can differ by more than either run's p10-p90 range; the 1% margin
# leaves room for that.

# %% [markdown]
# **Padding.** Without `pad_a` the transposing stores into the A tile conflict 2-way (traced
# below), yet the sweep's `pad_a -> 0` change is small: those stores are a small share of the
# wavefronts, and issue binds, not shared memory. Traced as in the Predict's answer: one block,
# one slice of K, the buffer it is read from (with K = BK the kernel also stages an empty next
# slice into the other). The store wavefront per k-step in the Predict's answer is this
# staging: a warp's stores of one slice, averaged over its 8 k-steps.

# %%
traffic = tuning.shared_traffic([tuning.SWEEP_BASE, replace(tuning.SWEEP_BASE, pad_a=0)], arrays=("sA0", "sB0"))
for t in traffic:
    print(f"pad {t['label'].split(' pad ')[1].split()[0]}: per warp per k-step {t['loads_paired']['wavefronts'] / (WARPS * BK):g} "
          f"load + {t['stores']['wavefronts'] / (WARPS * BK):g} store wavefronts")
Markdown(tuning.traffic_markdown(traffic))

# %% [markdown]
# **Try it: a lane order that pairs both tiles.** Which 4 x 8 lane order makes lanes n and
# n XOR 1 share a thread row (A's reads pair) and lanes n and n XOR 2 a thread column (B's
# pair)? One answer: lane bit 0 → column, bit 1 → row, the other bits filling in the rest:

# %%
# NBVAL_CHECK_OUTPUT
row = lambda l: ((l >> 1) & 1) | (((l >> 4) & 1) << 1)  # noqa: E731
col = lambda l: (l & 1) | (((l >> 2) & 3) << 1)  # noqa: E731
assert len({(row(l), col(l)) for l in range(32)}) == 32  # every cell of the 4 x 8 grid once
a, b = (bank_model.wavefronts([16 * f(l) for l in range(32)], 16, paired_loads=True).wavefronts for f in (row, col))
print(f"interleaved 4 x 8: LDS.128 of A: {a}, of B: {b}; per k-step {2 * a + 2 * b} (row-major: 12)")
shared_at = why.row("warptile").ceilings_ms["shared"] * (2 * a + 2 * b + 1) / (12 + 1)
print(f"shared ceiling at that count: about {shared_at:.2f} ms, against {why.row('warptile').ceilings_ms['issue']:.2f} ms of issue")

# %% [markdown]
# A third of the load wavefronts gone, and no time to gain while issue binds. Written into
# exercise 08-warp-tile's `row_of` and `col_of`, this order passes its check too.
#
# **What the compiler's facts leave open.** `spread -> True` changes no register, spill or
# occupancy count and still loses. In the 128 x 128 block with 8x8 thread tiles, BK 8 -> 16
# loses where the spill grows to 80 bytes and gains where it stays at 8 or none (one buffer,
# `spread`); with 8x16 thread tiles it gains although the spill grows to 40 bytes: the spill is
# the suspect, not proven. The 64x128 block with two buffers loses a third at BK 16 without
# spilling (the tables above). The instruction mix and stall reasons of these configurations
# were not profiled.

# %% [markdown]
# ### Block order and the L2 cache
#
# Blocks that share a block-row of A or a block-column of B find it in the
# [L2 cache](GLOSSARY.md#l2) instead of [DRAM](GLOSSARY.md#dram) when they run at the same
# time. The **grouped order** ([block order](GLOSSARY.md#block-order)) of the matmul tutorial of
# Triton (a Python language for GPU kernels: [REFERENCES.md](REFERENCES.md#lessons-07-08)) hands
# out blocks GROUP_M tile rows at a time, column by column, so a [wave](GLOSSARY.md#wave) covers
# a squarer patch of C and reads fewer strips of A and B (right; left: row-major).
# `TileConfig(group_m=G)` gives that order. One run timed both orders and profiled each at
# 8192^3, on an H100 only (the GPU printed below).

# %%
from gemm_lessons.teaching import block_order
fig, ax = plt.subplots(1, 2, figsize=(10, 5))
figures.block_order(10, 7, 1, 12, ax=ax[0])
figures.block_order(10, 7, 4, 12, ax=ax[1])
plt.tight_layout()

# %%
orders = block_order.load_record()
if orders is None:
    print(block_order.NOT_RECORDED)
else:
    counters = block_order.load_counters(orders.device.name)
    groups = [(g, name) for g, name in block_order.groups_of(orders) if g > 1]
    print(f"{orders.device.name}, {orders.date[:10]}, one run:")
    for size in sorted({r.size for r in orders.sgemm}):
        rm = block_order._row(orders, "warptile", size)
        g, name = max(groups, key=lambda gn: block_order._row(orders, gn[1], size).gflops)
        r = block_order._row(orders, name, size)
        pct = tuning.change_pct(rm, r)
        verdict = "tie" if abs(pct) <= SAME or not tuning.ranges_apart(rm, r) else "faster" if pct > 0 else "slower"
        print(f"{size[0]}^3: row-major {rm.gflops / 1e3:.2f} TFLOPS; best grouped (GROUP_M = {g}) {pct:+.1f}%, {verdict}")
    if counters:
        dram = {g: counters[name]["dram__bytes_read.sum"] / 1e9 for g, name in block_order.groups_of(orders)}
        least = min(dram, key=dram.get)
        print(f"DRAM read at {block_order.PROFILE_SIZE}^3: {dram[1]:.2f} GB row-major, "
              f"{dram[least]:.2f} GB with GROUP_M = {least} ({100 * (dram[least] / dram[1] - 1):+.0f}%).")

# %% [markdown]
# Grouping reads far less from DRAM and moves the time by a few percent at most: DRAM was not
# what held this kernel back.

# %% [markdown]
# **The grouped order**, in Triton's form: block `pid` of a 1-D grid gets its tile like this.
# `TileConfig(group_m=G)` gets the same order from a 3-D grid (G, tile columns, groups)
# without a division.

# %%
# source: gemm_lessons/teaching/block_order.py  (the package runs this same code; a test keeps the two identical)
def grouped_tile(pid, tiles_m, tiles_n, group_m):
    """(tile row, tile column) of C for block ``pid`` of a 1-D grid: groups of ``group_m`` tile
    rows, numbered down each column of a group before the next column (Triton's grouped
    ordering); the last group has fewer rows when group_m does not divide tiles_m.  With
    group_m = 1 this is row-major order: pid // tiles_n, pid % tiles_n."""
    per_group = group_m * tiles_n  # blocks in a full group
    first_row = (pid // per_group) * group_m  # the group's first tile row
    rows = min(tiles_m - first_row, group_m)  # rows in this group (fewer in a ragged last one)
    within = pid % per_group  # position inside the group, down a column first
    return first_row + within % rows, within // rows

# %%
# NBVAL_CHECK_OUTPUT
for g in (1, 4):
    print(f"GROUP_M = {g}: tiles (row, column) of blocks 0-11:", [grouped_tile(pid, 10, 7, g) for pid in range(12)])
