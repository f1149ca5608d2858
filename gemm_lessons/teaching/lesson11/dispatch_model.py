"""Lesson 11, section 4 (dispatch): the dispatch model's estimate against each plan's measured time
(points and a figure) and every candidate plan timed at one shape (a table).  The lesson writes the
sentences.
"""
from gemm_lessons.core import tables
from gemm_lessons.library import dispatch
from gemm_lessons.teaching.lesson11.suite_record import label, recorded_model, row, shape_name, tflops


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
