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
# # 11b · What we tried: the lab notebook of lesson 11
#
# [Lesson 11](11_from_kernel_to_library.ipynb) keeps to what its models predict and its
# measurements settle. This appendix keeps the rest: the shape suite in full, the call-cost table
# cell by cell, the probes run while `gl.sgemm` was built (each with its record and the commit it
# ran at), the ideas that did not pan out, and what stayed unexplained. It has no exercise and no
# word budget. Every number is read from a record in `results/` or `experiments/` by a visible
# cell; the few cells that can measure do so on a GPU and say so.

# %%
import gemm_lessons as gl  # first: it chooses the GPU, or numba's CUDA simulator when there is none
from gemm_lessons import library
from gemm_lessons.core import tables
from gemm_lessons.library import dispatch
from gemm_lessons.records import results
from gemm_lessons.instruments.ncu_metrics import top_stalls
from gemm_lessons.teaching.lesson11 import (call_overhead, dispatch_model, kernel_facts, probes, profile_comparison,
                                            shape_suite, split_k_plans, suite_record)
from gemm_lessons.teaching.lesson11.suite_record import ODD_SHAPE, REFERENCE_SHAPE, shape_name
from IPython.display import Markdown
import numpy as np
from numba import cuda
# %matplotlib inline
print(gl.banner())
rec = suite_record.load()  # the shape suite's record lesson 11 shows
model = suite_record.recorded_model(rec)
h100 = suite_record.load(results.REFERENCE_DEVICE)  # the suite's run on the GPU the probes below ran on
print(f"shape suite: {suite_record.label(rec)}, commit {rec.git_commit}, `{suite_record.command(rec)}`; seconds: "
      + ", ".join(f"{k} {v:.0f}" for k, v in (rec.seconds or {}).items()))
print(f"the probes' GPU's shape suite: {suite_record.label(h100)}, commit {h100.git_commit}")

# %% [markdown]
# ## 1 · The shape suite in full
#
# The lesson shows the suite back to back. Here is every shape with both measurements. A
# **single call** is timed with CUDA events around one call on an idle GPU; **back to back** times a
# batch. Host-bound marks a back-to-back timing where the host's issue time, measured on squares of
# the nearest size, is at least 80% of the time per call.

# %%
body = []
for r in rec.rows:
    bound = [shape_suite.WHO[w] for w in ("gl", "cublas") if shape_suite.host_bound(rec, r, w)]
    body.append([shape_name(r.shape), shape_suite.GROUPS.get(r.group, r.group), r.plan,
                 "" if not r.best_plan else ("same" if r.best_plan == r.plan else r.best_plan),
                 f"{r.single_gl.median_ms:.3f}", f"{r.single_cublas.median_ms:.3f}", f"{r.pct_cublas_single:.1f}%",
                 f"{r.back_to_back_gl.median_ms:.3f}", f"{r.back_to_back_cublas.median_ms:.3f}",
                 f"{r.pct_cublas_back_to_back:.1f}%" + (f" (host-bound: {', '.join(bound)})" if bound else "")])
Markdown(f"**The shape suite**, {suite_record.label(rec)}\n\n" + tables.markdown(
    ["M x N x K", "group", "plan chosen", "fastest plan timed", "gl.sgemm ms, single", "cuBLAS ms, single",
     "% of cuBLAS, single", "gl.sgemm ms, back to back", "cuBLAS ms, back to back", "% of cuBLAS, back to back"],
    body, "llllrrrrrl"))

# %%
shape_suite.pct_figure(rec);

# %%
s = rec.summary
mean, kept, left_out = shape_suite.back_to_back_geomean(rec)
print(f"The record's own summary, over all {s['shapes']} shapes (host-bound ones included): geometric mean "
      f"{s['geomean_pct_cublas_single']:.1f}% of cuBLAS in single calls, {s['geomean_pct_cublas_back_to_back']:.1f}% "
      f"back to back. Without the host-bound shapes ({', '.join(shape_name(r.shape) for r in left_out) or 'none'}), "
      f"back to back: {mean:.1f}% over {len(kept)} shapes, the number lesson 11 quotes.")

# %% [markdown]
# **What the suite shows and no measurement here explains.** Single calls that took more than twice
# the same call back to back, and shapes where `gl.sgemm` ran more than 10% ahead of cuBLAS back to
# back with neither caller host-bound (which kernel cuBLAS chose there was not recorded):

