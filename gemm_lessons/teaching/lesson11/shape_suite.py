"""Lesson 11, section 4's measurements: gl.sgemm against cuBLAS per shape (``ShapeTable``, measured
now on a GPU or the record's rows on the simulator), which measurements were host-bound, the shapes
below 90% of cuBLAS, what the lesson leaves unexplained, where the chosen plan was not the fastest
timed, and the figure of % of cuBLAS per shape.  The lesson writes the sentences.
"""
from dataclasses import dataclass, field

import numpy as np

from gemm_lessons.core import backend, tables
from gemm_lessons.teaching.lesson11.split_k_plans import split_k_gain
from gemm_lessons.teaching.lesson11.suite_record import HOST_BOUND, LOW_PCT, label, load, row, shape_name, tflops


@dataclass
class ShapeTable:
    """gl.sgemm and cuBLAS at a few shapes (records.ShapeRow), measured now or recorded."""
    rows: list
    source: str
    measured_now: bool = False
    rec: object = field(default=None, repr=False)
    all_plans: bool = False  # every candidate plan was timed: the table names the two split_k_gain compares
    single: bool = True  # False: the table shows back-to-back times only (the kernels, not the calls around them)

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
        if not self.single:
            return self._back_to_back_markdown()
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
        return (f"**gl.sgemm against cuBLAS**, {self.source}\n\n"
                + tables.markdown(["M x N x K", "plan", "check", "gl.sgemm ms, single call", "cuBLAS ms, single call",
                                   "% of cuBLAS, single", "% of cuBLAS, back to back"], body, "lllrrrr"))

    def _back_to_back_markdown(self):
        body = []
        for r in self.rows:
            if r.error:
                body.append([shape_name(r.shape), r.plan or "", "FAILED: " + r.error.splitlines()[0], "", "", ""])
                continue
            g, c = r.back_to_back_gl, r.back_to_back_cublas
            body.append([shape_name(r.shape), r.plan or "", "right" if r.correct else "WRONG",
                         f"{g.median_ms:.3f} ({tflops(r.shape, g.median_ms):.1f} TFLOPS)" if g else "",
                         f"{c.median_ms:.3f}" if c else "",
                         f"{r.pct_cublas_back_to_back:.1f}%" if r.pct_cublas_back_to_back else ""])
        return (f"**gl.sgemm against cuBLAS, back to back**, {self.source}\n\n"
                + tables.markdown(["M x N x K", "plan", "check", "gl.sgemm ms", "cuBLAS ms", "% of cuBLAS"],
                                  body, "lllrrr"))

    def __repr__(self):
        return self._repr_markdown_()


def measure_shapes(shapes, all_plans=False, repeats=20, rec=None, progress=True, single=True):
    """gl.sgemm and cuBLAS at ``shapes`` as the shape suite measures them (a check against float64,
    single calls, back to back; every candidate plan with ``all_plans``): now on a GPU, the
    record's rows on the simulator.  ``single=False``: the table shows the back-to-back times only."""
    if backend.SIMULATOR:
        rec = rec or load()
        rows = [row(rec, s) for s in shapes]
        return ShapeTable([r for r in rows if r is not None],
                          f"recorded on {label(rec)} ({backend.not_measured_why()})", False, rec, all_plans, single)
    from gemm_lessons.runs import shapes as suite
    from gemm_lessons.measure.device import device_info
    from gemm_lessons.core.progress import bar

    pbar = bar(len(shapes), "gl.sgemm vs cuBLAS", progress)
    rows = []
    for s in shapes:
        rows.append(suite.measure_shape("lesson", tuple(s), repeats, pbar, all_plans))
        pbar.update()
    pbar.close()
    return ShapeTable(rows, f"measured on {device_info().name} now", True, all_plans=all_plans, single=single)


CALLERS = {"gl": "gl.sgemm(A, B, C)", "cublas": "cuBLAS (nvmath wrapper)"}  # as the per-call costs name them


