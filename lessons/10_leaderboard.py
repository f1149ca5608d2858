# %% [markdown]
# # 10 · The leaderboard: every rung, what held it back, and cuBLAS
#
# **Where we are.** Lessons 01-08 built eight rungs, one change each, and each lesson's Why named
# the ceiling that held its rung back. Lesson 08's `warptile` ended the climb bound, like cuBLAS,
# by [instruction issue](GLOSSARY.md#issue). This lesson lines them all up: one table, the same
# rungs across sizes, and every rung under its ceilings. Those are the course's take-away.

# %%
import gemm_lessons as gl  # first: it chooses the GPU, or numba's CUDA simulator when there is none
from gemm_lessons.teaching import exercises, leaderboard, limiter_table, measure_step, plots
from gemm_lessons.kernels import ladder
from gemm_lessons.records import results
# %matplotlib inline
print(gl.banner())

# %%
# NBVAL_CHECK_OUTPUT
print("rungs in order:", " -> ".join(ladder.SGEMM))

# %% [markdown]
# ## Idea: one time per ceiling, and the longest wins
#
# The [limiter model](GLOSSARY.md#limiter-model) gives each rung one time per unit of the GPU,
# from what the profiler counted the rung doing: its FFMAs over the FP32 lanes, its
# warp-instructions over the schedulers (4 per SM per cycle), its shared-memory
# [wavefronts](GLOSSARY.md#wavefront) (1 per SM per cycle), its bytes over the measured L2 and
# DRAM bandwidths. The longest time is the **binding ceiling**: the rung cannot be faster. A
# [roofline](GLOSSARY.md#roofline) draws two of these ceilings, FP32 and DRAM; below, every rung
# gets its own column with all five, as the TFLOPS each one allows.

# %%
RUNGS = list(ladder.SGEMM) + ["cublas"]
model = limiter_table.why(RUNGS)  # the limiter record: ceilings from the profiler's counts
plots.ceilings(model, measured=False);

# %% [markdown]
# In each column the lowest dash, drawn thick, is the binding ceiling. The red line is the
# same for every rung: 128 FP32 lanes are 4 warp-FFMAs per SM per cycle, exactly the issue rate,
# so a kernel reaches the FP32 roof only if every instruction it issues is an FFMA.

# %% [markdown]
# ## Predict: how close does the last rung get?
#
# `warptile` and cuBLAS are both issue-bound. Here is what each issues at 4096^3:

# %%
for name in ["warptile", "cublas"]:
    issued, ffma = leaderboard.issue_counts(model, name)
    print(f"{name:9s} {issued / 1e9:.3f} billion warp-instructions, {ffma / 1e9:.3f} billion of them FFMA "
          f"({100 * ffma / issued:.0f}%)")

# %% [markdown]
# If both kept their schedulers equally busy, time would follow the instruction count. What % of
# cuBLAS's speed does `warptile` reach? Write your number:

# %%
my_pct = None  # warptile's % of cuBLAS at 4096^3

# %%
w, c = model.row("warptile"), model.row("cublas")
print(f"The model's answer: {100 * c.predicted_ms / w.predicted_ms:.1f}% "
      f"(cuBLAS's predicted {c.predicted_ms:.3g} ms over warptile's {w.predicted_ms:.3g} ms).")

# %% [markdown]
# ## Measure: every rung, every variant and cuBLAS in one run
#
# One `compare` call times the eight rungs, the variants the lessons compared them with, and
# cuBLAS at 4096^3, and checks each result against cuBLAS's (a wrong one stops the cell). A
# second call runs each rung back to back for seconds and reads the SM clock and power (the last
# two columns; the section on clock and power comes back to them).

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
# ## Why: the binding ceiling, and the stalls the model leaves out
#
# The model assumes the binding unit works every cycle. The profiler shows it busy less than
# that; in the other cycles the warps are stalled: waiting at a [barrier](GLOSSARY.md#barrier),
# for a result the next instruction needs, or for a load the kernel did not hide. That is the
# "measured / predicted" column:

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
      f"(measured / predicted) make {why.row('warptile').measured_ms / why.row('cublas').measured_ms:.3f}x the time.")

# %% [markdown]
# The same ceilings with the measurements on them: the gap between a thick dash and the dot
# below it is the rung's measured / predicted.

