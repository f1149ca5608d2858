"""Where gl.sgemm's time goes on sizes near 1000, one run: its call against each of its launches
alone (the copies of A and B, the split wide kernel, the reduction), the same launches one after
the other by hand, the host's time to issue one call, and cuBLAS; 1000^3 (the wide plan, no
copies) beside them.  Its first run (commit 0e0c9d0) found the one-float reduction taking 16 µs
of 75 and tried both copies in one launch (then pad_kernels.pad_copy_pair); since 2026-11-29 the
library does both (kernels/library/splitk_reduce_padded.py, pad_copy_pair.py), and this probe
times the launches of before beside them ("by hand, before").

    python3 -m experiments.shape_classes.near_1000_probe [--out DIR] [--shape M N K ...]
    -> DIR/near-1000-probe-<device>.json (kept in experiments/shape_classes/; the first run's as
       near-1000-probe-first-<device>.json, its profile ncu-near-1000-first-<device>.csv)
    ncu --clock-control none --profile-from-start off --csv --print-units base \
        --metrics gpu__time_duration.sum,launch__grid_size,sm__cycles_active.avg \
        python3 -m experiments.shape_classes.near_1000_probe --profile
    -> each kernel's GPU time (ncu-near-1000-<device>.csv)
    python3 -m experiments.shape_classes.near_1000_probe --splits 1 2 3 4 6 --out DIR
    -> DIR/near-1000-probe-splits-<device>.json: the padded plans split 1-6 ways, each whole call

The padded-parts probe timed the copies launched as ``kernel[grid, block]``, whose numba dispatch
alone costs tens of µs; here every part is launched through the library's Launcher, as gl.sgemm
launches it.  Every call is checked on a NaN-filled C against float64; each timing is back to back
with clock and power (experiments._shared); the host's time per call is batch_issue_us's median.
"""
import argparse
import sys
import time

import numpy as np

import gemm_lessons  # noqa: F401  (chooses the GPU before numba.cuda is imported)
from gemm_lessons.kernels.library import pad_copy, pad_copy_pair, splitk_reduce, splitk_reduce_padded, splitk_reduce_wide
from gemm_lessons.library import device_arrays, dispatch
from gemm_lessons.measure import cublas
from gemm_lessons.runs.shapes import random_device_matrix

from experiments._shared import batch_issue_us, checked_on_nan, poisoned, record, timed_back_to_back, write_record

SHAPES = [(999, 1001, 1003), (1023, 1021, 1025), (1000, 1000, 1000)]


def plan_parts(plan, A, B, C):
    """{name: fn()} for each launch of ``plan`` at A's and B's shape, through the library's
    Launchers and workspaces as gl.sgemm makes them, and "by hand" (all of them in order).  For the
    padded plan also its launches before 2026-11-29 (commit 0e0c9d0): the copies one launch each
    and the one-float reduction, and those by hand ("by hand, before"), the same-run ablation of
    the two changes."""
    (M, K), N = A.shape, B.shape[1]
    N4, K4 = dispatch.padded_sides(N, K)
    one, zero = np.float32(1), np.float32(0)
    if plan.split == 1:
        raise ValueError(f"{plan}: this probe takes the split plans gl.sgemm chooses near 1000")
    main = device_arrays._launcher("wide_split", plan.tiles, "C")
    parts, before = {}, {}
    if plan.kernel == "padded":
        pad, pair = device_arrays._launcher("pad", "", "C"), device_arrays._launcher("pad_pair", "", "C")
        Ap = device_arrays._workspace("A", M, K4) if K % 4 else A
        Bp = device_arrays._workspace("B", K4, N4)
        W = device_arrays._workspace("W", plan.split * M, N4)
        if K % 4:
            parts["copies, one launch"] = lambda: pair(pad_copy_pair.grid((M, K4), (K4, N4)), A, Ap, B, Bp)
            before["copy A"] = lambda: pad(pad_copy.grid(M, K4), A, Ap)
            before["copy B"] = lambda: pad(pad_copy.grid(K4, N4), B, Bp)
        else:
            parts["copy B"] = before["copy B"] = lambda: pad(pad_copy.grid(K4, N4), B, Bp)
        reduce, rgrid = device_arrays._launcher("reduce_padded", "", "C"), splitk_reduce_padded.grid(M, N)
        reduce1, rgrid1 = device_arrays._launcher("reduce", "", "C"), splitk_reduce.grid(M, N)
        before["reduce, one float"] = lambda: reduce1(rgrid1, W, C, one, zero)
    else:
        Ap, Bp, W = A, B, device_arrays._workspace("W", plan.split * M, N)
        reduce, rgrid = device_arrays._launcher("reduce_wide", "", "C"), splitk_reduce_wide.grid(M, N)
    grid = plan.grid(M, W.shape[1])
    parts["kernel"] = before["kernel"] = lambda: main(grid, Ap, Bp, W, one, zero)
    parts["reduce"] = lambda: reduce(rgrid, W, C, one, zero)
    out = dict(parts, **{"by hand": _in_order(list(parts.values()))})
    if plan.kernel == "padded":
        copies = [before[k] for k in ("copy A", "copy B") if k in before]
        out["by hand, before"] = _in_order(copies + [before["kernel"], before["reduce, one float"]])
        out.update({k: v for k, v in before.items() if k not in out})
    return out