WHO = {"gl": "gl.sgemm", "cublas": "cuBLAS"}  # as the suite's tables name them


# the suite's groups (records.ShapeRow.group) as the table names them: the record's "odd" are the
# shapes whose sides are not powers of 2 (some of them multiples of 4, which the next column shows)
GROUPS = {"square": "square", "odd": "not powers of 2", "skinny": "skinny"}


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


def pct_figure(rec, ax=None, kinds=("single", "back_to_back")):
    """% of cuBLAS per shape, single calls and back to back (``kinds``: either or both); host-bound
    back-to-back bars hatched; the 90% line."""
    import matplotlib.pyplot as plt

    rows = [r for r in rec.rows or [] if not r.error]
    if ax is None:
        _, ax = plt.subplots(figsize=(max(8, 0.6 * len(rows)), 5))
    x = np.arange(len(rows))
    width = 0.8 / len(kinds)
    styles = {"single": "tab:blue", "back_to_back": "tab:orange"}
    for i, kind in enumerate(kinds):
        off, color = (i - (len(kinds) - 1) / 2) * width, styles[kind]
        for xi, r in zip(x, rows):
            v = getattr(r, f"pct_cublas_{kind}") or 0
            bound = kind == "back_to_back" and (host_bound(rec, r, "gl") or host_bound(rec, r, "cublas"))
            ax.bar(xi + off, v, width, color=color, hatch="//" if bound else None, ec="white" if bound else color)
            ax.text(xi + off, v, f"{v:.0f}", ha="center", va="bottom", fontsize=6 if len(kinds) > 1 else 7)
    from matplotlib.patches import Patch

    ax.axhline(100, color="black", ls="--", lw=1)
    line = ax.axhline(LOW_PCT, color="tab:red", ls=":", lw=1)
    handles = ([Patch(color="tab:blue", label="single calls (CUDA events around each call)")] if "single" in kinds else [])
    if "back_to_back" in kinds:
        handles += [Patch(color="tab:orange", label="back to back (a batch of calls, time per call)"),
                    Patch(fc="tab:orange", hatch="//", ec="white", label="back to back, host-bound")]
    handles.append(line)
    line.set_label(f"{LOW_PCT:.0f}% of cuBLAS")
    ax.set_xticks(x, [f"{shape_name(r.shape)}\n{r.plan}" for r in rows], rotation=50, ha="right", fontsize=7)
    ax.set_ylabel("% of cuBLAS (cuBLAS time / gl.sgemm time)")
    what = " and ".join({"single": "single calls", "back_to_back": "back to back"}[k] for k in kinds)
    ax.set_title(f"gl.sgemm against cuBLAS per shape, {what} ({label(rec)})", fontsize=9)
    top = max([getattr(r, f"pct_cublas_{k}") or 0 for r in rows for k in kinds] + [100])
    ax.set_ylim(0, 1.35 * top)  # room above the tallest bar for the legend
    ax.legend(handles=handles, fontsize=7, loc="upper center", ncol=2)
    plt.tight_layout()
    return ax


def back_to_back_geomean(rec):
    """(geometric mean of % of cuBLAS back to back, the ShapeRows it is over, the rows left out):
    the shapes where neither gl.sgemm nor cuBLAS was host-bound (there the ratio compares the
    callers' Python, not the kernels)."""
    kept, out = [], []
    for r in rec.rows or []:
        if r.error or not r.pct_cublas_back_to_back:
            continue
        (out if host_bound(rec, r, "gl") or host_bound(rec, r, "cublas") else kept).append(r)
    mean = float(np.exp(np.mean(np.log([r.pct_cublas_back_to_back for r in kept])))) if kept else float("nan")
    return mean, kept, out


def below(rec, kind="single", threshold=LOW_PCT):
    """The ShapeRows below ``threshold`` % of cuBLAS (``kind``: "single" or "back_to_back")."""
    return [r for r in rec.rows or [] if getattr(r, f"pct_cublas_{kind}") is not None
            and getattr(r, f"pct_cublas_{kind}") < threshold]


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