# %%
for kind, r, who in shape_suite.unexplained(rec):
    if kind == "ahead":
        print(f"{shape_name(r.shape)}: gl.sgemm at {r.pct_cublas_back_to_back:.1f}% of cuBLAS back to back "
              f"({r.back_to_back_gl.median_ms:.3f} ms against {r.back_to_back_cublas.median_ms:.3f} ms), "
              f"{r.pct_cublas_single:.1f}% in single calls")
    else:
        one, b2b = getattr(r, f"single_{who}"), getattr(r, f"back_to_back_{who}")
        print(f"{shape_name(r.shape)}, {shape_suite.WHO[who]}: one call {one.median_ms:.3f} ms (10th to 90th "
              f"percentile of {one.n} calls: {one.p10_ms:.3f} to {one.p90_ms:.3f}), {one.median_ms / b2b.median_ms:.1f}x "
              f"its {b2b.median_ms:.3f} ms back to back")

# %% [markdown]
# **Single calls against the simple rule.** One call on an idle GPU should cost the host's issue
# time, then the kernel: the issue time at the nearest square size plus the time per call back to
# back. Lesson 11 quotes single calls only where it is about call cost, and its headline is back
# to back: a single call's time mixes the host into the kernel's, and one run's outlier can move it
# several times over (the last line, the H100's run, and the probe after it):

# %%
issue = call_overhead.recorded_costs(rec)
for r in rec.rows:
    for who in ("gl", "cublas"):
        near = shape_suite.issue_near(rec, r, who)
        if near is None or r.error:
            continue
        one, b2b = getattr(r, f"single_{who}"), getattr(r, f"back_to_back_{who}")
        rule = near[1] * 1e-3 + b2b.median_ms
        print(f"{shape_name(r.shape)}, {shape_suite.WHO[who]}: the rule {rule:.3f} ms (issue {near[1]:.0f} µs at "
              f"{near[0]}^2 + {b2b.median_ms:.3f} ms), one call measured {one.median_ms:.3f} ms "
              f"({one.median_ms / rule:.1f}x the rule)")
for name, r_ in (("this record", rec), ("the H100's", h100)):
    far = max((r for r in r_.rows if not r.error), key=lambda r: abs(np.log(r.pct_cublas_single / r.pct_cublas_back_to_back)))
    print(f"The single-call % of cuBLAS furthest from the back-to-back one, {name}: {shape_name(far.shape)}, "
          f"{far.pct_cublas_single:.0f}% in single calls against {far.pct_cublas_back_to_back:.0f}% back to back.")

# %% [markdown]
# A probe run minutes after the H100's suite, on the same machine (`experiments/reduce_wide/`), timed ten
# calls at 1000^3 and 1024^3 one at a time and back to back, each in two passes a few seconds
# apart. Where the two passes of one call differ by 1.5 times or more, and what `gl.sgemm` at
# 1024^3 took there one call at a time:

# %%
source, rows = probes.reduce_wide_probe()
print(source)
for r in (r for r in rows if r["pass"] == 1):
    for kind, what in (("single", "one at a time"), ("b2b", "back to back")):
        a, b = r[kind][0], probes.probe_median(rows, r["size"], r["call"], kind, 2)
        if max(a, b) >= 1.5 * min(a, b):
            print(f"  {r['call']} at {r['size']}^3, {what}: {a:.4f} ms in one pass, {b:.4f} ms in the other")
print(f"  gl.sgemm at 1024^3 one at a time: {probes.probe_median(rows, 1024, 'gl.sgemm', 'single', 1):.4f} and "
      f"{probes.probe_median(rows, 1024, 'gl.sgemm', 'single', 2):.4f} ms, against "
      f"{suite_record.row(h100, (1024, 1024, 1024)).single_gl.median_ms:.3f} ms in the H100's suite run")

# %% [markdown]
# Such jumps hit cuBLAS and `gl.sgemm` alike, so one run's outlier says little about either
# library. What a single call does that a call back to back does not was not measured.
#
# ## 2 · What a call costs, cell by cell
#
# Lesson 11 reads the host's issue time. The suite also timed two more numbers per caller and
# size: **sync**, the host's clock around one call followed by a synchronize, and **event**, CUDA
# events around one call on an idle GPU. Each from its own set of calls (medians, µs; on a GPU this
# cell measures them now):

# %%
costs = call_overhead.call_costs()
body = [[c] + [f"{costs.get(c, n):.0f} · {costs.get(c, n, 'sync_us'):.0f} · {costs.get(c, n, 'event_us'):.0f}"
               for n in costs.sizes()] for c in costs.callers()]
Markdown(f"**Issue · sync · event, µs per call**, {costs.source}\n\n"
         + tables.markdown(["caller"] + [f"{n}^2" for n in costs.sizes()], body, "l" + "r" * len(costs.sizes())))

# %%
for what in ("event", "sync"):  # each brackets more of a call than the issue time does
    odd = call_overhead.below_issue(costs, f"{what}_us")
    print(f"{what} below issue:", "; ".join(f"{c} at {n}^2 ({v:.0f} against {i:.0f} µs)" for c, n, v, i in odd) or "none")