# %%
plots.ceilings(why, source=board.source);

# %% [markdown]
# ## Across sizes
#
# The recorded benchmark timed every rung and cuBLAS, in one run, at four square sizes (the
# plot) and two non-square shapes (the line under it):

# %%
plots.versus_size(bench);

# %%
last = list(ladder.SGEMM)[-1]
timed = [r for r in results.sgemm_rows(bench, last) if r.gflops is not None]
kept = [r for r in timed if not r.host_bound]  # a host-bound timing measures Python's launches, not the kernel
print(f"{last} as % of cuBLAS ({results.label(bench)}): "
      + "; ".join(f"{r.M}x{r.N}x{r.K} {r.pct_cublas:.0f}%" for r in kept)
      + (f" (host-bound, left out: {', '.join(f'{r.M}^3' for r in timed if r.host_bound)})." if len(kept) < len(timed) else "."))
twin = [abs(a.gflops / b.gflops - 1) for a in results.sgemm_rows(bench, "dbuf") for b in results.sgemm_rows(bench, last)
        if a.size == b.size]
if twin and max(twin) < 0.02:
    print(f"dbuf's line lies under {last}'s: they differ by {100 * max(twin):.1f}% at most.")
small = min(kept, key=lambda r: r.M * r.N * r.K)
blocks, sms = leaderboard.grid_blocks(last, small.size), bench.device.sm_count
if blocks < sms:
    big = max(kept, key=lambda r: r.M * r.N * r.K)
    speed = lambda k, size: results.sgemm_rows(bench, k, size)[0].gflops  # noqa: E731
    print(f"At {small.M}x{small.N}x{small.K} its 128x128 tiles cut C into {blocks} blocks for {sms} SMs: {sms - blocks} "
          f"SMs get none. There {last} keeps {100 * speed(last, small.size) / speed(last, big.size):.0f}% of its speed at "
          f"{big.M}x{big.N}x{big.K}, cuBLAS (which chooses among many kernels by shape, lesson 11) "
          f"{100 * speed('cublas', small.size) / speed('cublas', big.size):.0f}% of its own.")

# %% [markdown]
# ## What each technique was worth
#
# A step's speed-up splits in two, by the model: the binding ceiling's time falls (less work:
# fewer instructions, fewer wavefronts, fewer bytes), or measured / predicted falls (fewer
# stalls). Speed-up = less work x fewer stalls. Each row compares two kernels from the same run
# that differ by the change named (lesson 07's row names two changes: its kernel was rewritten).

# %%
whole = limiter_table.why(sorted({k for pair in leaderboard.MODEL_STEPS for k in pair}, key=list(KERNELS).index),
                          measured=run)
steps = leaderboard.steps(whole)
from IPython.display import Markdown
Markdown(leaderboard.steps_markdown(steps, board.source))

# %%
work = max(steps, key=lambda s: s.model)
calm = sorted(steps, key=lambda s: s.stalls, reverse=True)[:2]
fewer = whole.row("reg2d").ceilings_ms["issue"] / whole.row("vec").ceilings_ms["issue"]
print(f"Most work removed: {work.before} → {work.after} ({work.model:.1f}x less at the binding ceiling). "
      f"Lesson 05's step reg2d → vec issues {fewer:.2f}x fewer instructions. "
      "Most stalls removed: " + " and ".join(f"{s.before} → {s.after} ({s.stalls:.2f}x, with {s.model:.2f}x for the "
                                             "work)" for s in calm) + ".")
hurt = [e for e in leaderboard.effects_of(run) if leaderboard.effect_mark(e) == "❌"]
print(f"What cost speed, each against the kernel without it ({run.source.split(' (')[0]}): "
      + "; ".join(f"{lesson} · {what}: {pct:+.0f}%" for what, lesson, _, _, _, _, pct in hurt) + ".")

# %% [markdown]
# ## Clock and power: one more ceiling
#
# The FP32 peak assumes the GPU's top clock. At its [power cap](GLOSSARY.md#power-cap) a GPU
# lowers the clock. The table's last
# two columns read the clock while each rung was timed (short bursts) and while it ran back to
# back for seconds, and the power then:

