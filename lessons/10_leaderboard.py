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
# # 10 · The leaderboard: every rung, what held it back, and cuBLAS
#
# **Where we are.** Lessons 01-08 built eight rungs, each held back by the ceiling its Why named;
# `warptile` ended bound, like cuBLAS, by [instruction issue](GLOSSARY.md#issue).

# %%
import gemm_lessons as gl  # first: it chooses the GPU, or numba's CUDA simulator when there is none
from gemm_lessons.teaching import exercises, leaderboard, limiter_table, measure_step, plots
from gemm_lessons.kernels import ladder
from gemm_lessons.model.limiter import waves
from gemm_lessons.records import results
# %matplotlib inline
print(gl.banner())

# %%
# NBVAL_CHECK_OUTPUT
print("rungs in order:", " -> ".join(ladder.SGEMM))

# %% [markdown]
# ## Idea: one time per ceiling, and the longest wins
#
# The [limiter model](GLOSSARY.md#limiter-model) gives each rung one time per GPU unit, from the
# profiler's counts in the [limiter run](GLOSSARY.md#limiter-run): FFMAs over FP32 lanes,
# warp-instructions over schedulers (4 per SM per cycle), shared-memory
# [wavefronts](GLOSSARY.md#wavefront) (1 per SM per cycle), bytes over L2 and DRAM bandwidth. The
# longest is the **binding ceiling**; the prediction stretches it when the last
# [wave](GLOSSARY.md#wave) of blocks leaves SMs idle. A [roofline](GLOSSARY.md#roofline) draws two
# ceilings; here each rung gets five, as TFLOPS (a sixth, DRAM latency, is for memory-bound kernels:
# lesson 09):

# %%
RUNGS = list(ladder.SGEMM) + ["cublas"]
model = limiter_table.why(RUNGS)  # the limiter record: ceilings from the profiler's counts
plots.ceilings(model, measured=False);

# %% [markdown]
# Thick dashes bind. In TFLOPS, FP32 (red) is every rung's roof: its 4 warp-FFMAs per SM per
# cycle equal the issue rate, so any other instruction puts issue lower.

# %% [markdown]
# ## Predict: how close does the last rung get?
#
# What `warptile` and cuBLAS issue at 4096^3, and the model's times:

# %%
w, c = model.row("warptile"), model.row("cublas")
for name in ["warptile", "cublas"]:
    issued, ffma = leaderboard.issue_counts(model, name)
    print(f"{name:9s} {issued / 1e9:.3f} billion warp-instructions, {ffma / 1e9:.3f} billion of them FFMA "
          f"({100 * ffma / issued:.0f}%)")
work, machine = limiter_table.work("warptile"), limiter_table.machine()
n_waves, _ = waves(work, machine)
print(f"warptile's issue ceiling is {w.ceilings_ms['issue']:.2f} ms; its {work.blocks:,} blocks, {work.blocks_per_sm} "
      f"at a time on {machine.sm_count} SMs, make {work.blocks / (work.blocks_per_sm * machine.sm_count):.2f} waves, "
      f"run as {n_waves}, so the model predicts {w.tail:.2f}x that: {w.predicted_ms:.2f} ms (cuBLAS {c.predicted_ms:.2f} "
      f"ms). Issuing in as large a share of its cycles as cuBLAS does, warptile would reach {c.predicted_ms:.2f} / {w.predicted_ms:.2f} = "
      f"{100 * c.predicted_ms / w.predicted_ms:.1f}% of cuBLAS.")

# %% [markdown]
# That % assumes warptile's schedulers issue in as large a share of cycles as cuBLAS's.
# Will warptile's measured % of cuBLAS land above or below that %, and why?

# %%
my_pct = None  # warptile's % of cuBLAS at 4096^3, measured

# %% [markdown]
# ## Measure: every rung, every variant and cuBLAS in one run
#
# One `compare` call checks and times them at 4096^3 (clock and power: below).