below = {c for what in ("event", "sync") for c, *_ in call_overhead.below_issue(costs, f"{what}_us")}
print("callers with a time below their issue time:", ", ".join(sorted(below)) or "none")
raw = next(c for c in costs.callers() if "kernel[grid, block]" in c)
span = [costs.get(raw, n) for n in costs.sizes()]
print(f"{raw}: issue time {min(span):.0f} to {max(span):.0f} µs over the sizes, for the same host work.")

# %% [markdown]
# The three times come from separate sets of calls, batched differently: issue time from
# batches of 20 back-to-back calls, sync and event times from single calls. The allocating
# `gl.sgemm(A, B)` once issued slower than it ran alone: numba freed each C with `cuMemFree`,
# which waits for the whole GPU, a batch of frees at a time, so a batch of allocating calls
# waited for the GPU's work (in the table below, that allocator's cost grows with the product's
# size, as a wait for the GPU would). The library now allocates C from the CUDA driver's
# stream-ordered pool, which frees without waiting (`gemm_lessons/library/allocate.py`); both
# allocators in one run (`experiments/alloc_pool/`), issue time in µs:

# %%
pool = probes.alloc_pool_probe()
sizes = sorted({int(k.rsplit(" ", 1)[1].split("^")[0]) for k in pool["timings"]})
callers = list(dict.fromkeys(k.rsplit(" ", 1)[0] for k in pool["timings"]))
Markdown(f"{pool['device']}, {pool['date'][:10]}, commit {pool['git_commit'][:7]}\n\n" + tables.markdown(
    ["caller"] + [f"{n}^2" for n in sizes],
    [[c] + [f"{pool['timings'][f'{c} {n}^2']['issue']['median_us']:.0f}" for n in sizes] for c in callers],
    "l" + "r" * len(sizes)))

# %% [markdown]
# An earlier version of lesson 11
# took the spread of one caller's issue time over the sizes (the last line under the call-cost table) as its yardstick for
# ranking callers; it was larger than many of the gaps it judged, so it ranked almost nothing.
# The lesson now ranks two callers only where one's 90th percentile lies below the other's 10th
# (`call_overhead.separation`).
#
# **Where the time of a call goes**, measured part by part (`experiments/launch/launch_probe.py`,
# host time per call, the median of 10 batches of 200 calls). The Launcher can launch through the
# driver's `cuLaunchKernel` or through the `launch` of [cuda.core](https://nvidia.github.io/cuda-python/cuda-core/latest/),
# NVIDIA's Python layer over the driver:

# %%
probe = probes.launch_probe()
print(f"{probe['device']}, {probe['date'][:10]}, commit {probe['git_commit']}")
for name, t in probe["timings"].items():
    print(f"  {name}: {t['median_us']:.1f} µs")
print("every check right, both launch paths bit for bit the same:",
      all(c["correct"] and c["same_as_driver"] in (None, True) for c in probe["checks"]))
recorded = call_overhead.recorded_costs(h100)  # the suite on the probe's GPU
print("the H100's suite's issue time of gl.sgemm(A, B, C) at 128^2 and 512^2 (batches of 20 calls, another process): "
      f"{recorded.get('gl.sgemm(A, B, C)', 128):.1f} and {recorded.get('gl.sgemm(A, B, C)', 512):.1f} µs")

# %% [markdown]
# The launches are most of a call; checks and the plan look-up are a few µs. Two runs of the same
# call in different processes and batch sizes differ by up to 4 µs, so neither is its cost to a
# microsecond. What the Launcher keeps between calls: the compiled function's handle, the stream,
# and a buffer for the kernel's parameters with the list of their addresses that `cuLaunchKernel`
# takes; an array is flattened into its slots only when it is not the array of the last call. It
# relies on numba-cuda internals; where they differ, or on the simulator, it launches the ordinary
# way and says so ("plain"; "fast" is its own path):

# %%
print(library.launcher_for(dispatch.Plan("wide", "128x128")))
print("in the recorded run:", "; ".join(sorted({str(v).strip("<>") for v in rec.launch.values()})))

# %% [markdown]
# `GEMM_LESSONS_PLAIN_LAUNCH=1` turns the Launcher's own path off; `gl.sgemm` was not timed that way.
#
# ## 3 · The any-shape kernel and the padded plan
#
# What the compiler made of the library's kernels (compiled now on a GPU, with the SASS's global
# loads and stores by width; the calibration's numbers on the simulator):

# %%
Markdown(kernel_facts.compiler_markdown(rec))

# %%
wide, anyk = suite_record.calibration(rec, "wide 128x128"), suite_record.calibration(rec, "any_shape 128x128")
off = kernel_facts.offline_facts("any_shape 128x128")
print(f"Calibration, aligned {wide['size']}^3: any_shape 128x128 {anyk['gflops'] / 1e3:.1f} TFLOPS against "
      f"{wide['gflops'] / 1e3:.1f} for wide 128x128 ({100 * anyk['gflops'] / wide['gflops']:.0f}%). Under the same "
      f"register cap ({anyk['registers']}), it keeps {anyk['local_bytes']} bytes per thread in local memory"
      + (f" (offline sm_90 compile: {off['spill_store_bytes']} bytes of spill stores, {off['spill_load_bytes']} of "
         "spill loads)" if off else "") + f"; the wide kernel {wide['local_bytes']}.")

