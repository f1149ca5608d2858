"""Lesson 11, section 2 in words: the per-call table read off (``call_costs_notes``), the record's
per-call costs at one size, and what tools/launch_probe.py measured part by part.
"""
import math
import re

from gemm_lessons.core import tables
from gemm_lessons.library import dispatch
from gemm_lessons.teaching.lesson11.call_overhead import (CALL_COST_SIZE, CallCosts, below_issue, cheapest,
                                                          event_above_sync, issue_less_count, recorded_costs,
                                                          yardstick)
from gemm_lessons.teaching.lesson11.probes import launch_probe
from gemm_lessons.teaching.lesson11.suite_record import label


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