# %%
KERNELS = {**ladder.SGEMM, **ladder.VARIANTS}
LESSON05_STEPS = ["reg2d_unrolled", "transposed_a", "wide_loads"]  # lesson 05 times these itself
bench = leaderboard.lesson_record()  # what the simulator shows: this GPU's recorded benchmark
run = measure_step.compare({k: f for k, f in KERNELS.items() if k not in LESSON05_STEPS}, record=bench)
why = limiter_table.why(RUNGS, measured=run)
board = leaderboard.board(why, run, leaderboard.clock_power())
board

# %%
exercises.compare_prediction(my_pct, board.row("warptile").pct_cublas, "warptile's % of cuBLAS at 4096^3",
                             board.source)

# %% [markdown]
# ## Why: ceilings and stalls
#
# The model lets the binding unit work every cycle; the profiler finds it busy less. In the other
# cycles warps stall: at a [barrier](GLOSSARY.md#barrier), on a result the next instruction needs,
# on an unhidden load. Measured / predicted counts the stalls:

# %%
rows = board.rows
agree = [r.rung for r in rows if r.binding == r.busiest]
lo, hi = min(rows, key=lambda r: r.ratio), max(rows, key=lambda r: r.ratio)
print(f"The profiler's busiest unit is the model's binding ceiling for "
      + (f"all {len(rows)} rows." if len(agree) == len(rows) else
         f"{len(agree)} of the {len(rows)} rows (not for {', '.join(r.rung for r in rows if r.rung not in agree)})."))
off = max(abs(r.ratio - 100 / r.busiest_pct) for r in rows)
print(f"That unit was busy {min(r.busiest_pct for r in rows):.0f}-{max(r.busiest_pct for r in rows):.0f}% of the "
      f"time; measured / predicted runs from {lo.ratio:.2f} ({lo.rung}) to {hi.ratio:.2f} ({hi.rung}), and for every "
      f"row it is 100 / (% busy) give or take {off:.2f}.")
(iw, _), (ic, _) = leaderboard.issue_counts(why, "warptile"), leaderboard.issue_counts(why, "cublas")
rw, rc = why.row("warptile").ratio, why.row("cublas").ratio
print(f"warptile against cuBLAS: {iw / ic:.3f}x the instructions and {rw / rc:.3f}x the stall factor "
      f"(measured / predicted) make {why.row('warptile').measured_ms / why.row('cublas').measured_ms:.3f}x the time"
      + (": the measurement lands below the model's answer by the stalls." if rw > rc else "."))

# %% [markdown]
# The gap from a thick dash down to its dot is measured / predicted:

# %%
plots.ceilings(why, source=board.source);

# %% [markdown]
# ## Across sizes
#
# One recorded run at four square sizes (the plot) and two non-square shapes:

# %%
plots.versus_size(bench);

# %%
last = list(ladder.SGEMM)[-1]
dims = lambda r: f"{r.M}^3" if r.M == r.N == r.K else f"{r.M}x{r.N}x{r.K}"  # noqa: E731
speed = lambda k, size: results.sgemm_rows(bench, k, size)[0].gflops  # noqa: E731
timed = [r for r in results.sgemm_rows(bench, last) if r.gflops is not None]
kept = [r for r in timed if not r.host_bound]  # a host-bound timing measures Python's launches, not the kernel
print(f"{last} as % of cuBLAS ({results.label(bench)}): " + "; ".join(f"{dims(r)} {r.pct_cublas:.0f}%" for r in kept)
      + (f" (host-bound, left out: {', '.join(dims(r) for r in timed if r.host_bound)})." if len(kept) < len(timed) else "."))
twin = [abs(a.gflops / b.gflops - 1) for a in results.sgemm_rows(bench, "dbuf") for b in results.sgemm_rows(bench, last)
        if a.size == b.size]
if twin and max(twin) < 0.02:
    print(f"dbuf's and {last}'s lines overlap: at every size their speeds differ by {100 * max(twin):.1f}% at most.")