# %%
timed_clocks = [r.timed_clock_mhz for r in board.rows if r.timed_clock_mhz]
if timed_clocks:
    print(f"While timed, the SM clock's median was " + (f"{timed_clocks[0]:,.0f} MHz for every rung." if
          min(timed_clocks) == max(timed_clocks) else f"{min(timed_clocks):,.0f}-{max(timed_clocks):,.0f} MHz."))
capped = [r for r in board.rows if "sw_power_cap" in r.events]
cub = board.row("cublas")
if capped:
    print(f"Back to back, {' and '.join(r.rung for r in capped)} drew {min(r.watts for r in capped):.0f}-"
          f"{max(r.watts for r in capped):.0f} W against the {board.power_limit_w:.0f} W cap, and the GPU lowered "
          f"the clock to {min(r.clock_mhz for r in capped):,.0f} MHz (median).")
elif cub.watts:
    print(f"Back to back, no rung reached the {board.power_limit_w:.0f} W cap; the highest drew "
          f"{max(r.watts for r in board.rows if r.watts):.0f} W.")
if cub.watts:
    print(f"cuBLAS drew {cub.watts:.0f} W at {cub.clock_mhz:,.0f} MHz. Energy per FLOP (watts / TFLOPS): "
          + ", ".join(f"{r.rung} {r.watts / r.tflops:.1f} pJ" for r in board.rows if r.watts and r.rung in (last, "cublas"))
          + ".")

# %% [markdown]
# Every instruction issued costs energy as well as an issue slot. Where a rung reaches the cap,
# power is one more ceiling: the clock comes down, and with it every ceiling that counts SM
# cycles (FP32, issue, shared memory).

# %% [markdown]
# ## Exercise 10-next-step: which technique to try next, by the record
#
# `leaderboard.technique_effects(record, size)` lists, for one recorded size, same-run pairs as
# `(technique, lesson, without, with, TFLOPS without, TFLOPS with, change in %)`. Write
# `next_step(kernel, size)`: among the rows whose "without" is `kernel`, the one with the largest
# change, as `(with, change)`, or `None` when none gained more than 2%. The check asks about
# every kernel at every recorded size where no timing of its rows is host-bound; the answer
# differs from size to size.

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
# * Each rung's time is set by one ceiling: FP32, instruction issue, shared-memory wavefronts, L2
#   or DRAM. The ladder's steps moved the binding one from issue to shared memory and back.
# * The model predicts a lower bound; measured / predicted is the stalls. Coalescing and double
#   buffering cut stalls, not work.
# * The issue ceiling reaches the FP32 roof only when every instruction is an FFMA: the last rung
#   and cuBLAS differ by a few percent of instructions and a few percent of stalls.
# * Small products leave SMs idle with 128x128 tiles; a library picks another kernel there.
# * Power is a ceiling too: at the cap the GPU lowers its clock.

# %% [markdown]
# ## Sources and further reading
#
# * The source articles this lesson re-tells and tests: [[1]](REFERENCES.md#seed-000), [[2]](REFERENCES.md#seed-001), [[3]](REFERENCES.md#seed-002), [[4]](REFERENCES.md#seed-003), [[5]](REFERENCES.md#seed-004) (their origins and what each
#   covers are in [REFERENCES.md](REFERENCES.md#source-articles)).
# * What to read next: [REFERENCES.md, lesson 10](REFERENCES.md#lesson-10).
# * Terms: the [glossary](GLOSSARY.md); the execution model and the compiler-facts table are
#   introduced in the [primer](00a_primer.ipynb).

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
          f"those medians are not the kernels' draw: hence the separate back-to-back run (runs.power, one "
          f"{power.SECONDS:g}-second run per kernel, the first {power.SETTLE_S:g} s left out).")

# %% [markdown]
# * **Two GPUs, and two runs.** The H100's record has the H200's SM count and clock but less copy
#   bandwidth: a test of the model's claim that no rung is DRAM-bound (the first line below). The
#   second line is the spread between two runs on one GPU.
# * **`naive_uncoalesced`** (in the table above) has measured / predicted far above the
#   others: no unit is busy (latency-bound), and the model has no ceiling for uncoalesced
#   requests in flight.
# * **Lesson 05's steps** are timed in their own run (lesson 05). Its largest step changed the
#   stores of C to 16 bytes, and with it the compiler turned the shared loads into `LDS.128`
#   (lesson 05's SASS counts). The gain is the loads': a thread stores C once, but loads from
#   shared memory in every k-step.
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