# %% [markdown]
# With 128 x 128 tiles and BK = 8, each of 256 threads stages 8 floats of A and B per slice: 8 scalar
# load instructions where the wide kernel issues 2 of 16 bytes. Where K is not a multiple of 8, the
# 8 floats of one slice row of A straddle two 32-byte sectors. Scalar loads, scalar stores and the
# spills are the differences; what each costs was not measured.
#
# **The padded plan at the odd shape.** The suite timed every candidate plan there; the model
# charges the copies their bytes at the calibration's copy bandwidth plus one launch:

# %%
a, b = suite_record.row(rec, REFERENCE_SHAPE), suite_record.row(rec, ODD_SHAPE)
timed = {p: ms for p, ms in b.plans_ms.items() if isinstance(ms, float)}
for kind in ("padded", "any_shape"):
    p = min((p for p in timed if p.startswith(kind)), key=timed.get)
    print(f"fastest {kind} plan at {shape_name(ODD_SHAPE)}: {p}, {timed[p]:.3f} ms")
extra = b.back_to_back_gl.median_ms - a.back_to_back_gl.median_ms
N4, K4 = dispatch.padded_sides(*ODD_SHAPE[1:])
kernel_ms = 1e3 * (model.estimate_s(dispatch.Plan("wide", "128x128"), ODD_SHAPE[0], N4, K4)
                   - model.estimate_s(dispatch.Plan("wide", "128x128"), *REFERENCE_SHAPE))
print(f"{b.plan} took {extra:.3f} ms more than {a.plan} at {shape_name(REFERENCE_SHAPE)} back to back; the model "
      f"charges the copies {1e3 * model.padding_s(*ODD_SHAPE):.3f} ms and the wide kernel on the padded sides "
      f"{kernel_ms:+.3f} ms (it charges the busiest SM of each wave, which holds as many blocks in both).")

# %% [markdown]
# The rest of the difference is not in the model; the copies were not timed on their own.
#
# ## 4 · Split-K: the reduction, one launch, and the split kernels' occupancy
#
# **Sixteen bytes at a time.** The reduction of lesson 11 moves one float per thread, which any C
# allows. Profiled next to cuBLAS at 1024^3 (section 6) it took about a quarter of `gl.sgemm`'s GPU
# time, so where the wide kernel ran (C aligned, N a multiple of 4) the library now adds the parts
# with `gemm_lessons/kernels/library/splitk_reduce_wide.py`: the same loop, four neighbouring columns
# per thread with 16-byte loads and stores. It gives the same bits as the one-float kernel when beta
# is 0; with beta they differ by at most one rounding (`tests/library/test_device_arrays.py`). Back
# to back, each shape in two passes, the faster median of the two:

# %%
bw = suite_record.recorded_model(h100).bandwidth_gbs  # the probe ran on the H100
for size in (1024, 1000):
    t = {call: min(probes.probe_median(rows, size, call, "b2b", p) for p in (1, 2))
         for call in ("main alone", "main+reduce", "main+reduce_wide", "cublas")}
    print(f"{size}^3: product alone {t['main alone']:.4f} ms, with the one-float reduction {t['main+reduce']:.4f}, "
          f"with the 16-byte one {t['main+reduce_wide']:.4f}, cuBLAS {t['cublas']:.4f}")
split = next(r["split"] for r in rows if r["size"] == 1024)
nbytes = 4 * (split + 1) * 1024 ** 2
added = min(probes.probe_median(rows, 1024, "main+reduce", "b2b", p) for p in (1, 2)) - min(
    probes.probe_median(rows, 1024, "main alone", "b2b", p) for p in (1, 2))
print(f"At 1024^3 the reduction reads {split} parts and writes C: {nbytes / 1e6:.1f} MB, {nbytes / (bw * 1e3):.1f} µs at "
      f"the H100's calibrated {bw:,.0f} GB/s; the one-float reduction added {1e3 * added:.1f} µs.")