small, big = min(kept, key=lambda r: r.M * r.N * r.K), max(kept, key=lambda r: r.M * r.N * r.K)
blocks, sms = leaderboard.grid_blocks(last, small.size), bench.device.sm_count
if blocks < sms:
    print(f"At {dims(small)} its 128x128 tiles cut C into {blocks} blocks for {sms} SMs: {100 * blocks / sms:.0f}% of the "
          f"SMs have work, and {last} keeps {100 * speed(last, small.size) / speed(last, big.size):.0f}% of its "
          f"{dims(big)} speed; cuBLAS, which picks another kernel by shape (lesson 11), keeps "
          f"{100 * speed('cublas', small.size) / speed('cublas', big.size):.0f}%.")
    below = [k for k in ("reg1d", "reg2d") if speed(k, small.size) < speed("smem_tile", small.size)]
    if below:
        print(f"The ladder inverts there: {' and '.join(below)} (128x128 tiles too) fall below smem_tile, whose 32x32 "
              f"tiles make {leaderboard.grid_blocks('smem_tile', small.size):,} blocks: "
              + ", ".join(f"{k} {speed(k, small.size) / 1e3:.1f}" for k in below + ["smem_tile"]) + " TFLOPS.")

# %% [markdown]
# ## What each technique was worth
#
# Speed-up = the predicted time's fall x fewer stalls. Each row compares two kernels of one run
# that differ by one lesson's change (lesson 05's row and lesson 07's first combine several).

# %%
whole = limiter_table.why(sorted({k for pair in leaderboard.MODEL_STEPS for k in pair}, key=list(KERNELS).index),
                          measured=run)
steps = leaderboard.steps(whole)
from IPython.display import Markdown
Markdown(leaderboard.steps_markdown(steps, board.source, change=False))

# %%
step = {(s.before, s.after): s for s in steps}
ceil = {k: whole.row(k).ceilings_ms for k in ("reg2d", "vec", "vec_split", "dbuf", "warptile")}
v, s = ceil["vec"], step["reg2d", "vec"]
if whole.row("vec").binding == "shared":
    print(f"reg2d → vec issues {ceil['reg2d']['issue'] / v['issue']:.2f}x fewer instructions, but its predicted time "
          f"falls {s.model:.2f}x: vec's shared ceiling ({v['shared']:.2f} ms) passed its issue ceiling "
          f"({v['issue']:.2f} ms).")
vs, s = ceil["vec_split"], step["vec", "vec_split"]
print(f"vec → vec_split cut the shared ceiling {100 * (1 - vs['shared'] / v['shared']):.0f}% ({v['shared']:.2f} → "
      f"{vs['shared']:.2f} ms), yet its predicted time fell only {s.model:.2f}x: issue ({vs['issue']:.2f} ms) was "
      "right behind.")
co, db, wt = step["naive_uncoalesced", "naive"], step["dbuf_one_buffer", "dbuf"], step["dbuf", "warptile"]
print(f"Coalescing's {co.speedup:.2f}x is outside the model's ceilings (the L1's passes, lesson 01), so it lands in "
      f"the stalls column. Double buffering ({db.speedup:.2f}x, {db.stalls:.2f}x of it fewer stalls) was the last real gain.")
if all(abs(ceil["warptile"][k] / ceil["dbuf"][k] - 1) < 0.01 for k in ceil["dbuf"]):
    print(f"The warp tile ({wt.speedup:.2f}x) changed no ceiling: it issues the same instructions and the same "
          "shared-memory wavefronts as dbuf (lesson 08).")