def _in_order(steps):
    def run():
        for step in steps:
            step()
    return run


def _calls(M, N, K, rng, splits=()):
    """(gl.sgemm's plan, {name: fn()}, C, a, b): cuBLAS, gl.sgemm and its parts (plan_parts), or
    with ``splits`` the padded plans at 128x128 and 64x128 split in each of them (run_plan)."""
    A, a = random_device_matrix(M, K, rng)
    B, b = random_device_matrix(K, N, rng)
    C = poisoned(M, N)
    plan = dispatch.plan_for(M, N, K, not (N % 4 or K % 4))
    calls = {"cublas": lambda: cublas.sgemm(A, B, C), "gl.sgemm": lambda: device_arrays.sgemm(A, B, C)}
    if splits:
        for p in (dispatch.Plan("padded", t, s) for t in ("128x128", "64x128") for s in splits):
            calls[str(p)] = lambda p=p: device_arrays.run_plan(p, A, B, C)
    else:
        calls.update(plan_parts(plan, A, B, C))
    return plan, calls, C, a, b


def _poison_workspaces(M, N, K):
    N4, K4 = dispatch.padded_sides(N, K)
    for role, shape in (("A", (M, K4)), ("B", (K4, N4))):
        if (role, *shape) in device_arrays._WORKSPACE:
            device_arrays._WORKSPACE[(role, *shape)].copy_to_device(np.full(shape, np.float32(np.nan)))


def profile():
    """gl.sgemm, its parts and cuBLAS once each per shape, for ncu (instruments.profiler.profile_calls)."""
    from gemm_lessons.instruments import profiler

    for M, N, K in SHAPES:
        _, calls, *_ = _calls(M, N, K, np.random.default_rng(M + N + K))
        profiler.profile_calls(calls, warmups=3, prefix=f"{M}x{N}x{K} ")
    return 0


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--out")
    p.add_argument("--shape", nargs=3, type=int, action="append", help="M N K instead of SHAPES (repeatable)")
    p.add_argument("--profile", action="store_true", help="each call once per shape, for ncu")
    p.add_argument("--run", help="the record's run name (default none; \"first\": the run of commit 0e0c9d0)")
    p.add_argument("--splits", type=int, nargs="+", default=(), metavar="S",
                   help="time the padded plans split in S parts (128x128, 64x128) instead of the parts: which split "
                        "is fastest now that the reduction is cheaper? (record run \"splits\")")
    args = p.parse_args(argv)
    if args.profile:
        return profile()
    t0 = time.perf_counter()
    rows, failures = [], []
    for M, N, K in args.shape or SHAPES:
        plan, calls, C, a, b = _calls(M, N, K, np.random.default_rng(M + N + K), args.splits)
        row = {"shape": [M, N, K], "plan": str(plan), "checks": {}}
        for name in [n for n in calls if n.startswith(("gl.sgemm", "by hand", "padded"))]:
            _poison_workspaces(M, N, K)  # a copy that writes nothing must not pass on the last call's copies
            row["checks"][name] = checked_on_nan(calls[name], C, a, b)
            failures += [] if row["checks"][name]["correct"] else [(name, M, N, K)]
        issue = batch_issue_us(calls["gl.sgemm"], 50, 9)
        row["gl_issue_us"] = {"median": issue[len(issue) // 2], "min": issue[0], "max": issue[-1]}
        print(f"{M}x{N}x{K} {plan}: gl.sgemm issues in {row['gl_issue_us']['median']:.1f} µs per call", flush=True)
        order = ["cublas", "gl.sgemm"] + [k for k in calls if k not in ("cublas", "gl.sgemm")] + ["gl.sgemm", "cublas"]
        row["runs"] = timed_back_to_back(calls, order, f"{M}x{N}x{K}")
        rows.append(row)
        del calls, C
    rec = record("near-1000-probe", {"rows": rows, "failures": failures}, t0)
    write_record("shape_classes", rec, args.out, kind="near_1000", run=args.run or ("splits" if args.splits else None))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