# %% [markdown]
# Why the one-float kernel needs so much more time than its bytes was not profiled further.
#
# **One launch instead of two.** CUTLASS has split-K without a second kernel, *serial* split-K (the
# `SplitKSerial` option of its [`device::Gemm`](https://github.com/NVIDIA/cutlass/blob/main/include/cutlass/gemm/device/gemm.h)):
# the blocks of one tile of C take turns in k order, guarded by a counter in global memory, each
# adding its partial sums to what the blocks before it left in C. We built a different one-launch
# form into the wide kernel (commit 1fc2bd8, `TileConfig.serial`): every block writes its part to
# the workspace, then, after a memory fence, adds one to a counter of its tile (an atomic add); the
# block that finds itself last adds the parts in order (the same bits as two launches), writes C
# and resets the counter. A first form, commit c8d6942, added all the parts of one group of four
# elements before loading the next group's, so its loads did not overlap
# (`experiments/splitk/splitk-probe-run1-*.json`). Timed against two launches, on the same plans
# and shapes, in one process:

# %%
sp = probes.splitk_probe()
facts = probes.splitk_probe_facts(sp)
b2b_r, single_r, saved = ([f[i] for f in facts.values()] for i in range(3))
print(f"`tools/splitk_probe.py`, {sp['device']}, {sp['date'][:10]}, commit {sp['git_commit']}: {len(facts)} pairs of a "
      f"shape and a split plan, {sum(r['chosen'] for r in sp['rows'])} of them the plan dispatch chose.")
print(f"one launch / two launches, back to back: {min(b2b_r):.2f} to {max(b2b_r):.2f} (longer on "
      f"{sum(r > 1 for r in b2b_r)} of {len(facts)}); single calls: {min(single_r):.2f} to {max(single_r):.2f}; "
      f"same bits and right product on every pair: {all(f[3] for f in facts.values())}")
print(f"host µs per call saved by one launch: median {np.median(saved):.1f}, from {min(saved):.1f} to {max(saved):.1f}")
K = sp["offline_sm90"]["kernels"]
for tiles in dict.fromkeys(name.split()[0] for name in K):
    one, two = K[f"{tiles} one launch"], K[f"{tiles} two launches"]
    print(f"  {tiles} (offline sm_90): one launch {one['registers']} registers, {one['blocks_per_sm']} blocks/SM, "
          f"{one['spill_store_bytes']} B spill stores; two launches {two['registers']}, {two['blocks_per_sm']}, "
          f"{two['spill_store_bytes']}")

# %% [markdown]
# So the library kept two launches, and the kernel of lessons 07 and 08 lost `serial` again. The
# host time saved is within how far such medians move between runs. In one launch the last block
# of each tile adds all the parts alone, after its tile's other blocks are done, where the
# reduction kernel spreads that work over every SM; and the extra code needs more registers (above:
# spills at 128x128, fewer blocks per SM at 64x128). At 128x64 the registers change neither and one
# launch was slower there too, so the registers do not explain all of it. Where the GPU time goes
# was not profiled.
#
# **The split kernels' blocks per SM.** The model counts a split plan's slots with the unsplit
# kernel's blocks per SM (the calibration times the unsplit kernel), but the split form
# (`TileConfig(split_k=True)`) is a separate compile:

# %%
for tiles in dispatch.TILES:
    split_facts = kernel_facts.offline_facts(f"wide_split {tiles}")
    counted = model.speeds[f"wide/{tiles}"].blocks_per_sm
    if split_facts:
        print(f"wide {tiles}: split form {split_facts['blocks_per_sm']} blocks/SM ({split_facts['registers']} registers), "
              f"the model counts {counted}")

# %% [markdown]
# Where they differ, the model counts fewer slots than the split kernel has; what that changes in
# the choice was not measured.
#
# ## 5 · Dispatch: where the model was off
#
# The calibration the model ranks plans with (back to back on the square; "one block per SM": a
# grid of exactly as many blocks as SMs, the rate the model gives an SM in a partly filled last wave):

# %%
cal = [c for c in rec.calibration if "plan" in c and "error" not in c]
Markdown(f"**Calibration**, {suite_record.label(rec)}\n\n" + tables.markdown(
    ["kernel, tiles", "TFLOPS", "TFLOPS, one block per SM", "blocks/SM", "registers", "local bytes", "shared bytes"],
    [[c["plan"], f"{c['gflops'] / 1e3:.1f}", f"{c['lone_gflops'] / 1e3:.1f}" if "lone_gflops" in c else "",
      c["blocks_per_sm"], c["registers"], c["local_bytes"], c["shared_bytes"]] for c in cal], "lrrrrrr")
    + f"\n\nCopy bandwidth: {model.bandwidth_gbs:,.0f} GB/s; a launch: {model.launch_us:.0f} µs (an assumed value, "
    f"not measured); split-K only with at least {model.min_k_per_split} values of k per part (a chosen value).")

# %% [markdown]
# The model charges a block its share of the k-loop and nothing else: not its prologue, not the
# writing of its tile of C, not the time a launch takes to fill the GPU; and it sums waves as if
# each ended before the next began. The five plans measured furthest from their estimate (lesson
# 11 names the first), each next to the fastest plan of the same tile size at that shape (the
# record keeps one median per plan and no spread, so a slow measurement and a model error look alike):