SPREAD = 2  # %: two runs of one kernel differ by less (Lab notes)
hurt = [e for e in leaderboard.effects_of(run) if e[6] < -SPREAD]
print(f"What cost speed at 4096^3 (beyond {SPREAD}%, the run-to-run spread; {run.source.split(' (')[0]}): " + "; ".join(f"{e[1]} · {e[0]}: {e[6]:+.0f}%" for e in hurt) + ".")
small = (1024,) * 3
flips = [e for e in leaderboard.technique_effects(bench, small) if e[6] > SPREAD and (e[2], e[3]) in {h[2:4] for h in hurt}]
if flips:
    print(f"At 1024^3 ({results.label(bench)}) " + " and ".join(f"{e[2]} → {e[3]} gains {e[6]:+.1f}%" for e in flips)
          + f". 128x128 tiles make {leaderboard.grid_blocks('reg2d', small)} blocks for {sms} SMs there: a smaller "
          "tile makes more blocks and fills idle SMs, and the register cap, which buys a second block per SM, buys "
          "nothing when no SM gets a second block, so only its cost remains.")

# %% [markdown]
# ## Clock and power
#
# At its [power cap](GLOSSARY.md#power-cap) a GPU lowers its clock, and with it every ceiling
# counted in SM cycles. The table read the clock while timing and in a *sustained* run (seconds of
# relaunches), which gives the power.

# %%
timed_clocks = [r.timed_clock_mhz for r in board.rows if r.timed_clock_mhz]
if timed_clocks:
    print(f"While timed, the SM clock's median was " + (f"{timed_clocks[0]:,.0f} MHz for every rung." if
          min(timed_clocks) == max(timed_clocks) else f"{min(timed_clocks):,.0f}-{max(timed_clocks):,.0f} MHz."))
capped = [r for r in board.rows if "sw_power_cap" in r.events]
cub = board.row("cublas")
if capped:
    low = min(r.clock_mhz for r in capped)
    print(f"Sustained, {' and '.join(r.rung for r in capped)} drew {min(r.watts for r in capped):.0f}-"
          f"{max(r.watts for r in capped):.0f} W against the {board.power_limit_w:.0f} W cap, and the GPU lowered "
          f"the clock to {low:,.0f} MHz (median): the cap cost {100 * (1 - low / why.clock_mhz):.1f}% of the "
          f"{why.clock_mhz:,.0f} MHz clock, "
          + ("only in runs of seconds; no timing above was affected." if timed_clocks and min(timed_clocks) >= why.clock_mhz
             else f"and the timings ran at {min(timed_clocks or [low]):,.0f} MHz at the lowest."))
elif cub.watts:
    print(f"Sustained, no rung reached the {board.power_limit_w:.0f} W cap; the highest drew "
          f"{max(r.watts for r in board.rows if r.watts):.0f} W.")
if cub.watts:
    print(f"cuBLAS drew {cub.watts:.0f} W at {cub.clock_mhz:,.0f} MHz. Energy per FLOP (watts / TFLOPS): "
          + ", ".join(f"{r.rung} {r.watts / r.tflops:.1f}" for r in board.rows if r.watts and r.rung in (last, "cublas"))
          + " pJ per FLOP.")

# %% [markdown]
# ## Exercise 10-next-step: which technique to try next, by the record
#
# `leaderboard.technique_effects(record, size)`, `size` an `(M, N, K)` tuple, lists same-run pairs
# as `(technique, lesson, without, with, TFLOPS without, TFLOPS with, change in %)`. Write
# `next_step(kernel, size)`: the row starting from `kernel` with the largest change, as
# `(with, change)`, `with` a kernel name such as `'dbuf'`, or `None` if no row from `kernel`
# gained more than 2% (the run-to-run spread). The check tries every kernel and recorded size
# except [host-bound](GLOSSARY.md#host-bound) pairs.

# %%
record = bench


def next_step(kernel, size):
    ### BEGIN SOLUTION
    gains = [(after, change) for _, _, before, after, _, _, change in leaderboard.technique_effects(record, size)
             if before == kernel and change > 2]
    return max(gains, key=lambda g: g[1]) if gains else None
    ### END SOLUTION


exercises.check("10-next-step", next_step)

# %% [markdown]
# ## Takeaway
#
# * One ceiling sets each rung's time; lowering it helps only down to the next.
# * Measured / predicted is the stalls; double buffering, the last real gain, cut them.
# * warptile and cuBLAS differ by a few percent in instructions and in stalls.
# * With 128x128 tiles, small products leave SMs idle: smaller tiles win there.
# * The fastest rungs draw near the power cap, where the GPU would lower its clock.

