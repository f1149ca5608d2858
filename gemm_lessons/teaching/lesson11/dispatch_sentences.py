"""Lesson 11, section 4's dispatch in words: the model's calibration (a table with its notes), where
the rule and the measurements disagreed, the model's estimates against the measurements and its
outliers, and how it charges a partly filled last wave.
"""
from gemm_lessons.core import tables
from gemm_lessons.library import dispatch
from gemm_lessons.teaching.lesson11.dispatch_model import model_points
from gemm_lessons.teaching.lesson11.shape_suite import disagreements
from gemm_lessons.teaching.lesson11.split_k_plans import waves
from gemm_lessons.teaching.lesson11.suite_record import label, recorded_model, row, shape_name


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
        for cells, c in zip(body, [c for c in rec.calibration or [] if "plan" in c]):
            cells.insert(2, f"{c['lone_gflops'] / 1e3:.1f}" if "lone_gflops" in c else "")
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