# %%
points = dispatch_model.model_points(rec, model)
for shape, name, est, ms, _, _ in sorted(points, key=lambda p: -max(p[2] / p[3], p[3] / p[2]))[:5]:
    kin = [(n, m) for s_, n, _, m, _, _ in points if s_ == shape and n.split()[1] == name.split()[1] and n != name]
    near = min(kin, key=lambda x: x[1]) if kin else None
    print(f"{name} at {shape_name(shape)}: {ms:.3f} ms measured, {est:.3f} ms estimated ({ms / est:.1f}x)"
          + (f"; {near[0]} took {near[1]:.3f} ms" if near else ""))

# %% [markdown]
# Where the plan chosen was not the fastest timed, the plans near the top at that shape:

# %%
worst = shape_suite.costliest_disagreement(rec)
Markdown(dispatch_model.plans_markdown(rec, worst, model, top=6) if worst else "The plan chosen was the fastest everywhere.")

# %% [markdown]
# How the model charges a partly filled wave, for one plan at 1024^3:

# %%
plan = dispatch.Plan("wide", "64x128")
w = split_k_plans.waves((1024, 1024, 1024), plan, model)
speed = model.speed(plan)
busiest = -(-(w["blocks"] - (w["waves"] - 1) * w["slots"]) // model.sms)
print(f"{plan} at 1024^3: {w['blocks']} blocks for {w['slots']} slots, {w['waves']} wave(s), the last "
      f"{100 * w['last_wave']:.0f}% full; its busiest SM holds {busiest} block(s) and gets "
      f"{speed.sm_rate(busiest, model.sms) / speed.sm_rate(speed.blocks_per_sm, model.sms):.2f} of a full SM's rate.")

# %% [markdown]
# ## 6 · `gl.sgemm` next to cuBLAS under Nsight Compute
#
# `experiments/ncu_vs_cublas/ncu_vs_cublas.py` profiled `gl.sgemm`, the wide kernel without a split,
# and cuBLAS at 1024^3 and 1000^3 (then the two shapes furthest behind cuBLAS back to back, in the
# record before the 16-byte reduction: `git show 83c001f:results/shapes-nvidia-h100-80gb-hbm3.json`)
# and at 16384^3. The profiler runs each kernel alone with its caches emptied first, so its times
# are not the suite's. Columns: *occupancy*, resident warps as % of the SM's maximum; *issue*,
# cycles a scheduler issued; *FMA*, cycles the FMA pipe worked; stall reasons as in the
# [glossary](GLOSSARY.md#stall-reasons).

# %%
header, pairs = profile_comparison.ncu_versus_cublas()
body = []
for call, k in pairs:
    shape, who = call.split(" ", 1)
    body.append([shape, who, profile_comparison.kernel_label(k["kernel"]), f"{k['gpu__time_duration.sum'] / 1e3:,.1f}",
                 f"{k['launch__grid_size']:,.0f}", f"{k['launch__registers_per_thread']:.0f}",
                 f"{k['sm__warps_active.avg.pct_of_peak_sustained_active']:.0f}%",
                 f"{k['smsp__issue_active.avg.pct_of_peak_sustained_active']:.0f}%",
                 f"{k['sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active']:.0f}%",
                 ", ".join(f"{r.replace('_', ' ')} {v:.0f}%" for r, v in top_stalls(k, 2))])
Markdown(f"{header}\n\n" + tables.markdown(["shape", "call", "kernel", "µs", "blocks", "registers", "occupancy", "issue",
                                            "FMA", "top stalls"], body, "lllrrrrrrl"))

# %%
T = "gpu__time_duration.sum"
gl_k = [k for call, k in pairs if call.startswith("1024x1024x1024 gl.sgemm")]
cub = next(k for call, k in pairs if call == "1024x1024x1024 cublas")
print(f"At 1024^3: gl.sgemm's product {gl_k[0][T] / 1e3:.1f} µs + reduction {gl_k[1][T] / 1e3:.1f} µs = "
      f"{(gl_k[0][T] + gl_k[1][T]) / 1e3:.1f} µs, cuBLAS's one kernel {cub[T] / 1e3:.1f} µs.")

# %% [markdown]
# At 1024^3 and 1000^3 cuBLAS ran one kernel, no split, with fewer blocks than SMs and many more
# registers per thread; the product kernel alone was faster than cuBLAS, and the one-float reduction
# put the call behind (the 16-byte reduction of section 4 came from this). Without a split the wide
# kernel was the slowest of the three. At 16384^3 cuBLAS's block tile is twice as large, its FMA pipe
# busier; both kernels' first stall reason is *not selected* (a warp ready, another one issued), and
# `gl.sgemm`'s second, the barrier, is not among cuBLAS's first two.
#
# ## 7 · A larger block tile
#
# The name of cuBLAS's kernel at 16384^3, from the profile:

# %%
print(profile_comparison.cublas_kernel_name("16384x16384x16384"))

# %% [markdown]
# CUTLASS builds its kernels' names from their parameters (`configuration_name` in
# [`gemm_operation.py`](https://github.com/NVIDIA/cutlass/blob/main/python/cutlass_library/gemm_operation.py)).
# Read that way: `simt`, the ordinary FP32 units, not tensor cores; `256x128_8x4`, a 256x128 block
# tile, 8-deep k slices, 4 stages (shared buffers of k slices); `nn`, both operands column-major,
# which is how cuBLAS sees our row-major product (C^T = B^T A^T); `align1`, operands aligned to one
# element only. The `80` is not in CUTLASS's template for kernels before Hopper; it reads like the
# architecture (compute capability 8.0). If `align1` means 4-byte global loads (its SASS was not
# inspected), cuBLAS's kernel is faster with narrower loads than the last rung's 16-byte ones.
#
# `TileConfig` can describe a 256x128 tile too. `experiments/bigtile/bigtile_probe.py` timed three
# such tiles next to the library's 128x128 and cuBLAS, back to back (registers and blocks per SM
# from an offline sm_90 compile of the same commit):

# %%
bt = probes.bigtile_probe()
names = list(bt["rows"][0]["kernels"])
Kb = bt["offline_sm90"]["kernels"]
body = [[f"{n} (`{bt['compiled'][n]['config']}`)", Kb[n]["registers"], Kb[n]["blocks_per_sm"], Kb[n]["warps_per_sm"]]
        + [f"{r['kernels'][n]['pct_cublas']:.1f}%" for r in bt["rows"]] for n in names]
ok = all(bt["compiled"][n]["correct"] and all(r["kernels"][n]["correct"] for r in bt["rows"]) for n in names)
wins = [(r["shape"][0], n) for r in bt["rows"] for n in names
        if n != probes.BIGTILE_BASE and r["kernels"][n]["pct_cublas"] > r["kernels"][probes.BIGTILE_BASE]["pct_cublas"]]
print("a larger tile beat 128x128 at:", ", ".join(f"{s}^3 ({n})" for s, n in wins) or "no size")
Markdown(f"{bt['device']}, {bt['date'][:10]}, commit {bt['git_commit']}; every tile right at every size: {ok}\n\n"
         + tables.markdown(["block tile (config)", "registers", "blocks/SM", "warps/SM"]
                           + [f"% of cuBLAS at {r['shape'][0]}^3" for r in bt["rows"]], body, "lrrr" + "r" * len(bt["rows"])))

# %% [markdown]
# Larger tiles need more registers per thread or more
# threads per block, and either way an SM holds one block of them, not two; cuBLAS's kernel also
# runs one block of 8 warps per SM, so fewer resident warps alone do not explain the gap. The last
# row also differs in more than its tile (16-deep slices, one shared buffer).
#
# ## 8 · cp.async and more stages
#
# cuBLAS's kernel keeps 4 k slices in flight. To do that without holding them in registers, a kernel
# copies global memory to shared memory directly, with the asynchronous copies of compute capability
# 8.0 and later ([cp.async, LDGSTS](GLOSSARY.md#cp-async)). numba-cuda 0.30.4 has no intrinsic for
# them (its source has no `cp.async`), but `cuda.declare_device` links a few lines of CUDA C into a
# numba kernel: `experiments/cp_async/cp_async.cu` wraps the PTX, and the probe checked that the
# copies land exactly and become `LDGSTS` in the SASS:

# %%
ca = probes.cp_async_probe()
print(f"{ca['device']}, {ca['date'][:10]}, commit {ca['git_commit']}, numba-cuda {ca['versions']['numba_cuda']}")
for c in ca["checks"]:
    print(f"  {c['copy']}: {'exact' if c['exact'] else 'WRONG'}")
print("  SASS:", ", ".join(f"{n} {op}" for op, n in ca["sass"].items()), "; works:", ca["works"])

# %% [markdown]
# `experiments/multistage/multistage_probe.py` then gave the last rung's 128x128 tile (not cuBLAS's
# 256x128) 3 and 4 stages filled that way: A's tile is stored transposed, so its floats land one by
# one (4-byte copies), B's rows land whole (16-byte copies). The form timed here handles S slices
# per trip of its loop, so that each stage's place in shared memory is a constant; a first form
# computed it at run time, was slower still (commit 0e4fc11), and is the one profiled below:

# %%
ms = probes.multistage_probe()
for n in ms["rows"][0]["kernels"]:
    v = [r["kernels"][n]["pct_cublas"] for r in ms["rows"]]
    print(f"{n}: {min(v):.1f}% to {max(v):.1f}% of cuBLAS back to back at {ms['rows'][0]['shape'][0]}^3 to "
          f"{ms['rows'][-1]['shape'][0]}^3; right: {ms['compiled'][n]['correct']}; "
          f"{ms['compiled'][n].get('registers')} registers")
print(f"({ms['device']}, {ms['date'][:10]}, commit {ms['git_commit']})")
mp_header, mp_calls, mp_launches = profile_comparison.multistage_profile()
print(mp_header)
for call, k in zip(mp_calls, mp_launches):
    print(f"  {call}: issue {k['smsp__issue_active.avg.pct_of_peak_sustained_active']:.0f}%, FMA "
          f"{k['sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active']:.0f}%, top stalls "
          + ", ".join(f"{r.replace('_', ' ')} {v:.0f}%" for r, v in top_stalls(k, 2)))

# %% [markdown]
# So this first try at a design like cuBLAS's was slower than the last rung, not faster. In the
# profile, its warps waited more on shared memory (*short scoreboard*) and issued less often; why,
# and whether another arrangement of the copies and k-steps would change it, was not worked out.
#
# ## 9 · The transpose for every shape
#
# `gemm_lessons.library.transpose(X)` is lesson 09's answer for every shape. Where both sides are
# multiples of 4 it runs the wide kernel (16-byte loads and stores). Where a side is not, rows start
# inside a float4, but a fresh array still starts on a boundary, so
# `gemm_lessons/kernels/library/transpose_aligned_stores.py` treats each array as one flat run of
# floats: a tile's 64 floats from a source row lie inside 17 aligned float4s, which the block loads
# whole into a shared staging row, remembering the shift; destination row `c` starts
# `(c * rows) % 4` floats past a boundary, so the blocks cut each destination row at boundaries, and
# only the first and last block along a row write up to 3 floats one at a time. Where rows are a
# multiple of 4 and cols even, every row starts on 8 bytes, and `transpose_pairs.py` moves the wide
# kernel's tile two floats per access instead (`experiments/transpose_pairs/` has its measurements).
# `transpose_any_wide.py`, an earlier try, cut the destination the way the tiles cut the source,
# so both ends of a block's part shared a float4 with a neighbour and were written one float at a
# time in a branch only the end lanes take; what that costs was not profiled. Where an array starts
# inside a float4 (a view), the library falls back to the padded 32 x 8 kernel with 4-byte accesses.

# %%
# NBVAL_CHECK_OUTPUT
rng = np.random.default_rng(11)
for rows_, cols_ in [(12, 8), (7, 12), (13, 5)]:
    x = rng.uniform(-1, 1, (rows_, cols_)).astype(np.float32)
    t = library.transpose(cuda.to_device(x)).copy_to_host()
    print(f"{rows_}x{cols_}: right: {np.array_equal(t, x.T)}")

# %%
suite = results.transpose_suite()
big = [r for r in suite["rows"] if (r["shape"][0] % 4 or r["shape"][1] % 4)
       and 8 * r["shape"][0] * r["shape"][1] >= results.LARGE_TRANSPOSE_BYTES]
print(f"transpose suite, {suite['device']}, {suite['date'][:10]}, commit {suite['git_commit']}: back to back, % of sgeam, on "
      f"the {len(big)} large shapes with a side not a multiple of 4 ({', '.join('x'.join(map(str, r['shape'])) for r in big)})")
for name in ("aligned_64x16", "anywide_64x16", "smem_padded_32x8"):
    v = [r["kernels"][name]["pct_sgeam"] for r in big]
    print(f"  {name}: {min(v):.0f}% to {max(v):.0f}%")
print("aligned_64x16 faster than anywide_64x16 on", sum(r["kernels"]["aligned_64x16"]["pct_sgeam"]
                                                      > r["kernels"]["anywide_64x16"]["pct_sgeam"] for r in big), "of", len(big))
sq = next(r["kernels"]["cublas_sgeam"]["gbs"] for r in suite["rows"] if r["shape"] == [8192, 8192])
g = [r["kernels"]["cublas_sgeam"]["gbs"] for r in big]
print(f"sgeam itself: {min(g):,.0f} to {max(g):,.0f} GB/s on these shapes, {sq:,.0f} at 8192x8192")

# %% [markdown]
# ## 10 · The records behind lesson 11
#
# Each probe ran at its own commit; `git show <commit>` gives the code as it was.

# %%
for name, r in [("shape suite", {"device": rec.device.name, "date": rec.date, "git_commit": rec.git_commit}),
                ("launch probe", probes.launch_probe()), ("split-K in one launch", probes.splitk_probe()),
                ("larger tiles", probes.bigtile_probe()), ("cp.async", probes.cp_async_probe()),
                ("stages", probes.multistage_probe()), ("transpose suite", suite)]:
    print(f"{name}: {r['device']}, {str(r['date'])[:10]}, commit {r['git_commit']}")
print(f"16-byte reduction: {source}")
print(f"profile next to cuBLAS: {header}")