# %% [markdown]
# ## Sources and further reading
#
# * Source articles, re-told and tested: [[1]](REFERENCES.md#seed-000), [[2]](REFERENCES.md#seed-001), [[3]](REFERENCES.md#seed-002), [[4]](REFERENCES.md#seed-003), [[5]](REFERENCES.md#seed-004)
#   ([origins](REFERENCES.md#source-articles)).
# * Next: [REFERENCES.md, lesson 10](REFERENCES.md#lesson-10).
# * Terms: the [glossary](GLOSSARY.md) and the [primer](00a_primer.ipynb).

# %% [markdown]
# ## Lab notes
#
# Details behind the main path, for the curious.

# %%
print("The limiter record's ceilings, ms (the numbers behind the figures):")
whole

# %%
from gemm_lessons.runs import power
for rec in filter(None, [limiter_table.record(why.device)]):
    t = {x["case"].split(" ", 1)[-1]: x["power"] for x in rec["timings"] if x["case"].startswith("sgemm")}
    print(f"The limiter run ({rec['date'][:10]}) sampled power while timing each rung, compile included: median "
          f"{t[last]['power_w']['median']:.0f} W for {last}, {t['cublas']['power_w']['median']:.0f} W for cuBLAS. "
          f"NVML's reading on this GPU is a one-second average and the window held the compile (GPU idle), so "
          f"those medians are not the kernels' draw: hence the separate sustained run (runs.power, one "
          f"{power.SECONDS:g}-second run per kernel, launched back to back, the first {power.SETTLE_S:g} s left out).")

# %% [markdown]
# * **Two GPUs, and two runs.** The H100 and the H200 share the SM count and clock; the H100 has
#   less copy bandwidth: a test of the model's claim that no rung is DRAM-bound (the first line
#   below). The second line is the spread between two runs on one GPU.
# * **`naive_uncoalesced`** (in the table above) has measured / predicted far above the
#   others: no unit is busy (latency-bound), and the model has no ceiling for uncoalesced
#   requests in flight.
# * **Lesson 05's steps** are timed in their own run (lesson 05), one change per step. Its
#   largest step stores the A tile transposed, so that both tiles are read with `LDS.128`;
#   16-byte stores of C gain little: a thread stores C once, but loads from shared memory in
#   every k-step.
# * **Lesson 08's sweep** (other tile shapes, slice depths, stages) is in lesson 08.
# * **The library** (`gl.sgemm`) against cuBLAS over a shape suite is lesson 11.

# %%
recs = leaderboard.device_records()
if len(recs) >= 2:
    r = leaderboard.devices_ratios(recs[0], recs[-1])
    s = [v for k, v in r["sgemm"].items() if k != "cublas"]
    print(f"{recs[-1].device.name} over {recs[0].device.name} ({results.label(recs[0])}; {results.label(recs[-1])}): "
          f"copy {r['copy']:.2f}x; SGEMM rungs {min(s):.2f}x-{max(s):.2f}x; transposes "
          f"{min(r['transpose'].values()):.2f}x-{max(r['transpose'].values()):.2f}x.")
lim = limiter_table.record(why.device)
if lim["device"]["name"] == bench.device.name:
    both = [(t["case"].split(" ", 1)[1], t["median_ms"]) for t in lim["timings"] if t["case"].startswith("sgemm ")]
    diff = [100 * abs(results.sgemm_rows(bench, k, (4096,) * 3)[0].median_ms / ms - 1) for k, ms in both
            if results.sgemm_rows(bench, k, (4096,) * 3)]
    print(f"Two runs on {bench.device.name} ({bench.date[:10]}, {lim['date'][:10]}): the medians of the {len(diff)} "
          f"SGEMM kernels both timed at 4096^3 differ by {min(diff):.1f}-{max(diff):.1f}%.")
