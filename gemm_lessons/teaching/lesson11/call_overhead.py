"""Lesson 11, section 2 (what a call costs): the per-call costs of each way to call a kernel
(``CallCosts``: measured now on a GPU, the record's on the simulator), their figure, and the comparisons
the section reads off the table (cells below another, the p10/p90 separation of two callers).  The
lesson writes the sentences.
"""
import math
from dataclasses import dataclass

import numpy as np

from gemm_lessons.core import backend, tables
from gemm_lessons.teaching.lesson11.suite_record import label, load


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


def call_costs(sizes=(128, 256, 512, 1024), rec=None, progress=True):
    """The per-call cost of gl.sgemm, the ladder's rung, its kernel launched by numba and cuBLAS:
    measured now on a GPU (shapes.measure_overhead, about a minute), the record's rows on the
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


def recorded_costs(rec):
    """The record's per-call costs as a CallCosts."""
    return CallCosts(rec.overhead or [], f"recorded on {label(rec)}")


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


def separation(costs, a, b, what="issue"):
    """{size: µs} by which caller ``a``'s ``what`` ("issue", "sync" or "event") stayed below
    ``b``'s at each size: ``b``'s 10th percentile minus ``a``'s 90th (positive: the two p10-p90
    ranges do not overlap, so the gap is larger than the spread of either measurement); None at a
    size where the percentiles were not recorded."""
    out = {}
    for n in costs.sizes():
        hi, lo = costs.get(a, n, f"{what}_p90_us"), costs.get(b, n, f"{what}_p10_us")
        out[n] = None if hi is None or lo is None or math.isnan(hi) or math.isnan(lo) else lo - hi
    return out


def issue_figure(costs, ax=None):
    """The host's time to issue one call (calls back to back), per caller and size: a bar per size
    with the 10th-90th percentile range of the batches as a whisker."""
    import matplotlib.pyplot as plt

    callers, sizes = costs.callers(), costs.sizes()
    if ax is None:
        _, ax = plt.subplots(figsize=(9, 0.5 + 0.75 * len(callers)))
    h = 0.8 / max(1, len(sizes))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    y = np.arange(len(callers))
    for i, n in enumerate(sizes):
        vals = [costs.get(c, n) for c in callers]
        spread = costs.spread(callers, n, "issue")
        ax.barh(y - 0.4 + (i + 0.5) * h, vals, h, color=colors[i % len(colors)], xerr=spread, capsize=2,
                error_kw={"lw": 0.8}, label=f"{n}^2")
    ax.set_yticks(y, callers, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("host time to issue one call, µs (median of the batches; whisker: 10th-90th percentile)")
    ax.set_title(f"What a call costs the host, per caller and size\n({costs.source})", fontsize=9)
    ax.legend(fontsize=7, loc="lower right", title="A, B, C of size", title_fontsize=7)
    plt.tight_layout()
    return ax
