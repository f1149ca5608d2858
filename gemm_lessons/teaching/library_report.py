"""Lesson 11's tables and figures: gl.sgemm as a library, from the shape suite's record.

``python -m gemm_lessons.runs.shapes`` writes results/shapes-<device>.json (records.ShapesRecord): the
dispatch model's calibration, the per-call cost of each way to call a kernel, and every shape of
its suite timed against cuBLAS, single calls and back to back, with every candidate plan timed on
the smaller ones.  This module turns that record into the lesson's tables, sentences and figures,
and times a few of the same things now where there is a GPU (``call_costs``, ``measure_shapes``):
on the simulator those return the recorded numbers, labelled as such.  Every number the lesson
states comes from here, so it follows the record.
"""
import math
import re
from dataclasses import dataclass, field

import numpy as np

from gemm_lessons.core import backend, tables
from gemm_lessons.model import counting
from gemm_lessons.library import dispatch
from gemm_lessons.records import results

REFERENCE_SHAPE = (4096, 4096, 4096)  # the aligned square the odd shape is compared with
ODD_SHAPE = (4095, 4097, 4093)  # the same work with nothing a multiple of 4
SKINNY_SHAPE = (64, 8192, 8192)  # a small C with a long K: split-K's case
LOW_PCT = 90.0  # "below 90% of cuBLAS": the shapes the lesson names
HOST_BOUND = 0.8  # as gemm_lessons.measure.timing: the host took >= 80% of the GPU's time per call


# ---------------------------------------------------------------------------------- the record
def load(device=None):
    """The shape suite's record of ``device`` (default: results.REFERENCE_DEVICE, the GPU the
    lessons' prose comes from)."""
    path = results.path_for("shapes", device or results.REFERENCE_DEVICE)
    return results.read(path)


def label(rec):
    return results.label(rec)


def command(rec):
    """The command that made the record, a directory given to --out shown as DIR (a path on the
    machine that ran it means nothing to a reader)."""
    return re.sub(r"(--out[ =])\S+", r"\1DIR", rec.command or "")


def shape_name(shape):
    return "x".join(str(int(v)) for v in shape)


def row(rec, shape):
    """The ShapeRow of ``shape`` (M, N, K), or None."""
    return next((r for r in rec.rows or [] if tuple(r.shape) == tuple(shape)), None)


def recorded_model(rec):
    """The dispatch.Model the record measured (what gl.sgemm uses on that GPU)."""
    return dispatch.Model.from_dict(rec.model) if rec.model else dispatch.Model()


def is_wide(shape):
    """Whether the wide kernel can run ``shape`` on C-contiguous, freshly allocated arrays."""
    M, N, K = shape
    return not (K % 4 or N % 4)


def tflops(shape, ms):
    M, N, K = shape
    return 2.0 * M * N * K / (ms * 1e-3) / 1e12


def calibration(rec, plan):
    """The calibration row (a dict) of ``plan`` ("wide 128x128", ...), or None."""
    return next((c for c in rec.calibration or [] if c.get("plan") == str(plan)), None)


