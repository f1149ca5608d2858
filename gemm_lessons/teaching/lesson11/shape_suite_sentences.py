"""Lesson 11, section 4 in words: the suite's table with the evidence behind each host-bound flag,
single calls against back to back, the shapes below 90% of cuBLAS, this run against the record,
what the lesson does not explain, and the reduce-wide probe's jumps between its two passes.
"""
from gemm_lessons.core import tables
from gemm_lessons.model import counting
from gemm_lessons.teaching.lesson11.call_overhead import CALL_COST_SIZE
from gemm_lessons.teaching.lesson11.probes import probe_median, reduce_wide_probe
from gemm_lessons.teaching.lesson11.shape_suite import GROUPS, WHO, below, host_bound, host_bound_evidence, unexplained
from gemm_lessons.teaching.lesson11.suite_record import HOST_BOUND, LOW_PCT, command, is_wide, label, row, shape_name


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
            a, b = r[kind][0], probe_median(rows, r["size"], r["call"], kind, 2)
            if max(a, b) >= factor * min(a, b):
                out.append(f"{_PROBE_CALLS.get(r['call'], r['call'])} at {r['size']}^3, {what}: {a:.4f} ms in one "
                           f"pass, {b:.4f} ms in the other")
    n = len(rows) * 2
    text = (f"{header}: of {n} medians, {len(out)} were {factor:g} times or more the same call's in the "
            f"other pass: " + "; ".join(out) + ". "
            f"gl.sgemm at 1024^3 one call at a time took {probe_median(rows, 1024, 'gl.sgemm', 'single', 1):.4f} and "
            f"{probe_median(rows, 1024, 'gl.sgemm', 'single', 2):.4f} ms there")
    r = row(rec, (1024, 1024, 1024)) if rec is not None else None
    if r is not None and r.single_gl:
        text += f", against {r.single_gl.median_ms:.3f} ms in the suite's run ({label(rec)})"
    return text + (". Such jumps hit cuBLAS and gl.sgemm alike, so one run's outlier says little about either "
                   "library; what causes them was not measured.")