# ---------------------------------------------------------------------------------- edges
def alignment_figure(ks=(8, 10), rows=4, ax=None):
    """Each row-major matrix of ``rows`` rows and K columns as it lies in memory: which rows start
    on a 16-byte boundary (a float4 load of a row's first 4 floats is legal only there)."""
    import matplotlib.pyplot as plt
    import matplotlib.patches as patches

    if ax is None:
        _, ax = plt.subplots(len(ks), 1, figsize=(11, 1.5 * len(ks)))
    ax = np.atleast_1d(ax)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for axis, K in zip(ax, ks):
        n = rows * K
        width = -(-n // 4) * 4
        for f in range(n):
            r = f // K
            axis.add_patch(patches.Rectangle((f, 0), 1, 1, fc=colors[r % len(colors)], alpha=0.35, ec="white"))
        for b in range(0, width + 1, 4):
            axis.axvline(b, color="black", lw=1.6 if b % 8 == 0 else 0.8)
        bad = []
        for r in range(rows):
            start = r * K
            ok = start % 4 == 0
            if not ok:
                bad.append(r)
            axis.annotate(f"row {r}\nbyte {4 * start}", (start, 1), (start + 0.1, 1.55), fontsize=7,
                          color="tab:green" if ok else "tab:red", va="center")
        axis.set_xlim(0, width)
        axis.set_ylim(0, 2.1)
        axis.set_yticks([])
        axis.set_xticks(range(0, width + 1, 4))
        axis.tick_params(labelsize=7)
        what = (f"rows {', '.join(map(str, bad))} start between two 16-byte boundaries: no float4 load there"
                if bad else "every row starts on a 16-byte boundary: float4 loads work")
        axis.set_title(f"K = {K} floats per row ({4 * K} bytes): {what}", fontsize=9, loc="left")
    ax[-1].set_xlabel("float index in memory (thick lines every 32 bytes, thin every 16)", fontsize=8)
    plt.tight_layout()
    return ax


def edges_markdown(rec, shapes=(REFERENCE_SHAPE, ODD_SHAPE)):
    """gl.sgemm at the aligned square and the odd shape (single calls), with the calibration of
    the two kernels behind them: the measured cost of the edges."""
    body = []
    for shape in shapes:
        r = row(rec, shape)
        if r is None or r.single_gl is None:
            continue
        body.append([shape_name(shape), r.plan, f"{r.single_gl.median_ms:.3f}", f"{tflops(shape, r.single_gl.median_ms):.1f}",
                     f"{r.single_cublas.median_ms:.3f}" if r.single_cublas else "",
                     f"{r.pct_cublas_single:.1f}%" if r.pct_cublas_single else "",
                     f"{r.pct_cublas_back_to_back:.1f}%" if r.pct_cublas_back_to_back else ""])
    table = tables.markdown(["M x N x K", "plan gl.sgemm chose", "gl.sgemm ms (single call)", "TFLOPS",
                             "cuBLAS ms", "% of cuBLAS, single", "% of cuBLAS, back to back"], body, "llrrrrr")
    return f"**Edges: the aligned square and the odd shape**, recorded on {label(rec)}\n\n" + table


def kernel_cost_sentence(rec, tiles="128x128"):
    """The any-shape kernel against the wide kernel on the calibration's aligned square (the
    record's numbers): what the scalar loads cost before any odd edge."""
    wide, odd = calibration(rec, f"wide {tiles}"), calibration(rec, f"any_shape {tiles}")
    if not (wide and odd and "gflops" in wide and "gflops" in odd):
        return ""
    text = (f"The shape suite's calibration ({label(rec)}) timed both kernels with {tiles.replace('x', ' x ')} tiles "
            f"on the same aligned {wide['size']}^3 square, where every load could have been 16 bytes wide: the "
            f"any-shape kernel ran at {odd['gflops'] / 1e3:.1f} TFLOPS against {wide['gflops'] / 1e3:.1f} for the "
            f"wide kernel ({100 * odd['gflops'] / wide['gflops']:.0f}%), that much slower before any odd edge.")
    what = "its scalar, predicated global loads and stores"
    if odd.get("local_bytes") and not wide.get("local_bytes"):
        what += (f" and its spills (the compiler gave it {odd.get('registers')} registers and "
                 f"{odd['local_bytes']} bytes of local memory per thread, the wide kernel "
                 f"{wide.get('registers')} and {wide.get('local_bytes', 0)}" + _spills_offline(f"any_shape {tiles}") + ")")
    return text + (f" Among its differences from the wide kernel are {what}; how much of the cost each one takes was "
                   "not measured.")


def _offline_facts(kernel, cc="9.0"):
    """The offline compile's facts (results/arch-facts.json) of the library kernel ``kernel``
    ("wide 64x128", "wide_split 64x128", ...) for compute capability ``cc``, or None."""
    try:
        from gemm_lessons.runs import arch_facts

        return arch_facts.load()["kernels"][f"gl.sgemm {kernel}"]["arch"][cc]
    except Exception:  # noqa: BLE001 (no record, or no such kernel in it)
        return None


def _spills_offline(plan, cc="9.0"):
    """"; the offline compile ..." with the spill stores and loads ptxas reported for ``plan``'s kernel
    (results/arch-facts.json), or "" where the record has none."""
    row = _offline_facts(plan, cc)
    if row is None:
        return ""
    return (f"; the offline compile for sm_{cc.replace('.', '')} in results/arch-facts.json reports "
            f"{row['spill_store_bytes']} bytes of spill stores and {row['spill_load_bytes']} of spill loads")


def padding_sentence(shape=ODD_SHAPE, tiles="128x128"):
    """What the padded plan does at ``shape``: the padded sides and the floats its copies move,
    next to the product's own FLOP (a formula, no measurement)."""
    M, N, K = shape
    N4, K4 = dispatch.padded_sides(N, K)
    floats = dispatch.padded_copy_floats(M, N, K)
    return (f"At {shape_name(shape)} the padded plan copies A into {M} x {K4} and B into {K4} x {N4} floats, runs "
            f"the wide kernel ({tiles.replace('x', ' x ')} tiles) on {shape_name((M, N4, K4))} into a {M} x {N4} "
            f"workspace and copies its {M} x {N} part into C: the copies read and write {floats / 1e6:.1f} M floats "
            f"({4 * floats / 1e6:.0f} MB, `dispatch.padded_copy_floats`; C counted as read too, as the model charges "
            "it whatever beta is), for a product of "
            f"{counting.sgemm_flops(*shape) / 1e9:.0f} GFLOP.")


def edges_sentence(rec):
    """The cost of the odd shape in one generated paragraph (from the record): both shapes' single
    calls, the plans timed at the odd shape, and what the padded plan cost against the model."""
    a, b = row(rec, REFERENCE_SHAPE), row(rec, ODD_SHAPE)
    if not (a and b and a.single_gl and b.single_gl):
        return ""
    flop = counting.sgemm_flops(*ODD_SHAPE) / counting.sgemm_flops(*REFERENCE_SHAPE)
    t_gl = b.single_gl.median_ms / a.single_gl.median_ms
    text = (f"{shape_name(ODD_SHAPE)} has {100 * (1 - flop):.2f}% less work than {shape_name(REFERENCE_SHAPE)}, yet "
            f"one call of `gl.sgemm` ({b.plan}) took {t_gl:.2f}x as long ({b.single_gl.median_ms:.2f} ms against "
            f"{a.single_gl.median_ms:.2f} ms)")
    if a.single_cublas and b.single_cublas:
        text += f"; cuBLAS took {b.single_cublas.median_ms / a.single_cublas.median_ms:.2f}x as long"
    text += f" ({label(rec)})."
    timed = {p: ms for p, ms in (b.plans_ms or {}).items() if isinstance(ms, float)}
    best = {kind: min((p for p in timed if p.startswith(kind)), key=timed.get, default=None)
            for kind in ("padded", "any_shape")}
    if best["padded"] and best["any_shape"]:
        text += (f" In the suite's sweep of every candidate plan (a few calls back to back each), the fastest padded "
                 f"plan ({best['padded']}) took {timed[best['padded']]:.3f} ms and the fastest plan of the any-shape "
                 f"kernel ({best['any_shape']}) {timed[best['any_shape']]:.3f} ms.")
    plan = next((p for p in dispatch.PLANS if str(p) == b.plan), None)
    if plan is not None and plan.kernel == "padded" and a.back_to_back_gl and b.back_to_back_gl and rec.model:
        model = recorded_model(rec)
        M, N, K = ODD_SHAPE
        N4, K4 = dispatch.padded_sides(N, K)
        extra = b.back_to_back_gl.median_ms - a.back_to_back_gl.median_ms
        wide_ms = 1e3 * (model.estimate_s(dispatch.Plan("wide", plan.tiles), M, N4, K4)
                         - model.estimate_s(dispatch.Plan("wide", plan.tiles), *REFERENCE_SHAPE))
        blocks = [math.prod(plan.grid(M, N4)), math.prod(plan.grid(*REFERENCE_SHAPE[:2]))]
        copies_ms = 1e3 * model.padding_s(M, N, K)
        sweep = timed.get(b.plan)
        text += (f" In the suite's own back-to-back timing of the two shapes ({b.back_to_back_gl.n} samples each), "
                 f"the padded plan took {b.back_to_back_gl.median_ms:.3f} ms against {a.back_to_back_gl.median_ms:.3f} "
                 f"ms for the wide kernel at {shape_name(REFERENCE_SHAPE)}, {extra:.3f} ms more")
        if sweep:
            text += (f" (the sweep's {sweep:.3f} ms for the same plan differs from it by "
                     f"{abs(100 * (sweep / b.back_to_back_gl.median_ms - 1)):.0f}%: how far two timings of one plan "
                     "moved here)")
        text += (f". The model of section 4 charges the copies {copies_ms:.3f} ms (their bytes at the calibration's "
                 f"copy bandwidth, {model.bandwidth_gbs:,.0f} GB/s, and three launches of {model.launch_us:.0f} µs) "
                 f"and the wide kernel on {shape_name((M, N4, K4))} {abs(wide_ms) if round(wide_ms, 3) == 0 else wide_ms:+.3f} ms against "
                 f"{shape_name(REFERENCE_SHAPE)} ({blocks[0]} blocks against {blocks[1]}, "
                 f"{100 * (blocks[0] / blocks[1] - 1):.0f}% more; the model charges only the busiest SM of each wave, "
                 "which holds as many blocks in both)")
        rest = extra - copies_ms - wide_ms
        text += (f": {rest:.3f} ms of the difference is not in the model, and this lesson did not time the copies on "
                 "their own." if rest > 0 else ".")
    return text


# ---------------------------------------------------------------------------------- launch overhead
@dataclass
class CallCosts:
    """What one call costs, per caller and size (records.OverheadRow), measured now or recorded."""
    rows: list
    source: str
    measured_now: bool = False

    def get(self, caller, size, what="issue_us"):
        r = next((r for r in self.rows if r.caller == caller and r.size == size and not r.error), None)
        return getattr(r, what) if r else float("nan")

    def callers(self):
        return list(dict.fromkeys(r.caller for r in self.rows))

    def spread(self, callers, size, what):
        """matplotlib's xerr for ``what`` ("issue", "sync", "event"): the distances from the median
        down to the 10th and up to the 90th percentile; None where the rows do not have them."""
        lo, hi = [], []
        for c in callers:
            med, p10, p90 = (self.get(c, size, f"{what}{s}_us") for s in ("", "_p10", "_p90"))
            if p10 is None or p90 is None or math.isnan(med):
                return None
            lo.append(med - p10)
            hi.append(p90 - med)
        return [lo, hi]

    def sizes(self):
        return sorted({r.size for r in self.rows})

    def _repr_markdown_(self):
        sizes = self.sizes()
        body = []
        for caller in self.callers():
            cells = []
            for n in sizes:
                issue, sync, event = (self.get(caller, n, w) for w in ("issue_us", "sync_us", "event_us"))
                cells.append("–" if math.isnan(issue) else f"{issue:.0f} · {sync:.0f} · {event:.0f}")
            body.append([caller, *cells])
        head = ["caller", *(f"{n}^2: issue · sync · event µs" for n in sizes)]
        return (f"**Per-call cost on square matrices**, {self.source}\n\n"
                + tables.markdown(head, body, "l" + "r" * len(sizes))
                + "\n\nissue: host time per call when calls are issued back to back (Python, checks, launch); "
                "sync: host time for one call followed by a synchronize (the whole round trip); "
                "event: CUDA events around one call on an idle GPU (getting the call to the GPU, plus the kernel; so it "
                "should not be below the issue time, and where it is, that is not explained here). "
                "Medians" + (" (the figure draws each one's 10th-90th percentile range as a whisker)" if self.sizes() and self.spread(self.callers(), self.sizes()[0], "issue") else "")
                + ".")

    def __repr__(self):
        return self._repr_markdown_()


CALL_COST_SIZE = 256  # the size at which lesson 11's section 2 reads the per-call costs


def call_costs(sizes=(128, 256, 512, 1024), rec=None, progress=True):
    """The per-call cost of gl.sgemm, the ladder's rung, its kernel launched by numba and cuBLAS:
    measured now on a GPU (shapes.measure_overhead, about 2 s on an H100), the record's rows on the
    simulator."""
    if backend.SIMULATOR:
        rec = rec or load()
        rows = [r for r in rec.overhead or [] if r.size in sizes]
        return CallCosts(rows, f"recorded on {label(rec)} ({backend.not_measured_why()})")
    from gemm_lessons.runs import shapes
    from gemm_lessons.measure.device import device_info
    from gemm_lessons.core.progress import bar

    pbar = bar(5 * len(sizes), "per-call cost", progress)
    rows = shapes.measure_overhead(sizes, pbar)
    pbar.close()
    return CallCosts(rows, f"measured on {device_info().name} now", True)


def call_costs_figure(costs, size=CALL_COST_SIZE, ax=None):
    """Per-call cost of each caller at one size: the host's time to issue a call, and the CUDA-event
    time around one call on an idle GPU."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(9, 3.6))
    callers = costs.callers()
    y = np.arange(len(callers))
    issue = [costs.get(c, size, "issue_us") for c in callers]
    event = [costs.get(c, size, "event_us") for c in callers]
    ax.barh(y - 0.2, issue, 0.4, color="tab:blue", xerr=costs.spread(callers, size, "issue"), capsize=2,
            label="issue: host time per call, calls back to back")
    ax.barh(y + 0.2, event, 0.4, color="tab:orange", xerr=costs.spread(callers, size, "event"), capsize=2,
            label="event: CUDA events around one call, GPU idle before")
    for yi, v in zip(y, issue):
        if not math.isnan(v):
            ax.text(v, yi - 0.2, f" {v:.0f}", va="center", fontsize=7)
    for yi, v in zip(y, event):
        if not math.isnan(v):
            ax.text(v, yi + 0.2, f" {v:.0f}", va="center", fontsize=7)
    ax.set_yticks(y, callers, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("microseconds per call")
    ax.set_title(f"What one {size}x{size}x{size} call costs\n({costs.source})", fontsize=9)
    ax.legend(fontsize=7, loc="lower right")
    plt.tight_layout()
    return ax


def recorded_costs(rec):
    """The record's per-call costs as a CallCosts."""
    return CallCosts(rec.overhead or [], f"recorded on {label(rec)}")


def _find(names, text):
    return next((c for c in names if c.startswith(text)), None)


def issue_less_count(costs, a, b):
    """([sizes where ``a`` took less issue time than ``b``], sizes where both were measured), the
    times compared as the table shows them (whole µs: equal there is not less)."""
    sizes = [n for n in costs.sizes()
             if not (math.isnan(costs.get(a, n)) or math.isnan(costs.get(b, n)))]
    return [n for n in sizes if round(costs.get(a, n)) < round(costs.get(b, n))], sizes


def yardstick(costs):
    """How far a median moves between measurements, as lesson 11 reads it off the per-call table:
    the larger span (highest minus lowest issue time over the sizes) of the two callers whose host
    work does not depend on the size (the ladder's rung and ``kernel[grid, block]``), or None."""
    spans = []
    for c in costs.callers():
        if c.startswith("ladder") or "kernel[grid, block]" in c:
            vals = [costs.get(c, n) for n in costs.sizes() if not math.isnan(costs.get(c, n))]
            if len(vals) > 1:
                spans.append(max(vals) - min(vals))
    return max(spans) if spans else None


def cheapest(costs, size, what="issue_us"):
    """(caller, µs) with the least ``what`` at ``size``, or (None, nan)."""
    got = [(c, costs.get(c, size, what)) for c in costs.callers()]
    got = [(c, v) for c, v in got if not math.isnan(v)]
    return min(got, key=lambda x: x[1]) if got else (None, float("nan"))


def cells_below(costs, what, than):
    """[(caller, size, its ``what`` µs, its ``than`` µs)] where one column of the per-call table is
    below another in the same cell, as the table shows them (whole µs)."""
    out = []
    for c in costs.callers():
        for n in costs.sizes():
            v, w = costs.get(c, n, what), costs.get(c, n, than)
            if not (math.isnan(v) or math.isnan(w)) and round(v) < round(w):
                out.append((c, n, v, w))
    return out


def below_issue(costs, what):
    """[(caller, size, its ``what`` µs, its issue µs)] where ``what`` ("sync_us" or "event_us") is
    below the issue time."""
    return cells_below(costs, what, "issue_us")


def event_above_sync(costs):
    """[(caller, size, event µs, sync µs)] where the event time is above the round trip's: the
    events are recorded inside the round trip, so only different samples can put it there."""
    return [(c, n, e, sync) for c, n, sync, e in cells_below(costs, "sync_us", "event_us")]


def call_costs_notes(costs, rec=None, size=CALL_COST_SIZE, lib="gl.sgemm(A, B, C)"):
    """What the per-call table shows, read off it: how far each caller's issue time moved over the
    sizes, event over issue per size, the cells where a round trip or a bracketed call came out
    below the issue time, the caller that cost the host least at ``size``, and at how many sizes
    ``lib`` cost the host less than each other caller, in this run and (``rec``) in the record."""
    names, sizes = costs.callers(), costs.sizes()
    if not names or not sizes:
        return ""
    runs = [("this run" if costs.measured_now else "the record", costs)]
    if rec is not None and costs.measured_now and rec.overhead:
        runs.append(("the record", recorded_costs(rec)))
    lines = []
    spans = []
    for c in names:
        vals = [costs.get(c, n) for n in sizes if not math.isnan(costs.get(c, n))]
        if vals:
            spans.append(f"{c} {min(vals):.0f} to {max(vals):.0f} µs")
    lines.append(f"Issue time over the {len(sizes)} sizes, lowest to highest: " + "; ".join(spans) + ".")
    ratios = []
    for n in sizes:
        r = [costs.get(c, n, "event_us") / costs.get(c, n) for c in names
             if costs.get(c, n) and not math.isnan(costs.get(c, n, "event_us") / costs.get(c, n))]
        if r:
            ratios.append(f"{n}^2 {min(r):.1f} to {max(r):.1f}")
    lines.append(f"Event time / issue time, lowest to highest over the {len(names)} callers: "
                 + "; ".join(ratios) + ".")
    low = []
    for what, name in (("sync_us", "sync"), ("event_us", "event")):
        found = below_issue(costs, what)
        low.append(f"{name} below issue: " + ("; ".join(f"{c} at {n}^2 ({v:.0f} against {i:.0f} µs)"
                                                        for c, n, v, i in found) if found else "nowhere"))
    lines.append(low[0][0].upper() + low[0][1:] + ". " + low[1][0].upper() + low[1][1:] + ".")
    above = event_above_sync(costs)
    lines.append("Event above sync (the two come from separate sets of calls, so slower calls in the event set can "
                 "put its median above the sync median; not explained here): " + ("; ".join(f"{c} at {n}^2 ({e:.0f} against {v:.0f} µs)"
                                                     for c, n, e, v in above) if above else "nowhere") + ".")
    if lib in names:
        lines.append(f"The plans `{lib}` ran (`dispatch.plan_for`; split-K is two kernels): "
                     + "; ".join(f"{n}^2 {dispatch.plan_for(n, n, n, True)}" for n in sizes) + ".")
    sticks = {where: yardstick(t) for where, t in runs}
    lines.append("The yardstick (the larger span of the two callers whose host work does not change with the size): "
                 + ", ".join(f"{v:.0f} µs in {where}" for where, v in sticks.items() if v is not None) + ".")
    best = [(where, *cheapest(t, size)) for where, t in runs]
    text = f"Least issue time at {size}^2: " + ", ".join(f"{c} ({v:.0f} µs) in {where}" for where, c, v in best)
    if len(best) > 1:
        text += ": the two runs " + ("agree" if best[0][1] == best[1][1] else "disagree")
    margins = []
    for (where, t), (_, c, v) in zip(runs, best):
        others = sorted(t.get(o, size) for o in t.callers() if o != c and not math.isnan(t.get(o, size)))
        stick = sticks[where]
        if others and stick is not None:
            margins.append(f"{others[0] - v:.0f} µs ahead of the next caller in {where}, "
                           + ("more" if others[0] - v > stick else "not more") + " than the yardstick")
    lines.append(text + (" (" + "; ".join(margins) + ")" if margins else "") + ".")
    head = (f"**Reading the table above**, {costs.source}"
            + (f"; the record: {label(rec)}" if len(runs) > 1 else "") + "\n\n")
    out = head + "\n".join("* " + line for line in lines)
    if lib in names:
        body = []
        for other in names:
            if other == lib:
                continue
            row_ = [other]
            for where, t in runs:
                less, both = issue_less_count(t, lib, other)
                stick = sticks[where]
                beyond = [n for n in less if stick is not None and t.get(other, n) - t.get(lib, n) > stick]
                row_.append(f"{len(less)} of {len(both)} ({len(beyond)} by more than the yardstick)")
            body.append(row_)
        out += ("\n\n" + tables.markdown([f"{lib} took less issue time than", *(f"sizes, {w}" for w, _ in runs)],
                                          body, "l" + "r" * len(runs)))
    return out


def overhead_sentence(rec, size=CALL_COST_SIZE):
    """The per-call costs at ``size`` in one generated sentence (from the record)."""
    costs = CallCosts(rec.overhead or [], "")
    names = costs.callers()
    lib = next((c for c in names if c.startswith("gl.sgemm(A, B, C)")), None)
    raw = next((c for c in names if "kernel[grid, block]" in c), None)
    rung = next((c for c in names if c.startswith("ladder")), None)
    cub = next((c for c in names if c.startswith("cuBLAS")), None)
    alloc = next((c for c in names if "allocates" in c), None)
    if not (lib and raw and rung and cub):
        return ""
    g = lambda c, w="issue_us": costs.get(c, size, w)  # noqa: E731
    text = (f"At {size}^2 ({label(rec)}), issuing one call took the host {g(lib):.0f} µs through `gl.sgemm(A, B, C)`, "
            f"{g(raw):.0f} µs as `kernel[grid, block](...)` (numba's dispatch alone), {g(rung):.0f} µs through the "
            f"ladder's rung (its checks, then numba's dispatch) and {g(cub):.0f} µs through the cuBLAS wrapper")
    if alloc:
        text += f"; `gl.sgemm(A, B)`, which allocates C on every call, took {g(alloc):.0f} µs"
    sizes = costs.sizes()
    big = max(sizes)
    text += (f". CUDA events around one `gl.sgemm(A, B, C)` call on an idle GPU measured {g(lib, 'event_us'):.0f} µs "
             f"at {size}^2 and {costs.get(lib, big, 'event_us'):.0f} µs at {big}^2: getting the call to the GPU, plus "
             "the kernel.")
    return text


def launch_probe(device=None):
    """The record of experiments/launch/launch_probe.py for ``device`` (default: the reference GPU), or None."""
    return results.experiment_record("launch", device=device)


def launch_probe_sentence(probe=None, rec=None):
    """What experiments/launch/launch_probe.py measured, part by part, in generated sentences; with ``rec`` (the
    shape suite's record), its issue times of the same call next to the probe's."""
    probe = probe if probe is not None else launch_probe()
    if not probe:
        return ("No launch probe is recorded for this GPU (`python3 -m experiments.launch.launch_probe --out experiments/launch` "
                "on one records it).")
    T = probe["timings"]

    def get(prefix):
        key = next(k for k in T if k.startswith(prefix))
        plan = re.search(r"\(([^)]*)\)$", key)
        return T[key]["median_us"], plan.group(1) if plan else ""

    (d1, p1), (d2, p2) = get("gl.sgemm 128^2 via driver"), get("gl.sgemm 512^2 via driver")
    (c1, _), (c2, _) = get("gl.sgemm 128^2 via cuda.core"), get("gl.sgemm 512^2 via cuda.core")
    (k1, _), (k2, _) = get("checks + plan look-up only 128^2"), get("checks + plan look-up only 512^2")
    flat, _ = get("flattening three arrays")
    text = (f"Measured part by part (`experiments/launch/launch_probe.py`, {probe['device']}, {probe['date'][:10]}, commit "
            f"{probe['git_commit']}; host time per call, the median of 10 batches of 200 calls): `gl.sgemm(A, B, C)` "
            f"took {d1:.1f} µs at 128^2 ({p1}: one kernel) and {d2:.1f} µs at 512^2 ({p2}: two kernels) launching "
            f"through the driver, and {c1:.1f} and {c2:.1f} µs with the same Launchers going through the `launch` "
            f"of [cuda.core](https://nvidia.github.io/cuda-python/cuda-core/latest/) (NVIDIA's Python layer over the "
            f"CUDA driver; the Launcher's other way to launch). Its checks and plan look-up alone took {k1:.1f} and {k2:.1f} µs: the launches are most of "
            f"a call. Flattening three arrays, which the driver path skips for arrays a Launcher was given on its "
            f"last call, took {flat:.1f} µs.")
    if any(k.startswith("torch.matmul") and "median_us" in T[k] for k in T):
        (t1, _), (t2, _) = get("torch.matmul(a, b, out=c) 128^2"), get("torch.matmul(a, b, out=c) 512^2")
        text += (f" For scale, `torch.matmul(a, b, out=c)` on torch tensors took {t1:.1f} and {t2:.1f} µs in the "
                 "same process.")
    costs = CallCosts(rec.overhead or [], "") if rec is not None else None
    lib = next((c for c in costs.callers() if c.startswith("gl.sgemm(A, B, C)")), None) if costs else None
    if lib and {128, 512} <= set(costs.sizes()):
        text += (f" The shape suite's run ({label(rec)}, commit {rec.git_commit}; batches of 20 calls) measured the "
                 f"same call at {costs.get(lib, 128, 'issue_us'):.1f} and {costs.get(lib, 512, 'issue_us'):.1f} µs: "
                 "two runs of one call, in different processes and batch sizes, differ by that much, so neither "
                 "number is the cost to a microsecond.")
    return text


# ---------------------------------------------------------------------------------- split-K
def split_k_diagram(splits=4, ax=None):
    """A (M x K) cut into ``splits`` column chunks, B into as many row chunks, each pair a partial
    product in the workspace, the parts added into C."""
    import matplotlib.pyplot as plt
    import matplotlib.patches as patches

    if ax is None:
        _, ax = plt.subplots(figsize=(11, 3.2))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    M, K, N = 1.0, 8.0, 3.0  # drawing units: a short, wide A; a tall, narrow B; a small C
    w = K / splits
    for z in range(splits):
        c = colors[z % len(colors)]
        ax.add_patch(patches.Rectangle((z * w, 0), w, M, fc=c, alpha=0.45, ec="black"))
        ax.add_patch(patches.Rectangle((K + 1.0, -z * w * 0.35 - 0.2), N, w * 0.35, fc=c, alpha=0.45, ec="black"))
        ax.add_patch(patches.Rectangle((K + 2.0 + N + 0.2 * z, 0.15 * z), N, M, fc=c, alpha=0.45, ec="black"))
        ax.text(z * w + w / 2, M / 2, f"k chunk {z}", ha="center", va="center", fontsize=8)
    ax.text(K / 2, M + 0.25, "A (M x K): part z reads columns z*k_chunk ...", ha="center", fontsize=8)
    ax.text(K + 1.0 + N / 2, 0.62, "B (K x N): ... and the same rows", ha="center", fontsize=8)
    ax.text(K + 2.0 + N / 2 + 0.3, M + 0.15 * splits + 0.2, f"workspace: {splits} partial C's", ha="center", fontsize=8)
    x0 = K + 4.6 + 2 * N
    ax.annotate("", (x0, M / 2), (x0 - 0.9, M / 2), arrowprops=dict(arrowstyle="->"))
    ax.add_patch(patches.Rectangle((x0 + 0.1, 0), N, M, fc="lightgrey", ec="black"))
    ax.text(x0 + 0.1 + N / 2, M / 2, "C = alpha * sum\n+ beta * C", ha="center", va="center", fontsize=8)
    ax.text(x0 - 0.45, M / 2 - 0.2, "reduction\nkernel", ha="center", va="top", fontsize=7)
    ax.set_xlim(-0.2, x0 + N + 0.4)
    ax.set_ylim(-w * 0.35 * splits - 0.4, M + 0.15 * splits + 0.5)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title(f"split-K with {splits} parts: {splits}x the blocks, each with 1/{splits} of the k-loop, "
                 "then one more kernel", fontsize=9)
    return ax


def waves(shape, plan, model):
    """How ``plan`` fills the GPU at ``shape`` under ``model``: blocks, block slots (resident
    blocks per SM x SMs), waves, and the share of the slots the last wave uses."""
    M, N, K = shape
    gx, gy, split = plan.grid(M, N)
    blocks = gx * gy * split
    bps = model.speed(plan).blocks_per_sm
    slots = bps * model.sms
    n = -(-blocks // slots)
    return {"plan": str(plan), "blocks": blocks, "blocks_per_sm": bps, "slots": slots, "waves": n,
            "last_wave": (blocks - (n - 1) * slots) / slots, "k_per_block": plan.k_chunk(K)}


def last_wave_sentence(shape, plan, model):
    """How ``model`` charges ``plan``'s last wave at ``shape``: blocks, slots, how full the wave is,
    the blocks on its busiest SM and the share of a full SM's rate the model gives that SM."""
    w = waves(shape, plan, model)
    rest = w["blocks"] - (w["waves"] - 1) * w["slots"]
    busiest = -(-rest // model.sms)
    s = model.speed(plan)
    share = s.sm_rate(busiest, model.sms) / s.sm_rate(s.blocks_per_sm, model.sms)
    how = (("the calibration's rate of one block alone on an SM" if busiest == 1 else
            "on the straight line, in blocks per SM, between the calibration's rate of one block alone on an SM "
            "and a full SM's") if s.lone_gflops else
           f"1/{s.blocks_per_sm} of a full SM per block, as in a full wave: no rate of one block alone on an SM "
           "was measured")
    plural = lambda n, word: f"{n} {word}" + ("" if n == 1 else "s")  # noqa: E731
    return (f"{plan} at {shape_name(shape)}: {plural(w['blocks'], 'block')} for {w['slots']} slots "
            f"({w['blocks_per_sm']} per SM x {model.sms} SMs), {plural(w['waves'], 'wave')}, the last "
            f"{100 * w['last_wave']:.0f}% full; the busiest SM of the last wave holds {plural(busiest, 'block')}, and "
            f"the model gives that SM {share:.2f} of a full SM's rate ({how}).")


def split_occupancy_sentence(model, cc="9.0"):
    """Where the model's blocks per SM for the wide kernel's split plans (the unsplit kernel's,
    from its calibration) differ from what the offline compile of the split form reports
    (results/arch-facts.json): one generated sentence."""
    if all(_offline_facts(f"wide_split {tiles}", cc) is None for tiles in dispatch.TILES):
        return "No offline compile of the split kernels is recorded, so the model's blocks per SM for them are unchecked."
    differ = []
    for tiles in dispatch.TILES:
        split = _offline_facts(f"wide_split {tiles}", cc)
        speed = model.speeds.get(f"wide/{tiles}")
        if split and speed and split["blocks_per_sm"] != speed.blocks_per_sm:
            differ.append(f"{tiles}: {split['blocks_per_sm']} blocks per SM ({split['registers']} registers) where the "
                          f"model counts {speed.blocks_per_sm}")
    head = ("The model counts a split plan's slots with the unsplit kernel's blocks per SM: its calibration times the "
            "unsplit kernel. The wide kernel's split form (`TileConfig(split_k=True)`) is a separate compile. ")
    if not differ:
        return head + f"Compiled offline for sm_{cc.replace('.', '')} (results/arch-facts.json), it fits as many blocks per SM as the unsplit form at every tile size."
    return (head + f"Compiled offline for sm_{cc.replace('.', '')} (results/arch-facts.json), it differs at "
            + "; ".join(differ) + ". For those split plans the figure and the model's estimates count fewer slots than "
            "the split kernel likely has; the model was not corrected for it, and what it changes in the choice was "
            "not measured.")


def waves_figure(shape, plans, model, ax=None):
    """For each plan, one strip per resident block slot over the SMs: how the first wave fills
    the GPU (blocks handed out one per SM first: an assumption, the hardware's order is not
    documented)."""
    import matplotlib.pyplot as plt

    if ax is None:
        rows = sum(model.speed(p).blocks_per_sm for p in plans)
        _, ax = plt.subplots(len(plans), 1, figsize=(11, 0.3 * rows + 0.7 * len(plans)),
                             gridspec_kw={"height_ratios": [model.speed(p).blocks_per_sm for p in plans]})
    ax = np.atleast_1d(ax)
    for axis, plan in zip(ax, plans):
        w = waves(shape, plan, model)
        grid = np.zeros((w["blocks_per_sm"], model.sms))
        first = min(w["blocks"], w["slots"])
        for b in range(first):
            grid[b // model.sms, b % model.sms] = 1
        axis.imshow(grid, aspect="auto", cmap="Blues", vmin=0, vmax=1.3, interpolation="nearest")
        axis.set_yticks(range(w["blocks_per_sm"]), [f"slot {i}" for i in range(w["blocks_per_sm"])], fontsize=6)
        axis.set_xticks([0, model.sms - 1], ["SM 0", f"SM {model.sms - 1}"], fontsize=6)
        busy = first / w["slots"]
        ragged = plan.split > 1 and w["k_per_block"] * plan.split != shape[2]  # the last layer sums the rest of K
        each = f"{w['k_per_block']} k each" + (f" (the last layer {shape[2] - (plan.split - 1) * w['k_per_block']})"
                                                if ragged else "")
        axis.set_title(f"{plan}: {w['blocks']} blocks of {each} for {w['slots']} slots "
                       f"({w['blocks_per_sm']} per SM x {model.sms} SMs): {w['waves']} wave(s), the first "
                       f"{100 * busy:.0f}% busy", fontsize=8, loc="left")
    plt.tight_layout()
    return ax


def plans_markdown(rec, shape, model=None, top=None):
    """Every candidate plan timed at ``shape`` (back to back), next to the model's estimate: the
    fastest first; the plan gl.sgemm chose and the fastest marked."""
    r = row(rec, shape)
    if r is None or not r.plans_ms:
        return f"(no plans timed at {shape_name(shape)} in the record)"
    model = model or recorded_model(rec)
    M, N, K = shape
    timed = sorted(((p, ms) for p, ms in r.plans_ms.items() if isinstance(ms, float)), key=lambda x: x[1])
    by_name = {str(p): p for p in dispatch.PLANS}
    body = []
    for name, ms in timed[:top] if top else timed:
        est = model.estimate_s(by_name[name], M, N, K) * 1e3 if name in by_name else float("nan")
        mark = " ".join(m for m, ok in (("chosen", name == r.plan), ("fastest", name == r.best_plan)) if ok)
        body.append([name, f"{ms:.3f}", f"{tflops(shape, ms):.1f}", f"{est:.3f}", mark])
    return (f"**{shape_name(shape)}: every candidate plan, back to back**, recorded on {label(rec)}\n\n"
            + tables.markdown(["plan", "measured ms", "TFLOPS", "model's estimate ms", ""], body, "lrrrl"))


def split_k_gain(r):
    """How many times as fast as the fastest plan without split-K the fastest split-K plan ran
    (ShapeRow with plans_ms), or nan."""
    timed = {p: ms for p, ms in (r.plans_ms or {}).items() if isinstance(ms, float)}
    split = [ms for p, ms in timed.items() if " split " in p]
    whole = [ms for p, ms in timed.items() if " split " not in p]
    return min(whole) / min(split) if split and whole else float("nan")


def split_k_best(r):
    """(fastest plan without split-K, its ms, fastest plan with split-K, its ms) of a ShapeRow whose
    plans were timed (back to back), or None."""
    timed = {p: ms for p, ms in (r.plans_ms or {}).items() if isinstance(ms, float)}
    whole = [p for p in timed if " split " not in p]
    split = [p for p in timed if " split " in p]
    if not (whole and split):
        return None
    w, s = min(whole, key=timed.get), min(split, key=timed.get)
    return w, timed[w], s, timed[s]


def split_k_compared(r):
    """The two plans split_k_gain compares at ``r``'s shape, with their times (back to back)."""
    best = split_k_best(r)
    if best is None:
        return ""
    whole, w_ms, split, s_ms = best
    shape = tuple(r.shape)
    return (f"the fastest plan without split-K, {whole}, took {w_ms:.3f} ms ({tflops(shape, w_ms):.1f} TFLOPS); "
            f"the fastest with it, {split}, {s_ms:.3f} ms ({tflops(shape, s_ms):.1f} TFLOPS): {w_ms / s_ms:.2f}x as "
            "fast.")


def split_k_sentence(rec, shape=SKINNY_SHAPE):
    r = row(rec, shape)
    if r is None or split_k_best(r) is None:
        return ""
    text = (f"At {shape_name(shape)} ({label(rec)}, back to back) " + split_k_compared(r)
            + f" gl.sgemm chose {r.plan}")
    if r.pct_cublas_single:
        text += (f", which ran at {r.pct_cublas_single:.0f}% of cuBLAS in single calls and "
                 f"{r.pct_cublas_back_to_back:.0f}% back to back")
    return text + "."


def splitk_probe(device=None):
    """The record of tools/splitk_probe.py at commit 1fc2bd8 (split-K in one launch against two;
    experiments/splitk/) for ``device``."""
    return results.experiment_record("splitk", device=device)


def splitk_probe_facts(probe):
    """{(shape, plan): (back-to-back ratio, single-call ratio, host µs saved, same bits)}: one
    launch's time over two launches' for each pair the probe timed."""
    out = {}
    for r in probe["rows"]:
        two, one = r["forms"]["two launches"], r["forms"]["one launch"]
        out[tuple(r["shape"]), r["plan"]] = (
            one["back_to_back"]["median_ms"] / two["back_to_back"]["median_ms"],
            one["single"]["median_ms"] / two["single"]["median_ms"],
            two["issue_us"] - one["issue_us"], one["same_bits_as_two_launches"] and one["correct"])
    return out


def _longer(ratio):
    return f"{100 * (ratio - 1):.0f}% longer" if ratio >= 1 else f"{100 * (1 - ratio):.0f}% less time"


def splitk_probe_sentence(probe=None):
    """What the one-launch split-K measured against two launches, in a generated sentence."""
    probe = probe if probe is not None else splitk_probe()
    if not probe:
        return "No split-K probe is recorded for this GPU."
    facts = splitk_probe_facts(probe)
    b2b, single, saved = ([f[i] for f in facts.values()] for i in range(3))
    slower = sum(r > 1 for r in b2b)
    chosen = sum(r["chosen"] for r in probe["rows"])
    text = (f"Measured (`tools/splitk_probe.py`, {probe['device']}, {probe['date'][:10]}, commit "
            f"{probe['git_commit']}; {len(facts)} pairs of a shape and a split plan, {chosen} of them the plan "
            f"dispatch chose): back to back, one launch took from {_longer(min(b2b))} to {_longer(max(b2b))} than "
            f"two launches (longer on {slower} of the {len(facts)} pairs); one call at a time, from "
            f"{_longer(min(single))} to {_longer(max(single))}. "
            + ("It gave the same bits as two launches, and the right product, on every pair. " if all(
                f[3] for f in facts.values()) else "It did NOT give the same bits as two launches on every pair. ")
            + f"Host time per call: two launches' minus one launch's, {float(np.median(saved)):.1f} µs (the median over "
            f"the pairs; from {min(saved):.1f} to {max(saved):.1f} µs).")
    regs = probe.get("offline_sm90")
    if regs:
        K = regs["kernels"]
        parts = []
        for tiles in dict.fromkeys(name.split()[0] for name in K):
            one, two = K[f"{tiles} one launch"], K[f"{tiles} two launches"]
            spills = (f", {one['spill_store_bytes']} bytes of spill stores where two launches have "
                      f"{two['spill_store_bytes']}" if one["spill_store_bytes"] != two["spill_store_bytes"] else "")
            parts.append(f"{tiles}: {one['registers']} registers per thread and {one['blocks_per_sm']} blocks per SM "
                         f"against {two['registers']} and {two['blocks_per_sm']}{spills}")
        text += (f" The compiler's counts for the two forms of the kernel (compiled offline for sm_90 at commit "
                 f"{regs['git_commit']}, one launch against two): " + "; ".join(parts) + ".")
    return text


def bigtile_probe(device=None):
    """The record of experiments/bigtile/bigtile_probe.py (larger block tiles against 128x128) for ``device``."""
    return results.experiment_record("bigtile", device=device)


BIGTILE_BASE = "library 128x128"


def bigtile_probe_markdown(probe=None):
    """A table of the big-tile probe: % of cuBLAS back to back per size and tile, with the
    compiler's registers and resident warps per SM, and a generated sentence under it."""
    probe = probe if probe is not None else bigtile_probe()
    if not probe:
        return "No big-tile probe is recorded for this GPU."
    names = list(probe["rows"][0]["kernels"])
    K = probe.get("offline_sm90", {}).get("kernels", {})
    head = (["block tile (config)", "registers", "blocks per SM", "warps per SM"]
            + [f"% of cuBLAS at {r['shape'][0]}^3" for r in probe["rows"]])
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name in names:
        cfg = probe["compiled"][name]["config"]
        k = K.get(name, {})
        cells = [f"{name} (`{cfg}`)"] + [str(k.get(x, "?")) for x in ("registers", "blocks_per_sm", "warps_per_sm")]
        cells += [f"{r['kernels'][name]['pct_cublas']:.1f}%" for r in probe["rows"]]
        lines.append("| " + " | ".join(cells) + " |")
    ok = all(probe["compiled"][n]["correct"] and all(r["kernels"][n]["correct"] for r in probe["rows"])
             for n in names)
    best_other = max(r["kernels"][n]["pct_cublas"] for r in probe["rows"] for n in names if n != BIGTILE_BASE)
    base_low = min(r["kernels"][BIGTILE_BASE]["pct_cublas"] for r in probe["rows"])
    wins = [(r["shape"][0], n) for r in probe["rows"] for n in names
            if n != BIGTILE_BASE and r["kernels"][n]["pct_cublas"] > r["kernels"][BIGTILE_BASE]["pct_cublas"]]
    text = (f"Measured (`experiments/bigtile/bigtile_probe.py`, {probe['device']}, {probe['date'][:10]}, commit {probe['git_commit']}; "
            f"back to back, % of the mean of cuBLAS's medians timed before and after the tiles; registers, blocks and warps per SM "
            f"from an offline sm_90 compile of the same commit). "
            + ("Every tile gave the right product (float64 reference) at every size and on a non-square check. "
               if ok else "NOT every tile gave the right product. ")
            + (f"No larger tile beat 128x128 at any size: the best of them reached {best_other:.1f}% of cuBLAS, "
               f"128x128 never less than {base_low:.1f}%." if not wins else
               "A larger tile beat 128x128 at " + ", ".join(f"{s}^3 ({n})" for s, n in wins) + "."))
    return "\n".join(lines) + "\n\n" + text


def cp_async_probe_line(device=None):
    """experiments/cp_async/'s record, as one line (or a line saying there is none)."""
    probe = results.experiment_record("cp_async", device=device)
    if not probe:
        return "No cp.async probe is recorded for this GPU."
    versions = ", ".join(f"{name} {probe['versions'][key]}" for key, name in (("driver", "driver"),
                                                                              ("numba_cuda", "numba-cuda"))
                         if key in probe["versions"])
    head = f"{probe['device']}, {probe['date'][:10]}, commit {probe['git_commit']}" + (f" ({versions})" if versions else "")
    parts = [f"{c['copy']}: {'exact' if c['exact'] else 'WRONG'}" for c in probe["checks"]]
    # the SASS counts as "10 LDGSTS, ..." (glossary: cp.async)
    parts.append("SASS: " + ", ".join(f"{n} `{op}`" for op, n in probe["sass"].items())
                 + " ([cp.async, LDGSTS](GLOSSARY.md#cp-async) says what they are)")
    parts.append(f"cp.async through linked CUDA C: {'works' if probe['works'] else 'FAILED'}")
    return f"`experiments/cp_async/cp_async_probe.py` ({head}): " + "; ".join(parts) + "."


def multistage_probe(device=None):
    """The record of experiments/multistage/multistage_probe.py (cp.async stages against 128x128) for ``device``."""
    return results.experiment_record("multistage", device=device)


def multistage_probe_sentence(probe=None):
    """What the multistage (cp.async) form of the last rung measured, in a generated sentence."""
    probe = probe if probe is not None else multistage_probe()
    if not probe:
        return "No multistage probe is recorded for this GPU."
    rows = probe["rows"]
    sizes = [r["shape"][0] for r in rows]

    def span(name):
        v = [r["kernels"][name]["pct_cublas"] for r in rows]
        return f"{min(v):.1f}% to {max(v):.1f}%"

    names = list(rows[0]["kernels"])
    ok = not probe["failures"] and all(c["correct"] for c in probe["compiled"].values())
    regs = {c.get("registers") for c in probe["compiled"].values()}
    return (f"Measured (`experiments/multistage/multistage_probe.py`, {probe['device']}, {probe['date'][:10]}, commit {probe['git_commit']}; "
            f"back to back at {sizes[0]}^3 to {sizes[-1]}^3, % of the mean of cuBLAS's medians before and after): "
            + "; ".join(f"{n} {span(n)}" for n in names) + ". "
            + ("Every form gave the right product (float64 reference, a full check at "
               + "x".join(map(str, probe["compiled"][names[0]]["check_shape"])) + " and a sample at each size)"
               if ok else "NOT every form gave the right product")
            + (f"; each compiled to {regs.pop()} registers per thread." if len(regs) == 1 else "."))


def multistage_profile_sentence(device=None):
    """The recorded ncu profile of the multistage probe's first form, in a generated sentence."""
    from gemm_lessons.instruments import profiler

    record = results.ncu_record(results.experiment("multistage", "ncu", device))
    if record is None:
        return ""
    header, calls, launches = record
    parts = []
    for call, k in zip(calls, launches):
        stalls = ", ".join(f"*{r.replace('_', ' ')}* {v:.0f}%" for r, v in profiler.top_stalls(k, 2))
        parts.append(f"{call}: issue slots busy {k['smsp__issue_active.avg.pct_of_peak_sustained_active']:.0f}%, FMA pipe "
                     f"busy {k['sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active']:.0f}%, top stalls {stalls}")
    where = results.ncu_where(header)
    return (f"Nsight Compute on the first form, which found each stage's offset at run time (`experiments/multistage/multistage_probe.py "
            f"--profile`, {where}, 4096^3): " + "; ".join(parts) + ".")


def reduce_wide_probe(device=None):
    """experiments/reduce_wide/'s record: (where it comes from: "`<probe>`, <device>, <date>, commit
    <sha>", [{size, plan, split, call, pass, single, b2b}]) with (median, p10, p90) in ms, ``pass``
    1 or 2 (each size ran twice), or None."""
    probe = results.experiment_record("reduce_wide", device=device)
    if not probe:
        return None
    source = (f"`experiments/reduce_wide/reduce_wide_probe.py`, {probe['device']}, {probe['date'][:10]}, "
              f"commit {probe['git_commit']}")
    times = ("median_ms", "p10_ms", "p90_ms")
    rows = [{**{k: r[k] for k in ("size", "plan", "split", "call", "pass")},
             "single": tuple(r["single"][t] for t in times), "b2b": tuple(r["back_to_back"][t] for t in times)}
            for r in probe["rows"]]
    return source, rows


def _probe(rows, size, call, kind, which=1):
    return next(r[kind][0] for r in rows if r["size"] == size and r["call"] == call and r["pass"] == which)


def reduce_wide_sentence(probe=None):
    """The two reductions side by side, back to back, from experiments/reduce_wide/reduce_wide_probe.py's record."""
    probe = probe or reduce_wide_probe()
    if not probe:
        return ""
    header, rows = probe
    parts = []
    for size in (1024, 1000):
        get = lambda call: min(_probe(rows, size, call, "b2b", w) for w in (1, 2))  # noqa: E731
        parts.append(f"at {size}^3 the product kernel alone took {get('main alone'):.4f} ms, with the one-float "
                     f"reduction after it {get('main+reduce'):.4f} ms, with the 16-byte one {get('main+reduce_wide'):.4f} "
                     f"ms, and cuBLAS {get('cublas'):.4f} ms")
    text = (f"Back to back ({header}; each shape timed in two passes, the faster median of the "
            "two): " + "; ".join(parts) + ".")
    rec = load()
    model = recorded_model(rec) if rec else None
    plan, split = next(((r["plan"], r["split"]) for r in rows if r["size"] == 1024), ("", None))
    if model and split:  # what the one-float reduction's bytes alone would take at the calibration's copy rate
        n, s = 1024, split
        nbytes = 4 * (s + 1) * n * n  # reads the s parts, writes C (beta 0: C is not read)
        added = min(_probe(rows, n, "main+reduce", "b2b", w) for w in (1, 2)) - min(
            _probe(rows, n, "main alone", "b2b", w) for w in (1, 2))
        text += (f" At {n}^3 ({plan}) the reduction reads the {s} parts and writes C: {nbytes / 1e6:.1f} MB, "
                 f"{nbytes / (model.bandwidth_gbs * 1e3):.1f} µs at the {model.bandwidth_gbs:,.0f} GB/s the model's "
                 f"calibration measured for copies, while the one-float reduction added {1e3 * added:.1f} µs.")
    return text


_PROBE_CALLS = {"main alone": "the product kernel alone", "cublas": "cuBLAS",
                "main+reduce": "the product and the one-float reduction",
                "main+reduce_wide": "the product and the 16-byte reduction"}


def probe_outliers_sentence(probe=None, rec=None, factor=1.5):
    """Calls whose median in one pass of experiments/reduce_wide/reduce_wide_probe.py was ``factor`` times or more the
    other pass's: how often one process's timing of the same call jumps, on that machine."""
    probe = probe or reduce_wide_probe()
    if not probe:
        return ""
    header, rows = probe
    out = []
    for r in rows:
        if r["pass"] != 1:
            continue
        for kind, what in (("single", "one call at a time"), ("b2b", "back to back")):
            a, b = r[kind][0], _probe(rows, r["size"], r["call"], kind, 2)
            if max(a, b) >= factor * min(a, b):
                out.append(f"{_PROBE_CALLS.get(r['call'], r['call'])} at {r['size']}^3, {what}: {a:.4f} ms in one "
                           f"pass, {b:.4f} ms in the other")
    n = len(rows) * 2
    text = (f"{header}: of {n} medians, {len(out)} were {factor:g} times or more the same call's in the "
            f"other pass: " + "; ".join(out) + ". "
            f"gl.sgemm at 1024^3 one call at a time took {_probe(rows, 1024, 'gl.sgemm', 'single', 1):.4f} and "
            f"{_probe(rows, 1024, 'gl.sgemm', 'single', 2):.4f} ms there")
    r = row(rec, (1024, 1024, 1024)) if rec is not None else None
    if r is not None and r.single_gl:
        text += f", against {r.single_gl.median_ms:.3f} ms in the suite's run ({label(rec)})"
    return text + (". Such jumps hit cuBLAS and gl.sgemm alike, so one run's outlier says little about either "
                   "library; what causes them was not measured.")


def ncu_versus_cublas(device=None, path=None):
    """experiments/ncu_vs_cublas/ncu_vs_cublas.py's recorded profile (or the ncu output at ``path``): (its header line,
    [(call, kernel counters)]), or None."""
    record = results.ncu_record(path or results.experiment("ncu_vs_cublas", "ncu", device))
    if record is None:
        return None
    header, calls, launches = record
    pairs, call = [], -1
    for k in launches:
        if "splitk_reduce" not in k["kernel"]:  # a split plan's reduction belongs to the call before it
            call += 1
        pairs.append((calls[call], k))
    return header, pairs


def cublas_kernel_name(shape, profile=None):
    """The name of the kernel cuBLAS ran at ``shape`` ("MxNxK") in the recorded profile (experiments/ncu_vs_cublas/)
    (the name without its template arguments), or a line saying there is none."""
    profile = profile or ncu_versus_cublas()
    names = [k["kernel"] for call, k in (profile[1] if profile else []) if call == f"{shape} cublas"]
    if not names:
        return f"no cuBLAS kernel at {shape} in the recorded profile"
    m = re.search(r"<(cutlass_[^>(]+)>", names[0])
    return m.group(1) if m else names[0]


def _kernel_label(name):
    if "splitk_reduce" in name:
        return "split-K reduction (one float per thread)"
    if "warptile" in name:
        return "warptile (the product)"
    m = re.search(r"tilesize(\d+x\d+)x\d+|sgemm_(\d+x\d+)_", name)
    return f"cuBLAS, tiles {m.group(1) or m.group(2)}" if m else "cuBLAS"


def ncu_versus_cublas_markdown(profile=None):
    """The recorded profile as a table: one row per kernel of each call."""
    profile = profile or ncu_versus_cublas()
    if not profile:
        return "No profile of gl.sgemm next to cuBLAS is recorded for this GPU (`experiments/ncu_vs_cublas/ncu_vs_cublas.py`)."
    header, pairs = profile
    from gemm_lessons.instruments import profiler

    lines = [f"**gl.sgemm's kernels next to cuBLAS's under Nsight Compute** ({header}):", "",
             "| shape | call | kernel | µs (under ncu) | blocks | registers | achieved occupancy | issue slots busy "
             "| FMA pipe busy | L2 hit rate | DRAM read | top stall reasons |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    seen = []
    for call, k in pairs:
        shape, who = call.split(" ", 1)
        top = profiler.top_stalls(k, 2)
        seen += [r for r, _ in top if r not in seen]
        stall_text = ", ".join(f"{r.replace('_', ' ')} {v:.0f}%" for r, v in top)
        lines.append(
            f"| {shape} | {who} | {_kernel_label(k['kernel'])} | {k['gpu__time_duration.sum'] / 1e3:,.1f} "
            f"| {k['launch__grid_size']:,.0f} | {k['launch__registers_per_thread']:.0f} "
            f"| {k['sm__warps_active.avg.pct_of_peak_sustained_active']:.1f}% "
            f"| {k['smsp__issue_active.avg.pct_of_peak_sustained_active']:.1f}% "
            f"| {k['sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active']:.1f}% "
            f"| {k['lts__t_sector_hit_rate.pct']:.1f}% | {k['dram__bytes_read.sum'] / 1e6:,.1f} MB | {stall_text} |")
    lines += ["", "Columns, as in lesson 08's profile where it has them: *achieved occupancy*, resident warps as % "
              "of the SM's maximum; *issue slots busy*, cycles a scheduler issued an instruction; *FMA pipe busy*, cycles the FMA units worked, as % of the cycles they could; *DRAM read*, "
              "bytes read from DRAM (lesson 08 shows DRAM throughput as % of its peak instead). Stall reasons, as % of "
              "the cycles the warps were resident: "
              + "; ".join(f"**{r.replace('_', ' ')}**: {profiler.STALL_REASONS.get(r, 'see the Profiling Guide')}"
                          for r in seen) + ". More in the [glossary](GLOSSARY.md#stall-reasons)."]
    return "\n".join(lines)


def split_versus_one_kernel_sentence(shape="1024x1024x1024", profile=None):
    """Lesson 11's reading of the profile at ``shape``: gl.sgemm's two kernels added up against
    cuBLAS's one, from the record."""
    profile = profile or ncu_versus_cublas()
    if not profile:
        return ""
    T = "gpu__time_duration.sum"
    gl = [k for call, k in profile[1] if call.startswith(f"{shape} gl.sgemm")]
    cub = [k for call, k in profile[1] if call == f"{shape} cublas"]
    if len(gl) != 2 or len(cub) != 1:
        return ""
    a, b, c = gl[0][T] / 1e3, gl[1][T] / 1e3, cub[0][T] / 1e3
    return (f"At {shape} under the profiler, gl.sgemm's product kernel took {a:.1f} µs and its reduction {b:.1f} µs: "
            f"{a + b:.1f} µs in all, against {c:.1f} µs for cuBLAS's one kernel. The product alone was "
            + ("faster" if a < c else "slower") + " than cuBLAS; the reduction is what put the call behind.")


# ---------------------------------------------------------------------------------- measured now
@dataclass
class ShapeTable:
    """gl.sgemm and cuBLAS at a few shapes (records.ShapeRow), measured now or recorded."""
    rows: list
    source: str
    measured_now: bool = False
    rec: object = field(default=None, repr=False)
    all_plans: bool = False  # every candidate plan was timed: the table names the two split_k_gain compares

    def get(self, shape):
        return next((r for r in self.rows if tuple(r.shape) == tuple(shape)), None)

    def pct_cublas(self, shape, kind="single"):
        r = self.get(shape)
        v = getattr(r, f"pct_cublas_{kind}", None) if r else None
        return float("nan") if v is None else v

    def time_ratio(self, shape, base):
        """gl.sgemm's single-call time at ``shape`` over its time at ``base``."""
        a, b = self.get(shape), self.get(base)
        if not (a and b and a.single_gl and b.single_gl):
            return float("nan")
        return a.single_gl.median_ms / b.single_gl.median_ms

    def split_k_gain(self, shape):
        r = self.get(shape)
        return split_k_gain(r) if r else float("nan")

    def _repr_markdown_(self):
        body = []
        for r in self.rows:
            if r.error:
                body.append([shape_name(r.shape), r.plan or "", "FAILED: " + r.error.splitlines()[0], "", "", "", ""])
                continue
            s, c = r.single_gl, r.single_cublas
            body.append([shape_name(r.shape), r.plan or "", "right" if r.correct else "WRONG",
                         f"{s.median_ms:.3f} ({tflops(r.shape, s.median_ms):.1f} TFLOPS)" if s else "",
                         f"{c.median_ms:.3f}" if c else "",
                         f"{r.pct_cublas_single:.1f}%" if r.pct_cublas_single else "",
                         f"{r.pct_cublas_back_to_back:.1f}%" if r.pct_cublas_back_to_back else ""])
        timed = [f"Every candidate plan timed at {shape_name(r.shape)}, back to back: {split_k_compared(r)}"
                 for r in self.rows if self.all_plans and not r.error and split_k_best(r)]
        return (f"**gl.sgemm against cuBLAS**, {self.source}\n\n"
                + tables.markdown(["M x N x K", "plan", "check", "gl.sgemm ms, single call", "cuBLAS ms, single call",
                                   "% of cuBLAS, single", "% of cuBLAS, back to back"], body, "lllrrrr")
                + "".join(f"\n\n{t}" for t in timed))

    def __repr__(self):
        return self._repr_markdown_()


def measure_shapes(shapes, all_plans=False, repeats=20, rec=None, progress=True):
    """gl.sgemm and cuBLAS at ``shapes`` as the shape suite measures them (a check against float64,
    single calls, back to back; every candidate plan with ``all_plans``): now on a GPU, the
    record's rows on the simulator."""
    if backend.SIMULATOR:
        rec = rec or load()
        rows = [row(rec, s) for s in shapes]
        return ShapeTable([r for r in rows if r is not None],
                          f"recorded on {label(rec)} ({backend.not_measured_why()})", False, rec, all_plans)
    from gemm_lessons.runs import shapes as suite
    from gemm_lessons.measure.device import device_info
    from gemm_lessons.core.progress import bar

    pbar = bar(len(shapes), "gl.sgemm vs cuBLAS", progress)
    rows = []
    for s in shapes:
        rows.append(suite.measure_shape("lesson", tuple(s), repeats, pbar, all_plans))
        pbar.update()
    pbar.close()
    return ShapeTable(rows, f"measured on {device_info().name} now", True, all_plans=all_plans)


# ---------------------------------------------------------------------------------- dispatch
CALLERS = {"gl": "gl.sgemm(A, B, C)", "cublas": "cuBLAS (nvmath wrapper)"}  # as the per-call costs name them
WHO = {"gl": "gl.sgemm", "cublas": "cuBLAS"}  # as the suite's tables name them


def issue_near(rec, r, who="gl"):
    """(size, issue µs) of the record's issue time for ``who`` ("gl" or "cublas") on square
    matrices of the size nearest ``r``'s (within 10%; squares only), or None."""
    M, N, K = r.shape
    if not (M == N == K):
        return None
    sizes = [o for o in rec.overhead or [] if o.caller == CALLERS[who] and o.issue_us and abs(o.size - M) <= 0.1 * M]
    if not sizes:
        return None
    o = min(sizes, key=lambda o: abs(o.size - M))
    return o.size, o.issue_us


def host_bound(rec, r, who="gl"):
    """Whether ``who``'s ("gl" or "cublas") back-to-back time at ``r``'s shape is within reach of
    the host's time to issue one call, measured on square matrices of the nearest size (within
    10%): then it times Python, not the kernel (the rule of gemm_lessons.measure.timing)."""
    stats = getattr(r, f"back_to_back_{who}", None)
    near = issue_near(rec, r, who)
    if stats is None or near is None:
        return False
    return near[1] * 1e-3 >= HOST_BOUND * stats.median_ms


def host_bound_evidence(rec, r, who):
    """(size, issue µs, µs per call back to back): what host_bound compared for ``who`` at ``r``."""
    n, issue = issue_near(rec, r, who)
    return n, issue, getattr(r, f"back_to_back_{who}").median_ms * 1e3


def host_bound_lines(rec):
    """One line per host-bound measurement of the suite: the issue time it rests on and the time
    per call back to back."""
    lines = []
    for r in rec.rows or []:
        for who, name in WHO.items():
            if not r.error and host_bound(rec, r, who):
                n, issue, per_call = host_bound_evidence(rec, r, who)
                lines.append(f"{shape_name(r.shape)}, {name}: {issue:.0f} µs to issue one call at {n}^2 (the record's "
                             f"per-call costs, of which section 2 shows {CALL_COST_SIZE}^2), {per_call:.0f} µs per "
                             f"call back to back ({100 * issue / per_call:.0f}%)")
    return lines


# the suite's groups (records.ShapeRow.group) as the table names them: the record's "odd" are the
# shapes whose sides are not powers of 2 (some of them multiples of 4, which the next column shows)
GROUPS = {"square": "square", "odd": "not powers of 2", "skinny": "skinny"}


def suite_markdown(rec):
    """Every shape of the suite: its group, whether K and N are multiples of 4 (the wide kernel's
    condition), the plan gl.sgemm chose, the fastest plan where every plan was timed, the times of
    one call, and % of cuBLAS single and back to back (host-bound flagged, the numbers behind each
    flag listed under the table)."""
    body = []
    for r in rec.rows or []:
        group = GROUPS.get(r.group, r.group)
        four = "yes" if is_wide(r.shape) else "no"
        if r.error:
            body.append([shape_name(r.shape), group, four, r.plan or "", "FAILED", "", "", "", ""])
            continue
        flags = [name for who, name in WHO.items() if host_bound(rec, r, who)]
        b2b = f"{r.pct_cublas_back_to_back:.1f}%" if r.pct_cublas_back_to_back else ""
        if flags:
            b2b += f" (host-bound: {', '.join(flags)})"
        fastest = "" if not r.best_plan else ("same" if r.best_plan == r.plan else r.best_plan)
        body.append([shape_name(r.shape), group, four, r.plan or "", fastest,
                     f"{r.single_gl.median_ms:.3f}" if r.single_gl else "",
                     f"{r.single_cublas.median_ms:.3f}" if r.single_cublas else "",
                     f"{r.pct_cublas_single:.1f}%" if r.pct_cublas_single else "", b2b])
    bound = host_bound_lines(rec)
    tail = ("\n\nHost-bound: the host's issue time at the nearest size measured is at least "
            f"{100 * HOST_BOUND:.0f}% of the time per call back to back. " + "; ".join(bound) + ".") if bound else ""
    return (f"**The shape suite**, recorded on {label(rec)} (`{command(rec)}`)\n\n"
            + tables.markdown(["M x N x K", "group", "K, N multiples of 4", "plan chosen", "fastest plan timed",
                               "gl.sgemm ms (single)", "cuBLAS ms (single)", "% of cuBLAS, single",
                               "% of cuBLAS, back to back"], body, "lllllrrrl") + tail)


def pct_figure(rec, ax=None):
    """% of cuBLAS per shape, single calls and back to back; host-bound bars hatched; the 90% line."""
    import matplotlib.pyplot as plt

    rows = [r for r in rec.rows or [] if not r.error]
    if ax is None:
        _, ax = plt.subplots(figsize=(max(8, 0.6 * len(rows)), 5))
    x = np.arange(len(rows))
    for off, kind, color in ((-0.2, "single", "tab:blue"), (0.2, "back_to_back", "tab:orange")):
        for xi, r in zip(x, rows):
            v = getattr(r, f"pct_cublas_{kind}") or 0
            bound = kind == "back_to_back" and (host_bound(rec, r, "gl") or host_bound(rec, r, "cublas"))
            ax.bar(xi + off, v, 0.4, color=color, hatch="//" if bound else None, ec="white" if bound else color)
            ax.text(xi + off, v, f"{v:.0f}", ha="center", va="bottom", fontsize=6)
    from matplotlib.patches import Patch

    ax.axhline(100, color="black", ls="--", lw=1)
    line = ax.axhline(LOW_PCT, color="tab:red", ls=":", lw=1)
    handles = [Patch(color="tab:blue", label="single calls (CUDA events around each call)"),
               Patch(color="tab:orange", label="back to back (time_gpu)"),
               Patch(fc="tab:orange", hatch="//", ec="white", label="back to back, host-bound"),
               line]
    line.set_label(f"{LOW_PCT:.0f}% of cuBLAS")
    ax.set_xticks(x, [f"{shape_name(r.shape)}\n{r.plan}" for r in rows], rotation=50, ha="right", fontsize=7)
    ax.set_ylabel("% of cuBLAS (cuBLAS time / gl.sgemm time)")
    ax.set_title(f"gl.sgemm against cuBLAS per shape ({label(rec)})", fontsize=9)
    top = max([getattr(r, f"pct_cublas_{k}") or 0 for r in rows for k in ("single", "back_to_back")] + [100])
    ax.set_ylim(0, 1.35 * top)  # room above the tallest bar for the legend
    ax.legend(handles=handles, fontsize=7, loc="upper center", ncol=2)
    plt.tight_layout()
    return ax


def model_points(rec, model=None):
    """(shape, plan, model's estimate ms, measured ms, chosen, fastest) for every plan timed."""
    model = model or recorded_model(rec)
    by_name = {str(p): p for p in dispatch.PLANS}
    out = []
    for r in rec.rows or []:
        M, N, K = r.shape
        for name, ms in (r.plans_ms or {}).items():
            if isinstance(ms, float) and name in by_name:
                out.append((tuple(r.shape), name, model.estimate_s(by_name[name], M, N, K) * 1e3, ms,
                            name == r.plan, name == r.best_plan))
    return out


def model_figure(rec, model=None, ax=None):
    """The dispatch model's estimate against the measured time of every plan timed, one colour per
    shape; the plan chosen (the smallest estimate) ringed, the fastest starred."""
    import matplotlib.pyplot as plt

    pts = model_points(rec, model)
    if ax is None:
        _, ax = plt.subplots(figsize=(6.5, 5.5))
    shapes = list(dict.fromkeys(p[0] for p in pts))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, s in enumerate(shapes):
        mine = [p for p in pts if p[0] == s]
        c = colors[i % len(colors)]
        marker = "osD^v"[i // len(colors) % 5]  # a colour and a marker per shape: the suite has more than 10
        ax.scatter([p[2] for p in mine], [p[3] for p in mine], s=14, color=c, marker=marker, label=shape_name(s))
        for p in mine:
            if p[4]:
                ax.scatter([p[2]], [p[3]], s=110, facecolors="none", edgecolors=c, lw=1.5)
            if p[5]:
                ax.scatter([p[2]], [p[3]], s=90, marker="*", color=c, edgecolors="black", lw=0.5)
    lo = min(min(p[2], p[3]) for p in pts) * 0.8
    hi = max(max(p[2], p[3]) for p in pts) * 1.2
    ax.plot([lo, hi], [lo, hi], color="grey", lw=0.8, ls="--")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("model's estimate (ms)")
    ax.set_ylabel("measured, back to back (ms)")
    ax.scatter([], [], s=110, facecolors="none", edgecolors="black", label="chosen (smallest estimate)")
    ax.scatter([], [], s=90, marker="*", color="white", edgecolors="black", label="fastest measured")
    ax.legend(fontsize=7)
    ax.set_title(f"Every plan: estimate against measurement ({label(rec)})", fontsize=9)
    plt.tight_layout()
    return ax


def model_outliers_sentence(rec, model=None, factor=2.0):
    """The plans whose measured time is ``factor`` times the model's estimate or more, each next
    to the fastest plan of the same tile size at that shape: one generated sentence."""
    pts = model_points(rec, model)
    far = sorted((p for p in pts if p[3] >= factor * p[2]), key=lambda p: -p[3] / p[2])
    if not far:
        return f"No plan measured {factor:g} times its estimate or more."
    parts = []
    for shape, name, est, ms, _, _ in far:
        tiles = name.split()[1]
        kin = [(n, m) for s_, n, _, m, _, _ in pts if s_ == shape and n.split()[1] == tiles and n != name]
        near = min(kin, key=lambda x: x[1]) if kin else None
        parts.append(f"{name} at {shape_name(shape)}, measured {ms:.3f} ms against an estimate of {est:.3f} ms "
                     f"({ms / est:.1f}x)" + (f", where {near[0]} took {near[1]:.3f} ms" if near else ""))
    return (f"Measured {factor:g} times the estimate or more: " + "; ".join(parts) + ". The record keeps one median per "
            "plan and shape and no spread, so whether such a point is a slow measurement or the model's error cannot "
            "be told from it.")


def calibration_markdown(rec):
    """The model's numbers as the record measured them: each kernel and tile size at a square."""
    body = []
    for c in rec.calibration or []:
        if "plan" not in c:
            continue
        if "error" in c:
            body.append([c["plan"], "error: " + c["error"], "", "", "", ""])
            continue
        body.append([c["plan"], f"{c['gflops'] / 1e3:.1f}", c.get("blocks_per_sm", ""), c.get("registers", ""),
                     c.get("local_bytes", ""), c.get("shared_bytes", "")])
    lone = any("lone_gflops" in c for c in rec.calibration or [])
    if lone:  # records since the model learnt partly filled waves
        for row, c in zip(body, [c for c in rec.calibration or [] if "plan" in c]):
            row.insert(2, f"{c['lone_gflops'] / 1e3:.1f}" if "lone_gflops" in c else "")
    copy = next((c["copy_gbs"] for c in rec.calibration or [] if "copy_gbs" in c), None)
    size = next((c["size"] for c in rec.calibration or [] if "size" in c), "?")
    tail = f"\n\nCopy bandwidth for the reduction's and the padding copies' terms: {copy:,.0f} GB/s." if copy else ""
    if lone:
        tail += (" One block per SM: a grid of exactly as many blocks as SMs, K = "
                 f"{size}; the model uses it for a partly filled last wave.")
    else:
        tail += (" This record predates the calibration's rate with one block per SM: the model "
                 "charges a partly filled last wave as much as a full one.")
    head = ["kernel, tiles", "TFLOPS"] + (["TFLOPS, one block per SM"] if lone else []) + \
        ["blocks/SM", "registers", "local bytes (spills)", "shared bytes"]
    return (f"**The dispatch model's calibration** ({size}^3, back to back), recorded on {label(rec)}\n\n"
            + tables.markdown(head, body, "l" + "r" * (len(head) - 1)) + tail)


def disagreements(rec):
    """[(shape, chosen plan, its ms, fastest plan, its ms)] where the plan gl.sgemm chose was not
    the fastest plan timed."""
    out = []
    for r in rec.rows or []:
        if r.best_plan and r.plan != r.best_plan and r.plans_ms:
            out.append((tuple(r.shape), r.plan, r.plans_ms.get(r.plan), r.best_plan, r.plans_ms[r.best_plan]))
    return out


def costliest_disagreement(rec):
    """The shape where the plan chosen lost the most time to the fastest plan timed, or None."""
    dis = [d for d in disagreements(rec) if d[2]]
    return max(dis, key=lambda d: 1 - d[4] / d[2])[0] if dis else None


def estimate_sentence(rec, shape, model=None):
    """At ``shape``: the model's estimates of the plan chosen and of the fastest plan timed, next to
    their measured times (back to back)."""
    r = row(rec, shape)
    if r is None or not r.plans_ms or not r.best_plan or r.best_plan == r.plan:
        return ""
    model = model or recorded_model(rec)
    by_name = {str(p): p for p in dispatch.PLANS}
    parts = []
    for what, name in (("chosen", r.plan), ("fastest", r.best_plan)):
        est = 1e3 * model.estimate_s(by_name[name], *shape)
        parts.append(f"the {what} plan, {name}, at {est:.3f} ms against {r.plans_ms[name]:.3f} ms measured "
                     f"({100 * (est / r.plans_ms[name] - 1):+.0f}%)")
    return f"At {shape_name(shape)} the model estimated " + " and ".join(parts) + "."


def dispatch_sentence(rec):
    """Where the dispatch rule and the measurements disagreed, and the shapes below LOW_PCT."""
    s = rec.summary or {}
    timed = sum(1 for r in rec.rows or [] if r.plans_ms)
    dis = disagreements(rec)
    text = (f"{label(rec)}: {s.get('shapes', len(rec.rows or []))} shapes, {s.get('failed', 0)} failed, "
            f"{s.get('incorrect', 0)} wrong. ")
    if "geomean_pct_cublas_single" in s:
        text += (f"Geometric mean {s['geomean_pct_cublas_single']:.1f}% of cuBLAS in single calls, "
                 f"{s['geomean_pct_cublas_back_to_back']:.1f}% back to back (over every shape, those where "
                 "a caller was host-bound included: there the ratio compares costs per call more than kernels). ")
    if timed:
        text += (f"Every plan was timed on {timed} shapes (the median of a few calls back to back each, no spread "
                 "recorded: a difference of a percent or two may not repeat); the plan chosen was the fastest on "
                 f"{timed - len(dis)} of them")
        if dis:
            parts = [f"{shape_name(sh)}: chose {p} ({ms:.4f} ms), fastest {b} ({bms:.4f} ms, "
                     f"{100 * (1 - bms / ms):.0f}% less time)" for sh, p, ms, b, bms in dis]
            text += "; not on " + "; ".join(parts)
        text += "."
    return text


def single_call_sentence(rec, min_ms=1.0):
    """How much longer a single call took than the same call back to back, for gl.sgemm and for
    cuBLAS, on the shapes whose calls take at least ``min_ms`` (where launching is a small part):
    the single-call % of cuBLAS moves with both."""
    pairs = {who: [] for who in ("gl", "cublas")}
    for r in rec.rows or []:
        for who in pairs:
            one, b2b = getattr(r, f"single_{who}"), getattr(r, f"back_to_back_{who}")
            if one and b2b and b2b.median_ms >= min_ms:
                pairs[who].append((one.median_ms / b2b.median_ms - 1, r))
    if not (pairs["gl"] and pairs["cublas"]):
        return ""
    def span(who):
        v = sorted(pairs[who], key=lambda x: x[0])
        lo, hi = v[0], v[-1]
        return (f"{WHO[who]} {100 * lo[0]:+.0f}% ({shape_name(lo[1].shape)}) to {100 * hi[0]:+.0f}% "
                f"({shape_name(hi[1].shape)})")
    return (f"Single call against back to back, on the {len(pairs['gl'])} shapes whose calls take at least "
            f"{min_ms:g} ms ({label(rec)}): {span('gl')}; {span('cublas')}. Where one library's single calls take "
            "longer than its calls back to back and the other's do not, the single-call % of cuBLAS moves with "
            "that difference, not with the kernels.")


def below(rec, kind="single", threshold=LOW_PCT):
    """The ShapeRows below ``threshold`` % of cuBLAS (``kind``: "single" or "back_to_back")."""
    return [r for r in rec.rows or [] if getattr(r, f"pct_cublas_{kind}") is not None
            and getattr(r, f"pct_cublas_{kind}") < threshold]


def below_markdown(rec, threshold=LOW_PCT):
    """A bullet per shape below ``threshold`` % of cuBLAS in either measurement, with both numbers."""
    shapes = {tuple(r.shape): r for kind in ("single", "back_to_back") for r in below(rec, kind, threshold)}
    lines = []
    for r in rec.rows or []:
        if tuple(r.shape) not in shapes:
            continue
        bound = [w for w in ("gl", "cublas") if host_bound(rec, r, w)]
        note = (" (back to back host-bound for " + " and ".join(
            f"{WHO[w]}: {issue:.0f} µs to issue one call at {n}^2 against {per_call:.0f} µs per call"
            for w in bound for n, issue, per_call in [host_bound_evidence(rec, r, w)]) + ")") if bound else ""
        text = (f"* **{shape_name(r.shape)}** ({r.plan}): {r.pct_cublas_single:.1f}% single, "
                f"{r.pct_cublas_back_to_back:.1f}% back to back{note}; gl.sgemm {r.single_gl.median_ms:.3f} ms "
                f"single, {r.back_to_back_gl.median_ms:.3f} ms back to back; cuBLAS "
                f"{r.single_cublas.median_ms:.3f} ms single, {r.back_to_back_cublas.median_ms:.3f} ms back to back")
        if r.best_plan and r.best_plan != r.plan and r.plans_ms:
            text += (f". Not the fastest plan timed: {r.best_plan} took {r.plans_ms[r.best_plan]:.4f} ms back to back "
                     f"against {r.plans_ms[r.plan]:.4f} ms in the sweep; at that time it would have reached "
                     f"{100 * r.back_to_back_cublas.median_ms / r.plans_ms[r.best_plan]:.1f}% of cuBLAS back to back")
        M, N, K = r.shape
        mirror = row(rec, (N, M, K)) if M != N else None
        if mirror is not None and mirror.pct_cublas_back_to_back:
            text += (f". Its mirror, {shape_name(mirror.shape)} (same work, M and N swapped; {mirror.plan}), ran at "
                     f"{mirror.pct_cublas_single:.1f}% single and {mirror.pct_cublas_back_to_back:.1f}% back to back "
                     f"(gl.sgemm {mirror.back_to_back_gl.median_ms:.3f} ms, cuBLAS "
                     f"{mirror.back_to_back_cublas.median_ms:.3f} ms back to back)")
        lines.append(text)
    head = f"Shapes below {threshold:.0f}% of cuBLAS in single calls or back to back ({label(rec)}):\n\n"
    return head + ("\n".join(lines) if lines else "* none")


def live_versus_record(tables, rec, threshold=LOW_PCT):
    """One generated paragraph: for each shape a ShapeTable of this notebook measured now, its %
    of cuBLAS in this run and in the record, single and back to back, and whether the two fall on
    the same side of ``threshold``.  On the simulator the tables are the record's own rows."""
    live = [(r, row(rec, r.shape)) for t in tables if t.measured_now for r in t.rows if not r.error]
    if not any(t.measured_now for t in tables):
        return ("The tables measured in this notebook are the record's own rows here (nothing was timed now), "
                "so they agree with the list above by construction.")
    parts, crossed = [], []
    for now, then in live:
        if then is None:
            parts.append(f"{shape_name(now.shape)}: not in the record")
            continue
        cells = []
        for kind, name in (("single", "single"), ("back_to_back", "back to back")):
            a, b = getattr(now, f"pct_cublas_{kind}"), getattr(then, f"pct_cublas_{kind}")
            if a is None or b is None:
                continue
            cells.append(f"{a:.1f}% {name} now against {b:.1f}% recorded")
            if (a < threshold) != (b < threshold):
                crossed.append(f"{shape_name(now.shape)} {name}")
        parts.append(f"{shape_name(now.shape)}: " + ", ".join(cells))
    text = "The shapes measured live in this notebook, this run against the record: " + "; ".join(parts) + ". "
    if crossed:
        text += (f"On the other side of {threshold:.0f}% in this run: " + ", ".join(crossed)
                 + ". The list above is the record's.")
    else:
        text += f"None of them is on the other side of {threshold:.0f}% in this run."
    return text


def unexplained(rec, ahead=110.0, slow_single=2.0):
    """What the suite shows and this lesson has no measurement to explain: [(kind, row, who)] with
    kind "ahead" (gl.sgemm above ``ahead``% of cuBLAS back to back, neither host-bound) or "single"
    (one call of ``who``, "gl" or "cublas", took more than ``slow_single`` times its time per call
    back to back)."""
    out = []
    for r in rec.rows or []:
        if r.error:
            continue
        if (r.pct_cublas_back_to_back and r.pct_cublas_back_to_back > ahead
                and not (host_bound(rec, r, "gl") or host_bound(rec, r, "cublas"))):
            out.append(("ahead", r, None))
        for who in ("gl", "cublas"):
            one, b2b = getattr(r, f"single_{who}"), getattr(r, f"back_to_back_{who}")
            if one and b2b and one.median_ms > slow_single * b2b.median_ms:
                out.append(("single", r, who))
    return out


def unexplained_markdown(rec, ahead=110.0, slow_single=2.0):
    """unexplained() as a list, with the numbers each item rests on."""
    lines = []
    def flop(r):
        return counting.sgemm_flops(*r.shape)

    for kind, r, who in unexplained(rec, ahead, slow_single):
        if kind == "ahead":
            lines.append(f"**{shape_name(r.shape)}**: gl.sgemm at {r.pct_cublas_back_to_back:.1f}% of cuBLAS back to "
                         f"back ({r.back_to_back_gl.median_ms:.3f} ms against {r.back_to_back_cublas.median_ms:.3f} ms "
                         f"per call) and {r.pct_cublas_single:.1f}% in single calls; neither host-bound. Why is not "
                         "known here: the suite did not see which kernel cuBLAS chose for the shape.")
            continue
        name = WHO[who]
        one, b2b = getattr(r, f"single_{who}"), getattr(r, f"back_to_back_{who}")
        text = (f"**{shape_name(r.shape)}**, {name}: one call took {one.median_ms:.3f} ms (10th to 90th percentile of "
                f"{one.n} calls: {one.p10_ms:.3f} to {one.p90_ms:.3f} ms), {one.median_ms / b2b.median_ms:.1f}x its "
                f"{b2b.median_ms:.3f} ms per call back to back")
        near = [o for o in rec.rows or [] if o is not r and not o.error and getattr(o, f"single_{who}")
                and abs(flop(o) / flop(r) - 1) <= 0.1]
        if near:
            text += "; at " + ", ".join(f"{shape_name(o.shape)} ({100 * (flop(o) / flop(r) - 1):+.0f}% work) one call "
                                        f"took {getattr(o, f'single_{who}').median_ms:.3f} ms" for o in near)
        lines.append(text + ". What a single call does that a call back to back does not was not measured.")
    head = (f"Not explained by this lesson ({label(rec)}): gl.sgemm above {ahead:.0f}% of cuBLAS back to back where "
            f"neither is host-bound, and single calls more than {slow_single:.0f}x the same call back to back:\n\n")
    return head + ("\n".join("* " + line for line in lines) if lines else "* none")


def compiler_markdown(rec, plans=("wide 128x128", "any_shape 128x128", "any_shape 64x64")):
    """What the compiler made of the library's kernels: now on a GPU (registers, local memory,
    shared memory, the driver's blocks per SM, and the SASS's global loads and stores by width),
    the calibration's numbers on the simulator (no SASS)."""
    if backend.SIMULATOR:
        body = []
        for name in plans:
            c = calibration(rec, name) or {}
            body.append([name, c.get("registers", ""), c.get("local_bytes", ""), c.get("shared_bytes", ""),
                         c.get("blocks_per_sm", "")])
        return (f"**Compiler facts of the library's kernels**, recorded on {label(rec)} (the calibration; not compiled "
                "here: CUDA simulator)\n\n"
                + tables.markdown(["kernel, tiles", "registers", "local bytes (spills)", "shared bytes", "blocks/SM"],
                                  body, "lrrrr"))
    from gemm_lessons.library import device_arrays as library
    from gemm_lessons.measure.device import device_info
    from gemm_lessons.instruments.compiler_facts import sass_summary

    by_name = {str(p): p for p in dispatch.PLANS}
    cols = ["LDG.E.128", "LDG.E", "STG.E.128", "STG.E", "LDS.128", "FFMA"]
    body = []
    for name in plans:
        launcher = library.launcher_for(by_name[name])
        res = launcher.resources() or {}
        sass = sass_summary(launcher.kernel) or {}
        body.append([name, res.get("registers", ""), res.get("local_bytes", ""), res.get("shared_bytes", ""),
                     launcher.blocks_per_sm(), *(sass.get(c, 0) for c in cols)])
    return (f"**Compiler facts of the library's kernels**, compiled on {device_info().name} now\n\n"
            + tables.markdown(["kernel, tiles", "registers", "local bytes (spills)", "shared bytes", "blocks/SM", *cols],
                              body, "l" + "r" * (4 + len(cols))))
