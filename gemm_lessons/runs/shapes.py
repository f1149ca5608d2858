"""python -m gemm_lessons.runs.shapes: gl.sgemm against cuBLAS on a suite of shapes, as users call it.

One run, one process, on a GPU (about 4-6 minutes on an H100, ``--quick`` about 1):

  1. calibration (not with --quick): every kernel and tile size of gemm_lessons.library.dispatch timed
     at a large square, with its occupancy from the driver, again with one block per SM (a grid of
     exactly as many blocks as SMs: the rate of a partly filled last wave), and the copy
     bandwidth: the numbers
     of dispatch.Model, which the rest of the run then uses, and which gl.sgemm reads back from
     the record afterwards (until then the model's numbers are provisional);
  2. per-call cost on small device arrays (128^2-1024^2): gl.sgemm, the last rung through
     its checks and numba's dispatch, its kernel through numba's dispatch alone, and the nvmath
     cuBLAS wrapper: host time to issue a call,
     wall time per synchronised call, CUDA-event time around one call;
  3. the suite (squares 512-16384; sizes that are not powers of 2, near 1000, ragged, and two
     vocabulary projections; skinny both ways): per shape, the plan gl.sgemm
     chose, a correctness check against float64 (every element where that is cheap, a sample
     of rows and columns where it is not; C poisoned first), single calls with CUDA events
     around each (warm-up, median, p10-p90) and back-to-back calls, for gl.sgemm and cuBLAS in
     the same run; without --quick also every candidate plan back to back on the shapes up to
     2 x 4096^3 FLOP, to show where the dispatch rule and the measurements disagree.

A shape that fails is recorded with its error and the run goes on.  Writes
results/shapes-<device>.json and the plot results/<device>-shapes.png (% of cuBLAS per shape);
--quick writes shapes-quick-<device>.json and <device>-shapes-quick.png instead.

On the CUDA simulator the same code runs at tiny sizes (``--shapes``) to check itself: nothing
is timed and the record says so (``timed: false``), rather than recording a Python emulation's
speed.
"""
import argparse
import math
import sys
import time
import traceback

import numpy as np
from numba import cuda  # after gemm_lessons._backend (the package imports it first)

from gemm_lessons.core import backend
from gemm_lessons.measure import cublas, provenance
from gemm_lessons.library import dispatch, device_arrays
from gemm_lessons.records import results
from gemm_lessons.measure.device import device_info
from gemm_lessons.measure.problems import POISON, POISON_BITS, tolerance
from gemm_lessons.core.progress import bar
from gemm_lessons.records.schema import Device, OverheadRow, ShapeRow, ShapesRecord, Stats
from gemm_lessons.measure.timing import time_gpu

SQUARES = (512, 1024, 2048, 4096, 8192, 16384)
# not powers of 2: nothing a multiple of 4, sizes near 1000 with and without, a product, and two
# vocabulary projections (N, the vocabulary, not a multiple of 4; K a model's width)
ODD = ((4095, 4097, 4093), (1000, 1000, 1000), (999, 1001, 1003), (1023, 1021, 1025), (3000, 5000, 700),
       (4096, 50257, 768), (2048, 32003, 4096))
# skinny: one side small (64, 128, 256) against long others
SKINNY = ((256, 12288, 12288), (12288, 12288, 256), (64, 8192, 8192), (8192, 64, 8192), (128, 32768, 4096),
          (32768, 128, 4096))
QUICK = {"square": (1024, 4096), "odd": ((4095, 4097, 4093), (1000, 1000, 1000)),
         "skinny": ((256, 12288, 12288), (8192, 64, 8192))}
OVERHEAD_SIZES = (128, 256, 512, 1024)
CALIBRATION_SIZE = 4096
PLANS_MAX_FLOP = 2 * 2 * 4096 ** 3  # candidate plans are timed on shapes up to this
FULL_CHECK_MAX = 2 ** 31  # M*N*K up to this (1024^3, 1000^3): every element against float64, else a sample
SAMPLE = 128  # rows and columns of the sample


def suite(quick=False):
    """[(group, (M, N, K))] of the run."""
    if quick:
        return ([("square", (s, s, s)) for s in QUICK["square"]] + [("odd", s) for s in QUICK["odd"]]
                + [("skinny", s) for s in QUICK["skinny"]])
    return ([("square", (s, s, s)) for s in SQUARES] + [("odd", s) for s in ODD]
            + [("skinny", s) for s in SKINNY])


def _stats(samples_ms, batch=None):
    s = np.asarray(samples_ms)
    return Stats(median_ms=float(np.median(s)), p10_ms=float(np.percentile(s, 10)),
                 p90_ms=float(np.percentile(s, 90)), n=len(s), batch=batch)


def single_calls(fn, repeats=20, warmup_s=0.2, max_s=5.0):
    """One call at a time as a user makes it: the GPU idle, CUDA events recorded just before
    and just after the call, so the time includes getting the call onto the GPU."""
    fn()
    cuda.synchronize()
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < warmup_s:
        fn()
        cuda.synchronize()
    start, end = cuda.event(timing=True), cuda.event(timing=True)
    samples, spent = [], 0.0
    for i in range(repeats):
        cuda.synchronize()
        start.record()
        fn()
        end.record()
        end.synchronize()
        samples.append(cuda.event_elapsed_time(start, end))
        spent += samples[-1] * 1e-3
        if spent > max_s and i >= 4:
            break
    return _stats(samples)


def back_to_back(fn, repeats=20, warmup_s=0.3, max_s=5.0):
    t = time_gpu(fn, repeats=repeats, warmup_seconds=warmup_s, max_seconds=max_s)
    return _stats(t.samples, t.batch)


def random_device_matrix(rows, cols, rng):
    x = rng.random((rows, cols), dtype=np.float32)
    x *= 2
    x -= 1  # uniform in [-1, 1), made in place (16384^2 floats without float64 temporaries)
    return cuda.to_device(x), x


def check_product(A, B, C_out, alpha=1.0, rng=None):
    """(passed, relative Frobenius error, how): C_out against float64, every element or a sample
    of SAMPLE rows x SAMPLE columns; any element still holding the poison fails."""
    M, K = A.shape
    N = B.shape[1]
    if np.any(C_out.view(np.uint32) == POISON_BITS):
        return False, float("nan"), "unwritten elements (poison left in C)"
    if M * N * K <= FULL_CHECK_MAX:
        rows, cols, how = slice(None), slice(None), "full"
    else:
        rng = rng or np.random.default_rng(5)
        rows = np.sort(rng.choice(M, min(M, SAMPLE), replace=False))
        cols = np.sort(rng.choice(N, min(N, SAMPLE), replace=False))
        how = f"sampled {len(rows)} rows x {len(cols)} columns"
    ref = alpha * (A[rows].astype(np.float64) @ B[:, cols].astype(np.float64))
    got = C_out[rows][:, cols].astype(np.float64)
    err = float(np.linalg.norm(got - ref) / np.linalg.norm(ref))
    return bool(np.isfinite(got).all() and err <= tolerance(K)), err, how


def lone_grid(sms):
    """(tiles along M, tiles along N) of a grid of exactly ``sms`` blocks, as square as the
    factors of ``sms`` allow (132 SMs: 12 x 11)."""
    gy = max(d for d in range(1, int(sms ** 0.5) + 1) if sms % d == 0)
    return sms // gy, gy


def lone_block(plan, K, sms, repeats):
    """The whole-GPU rate of ``plan`` when every SM holds one block: an M x N x K product whose
    grid has exactly ``sms`` blocks (the block scheduler hands them out one per SM)."""
    c = plan.config
    tm, tn = lone_grid(sms)
    M, N = tm * c.BM, tn * c.BN
    rng = np.random.default_rng(4)
    A, _ = random_device_matrix(M, K, rng)
    B, _ = random_device_matrix(K, N, rng)
    C = cuda.device_array((M, N), np.float32)
    t = back_to_back(lambda: device_arrays.run_plan(plan, A, B, C), repeats)
    return {"lone_shape": [M, N, K], "lone_gflops": 2.0 * M * N * K / (t.median_ms * 1e6), "lone_ms": t.median_ms}


def calibrate(size, repeats, pbar, sms):
    """dispatch.Model measured here: each kernel/tile size at size^3 (split 1), its occupancy,
    its rate with one block per SM (``lone_block``), and the float4 copy's bandwidth for
    split-K's reduction."""
    from gemm_lessons.measure.rung_timing import time_bandwidth

    rng = np.random.default_rng(2)
    A, _ = random_device_matrix(size, size, rng)
    B, _ = random_device_matrix(size, size, rng)
    C = cuda.device_array((size, size), np.float32)
    rows, speeds = [], {}
    for kernel in dispatch.KERNELS:
        for tiles in dispatch.TILES:
            plan = dispatch.Plan(kernel, tiles)
            pbar.set_postfix_str(f"calibrating {plan}")
            row = {"plan": str(plan), "size": size}
            try:
                launcher = device_arrays.launcher_for(plan)
                t = back_to_back(lambda: device_arrays.run_plan(plan, A, B, C), repeats)
                row.update(gflops=2.0 * size ** 3 / (t.median_ms * 1e6), median_ms=t.median_ms,
                           blocks_per_sm=launcher.blocks_per_sm(), **(launcher.resources() or {}))
                row.update(lone_block(plan, size, sms, repeats))
                speeds[f"{kernel}/{tiles}"] = dispatch.Speed(row["gflops"], row["blocks_per_sm"], measured=True,
                                                             lone_gflops=row["lone_gflops"])
            except Exception as e:  # noqa: BLE001 (recorded; the provisional number stays)
                row["error"] = f"{type(e).__name__}: {e}"
            rows.append(row)
            pbar.update()
    pbar.set_postfix_str("calibrating copy bandwidth")
    bw = max(r.gbs for r in time_bandwidth(repeats=10))
    rows.append({"copy_gbs": bw})
    model = dispatch.Model(sms=sms, speeds={**dispatch.PROVISIONAL, **speeds}, bandwidth_gbs=bw,
                           source=f"measured by python -m gemm_lessons.runs.shapes on {provenance.now()[:10]}")
    return rows, model


def measure_overhead(sizes, pbar, calls=200):
    """OverheadRows for gl.sgemm (with C, and C=None), the last rung through its checks and
    numba's dispatch, its kernel through numba's dispatch alone, and the nvmath cuBLAS wrapper,
    on square device arrays of ``sizes``."""
    from gemm_lessons.kernels import ladder

    rung = ladder.SGEMM[list(ladder.SGEMM)[-1]]
    rows = []
    for n in sizes:
        rng = np.random.default_rng(3)
        A, _ = random_device_matrix(n, n, rng)
        B, _ = random_device_matrix(n, n, rng)
        C = cuda.device_array((n, n), np.float32)
        kernel, cfg = rung.kernel, rung.kernel.config
        grid = ((n + cfg.BN - 1) // cfg.BN, (n + cfg.BM - 1) // cfg.BM)
        one, zero = np.float32(1), np.float32(0)
        callers = {"gl.sgemm(A, B, C)": lambda: device_arrays.sgemm(A, B, C),
                   "gl.sgemm(A, B) (allocates C)": lambda: device_arrays.sgemm(A, B),
                   f"ladder {rung.name} (checks + numba dispatch)": lambda: rung(A, B, C),
                   f"{rung.name} kernel[grid, block] (numba dispatch only)":
                       lambda: kernel[grid, cfg.threads](A, B, C, one, zero),
                   "cuBLAS (nvmath wrapper)": lambda: cublas.sgemm(A, B, C)}
        for name, fn in callers.items():
            pbar.set_postfix_str(f"per-call cost {name} {n}^2")
            row = OverheadRow(caller=name, size=n)
            try:
                for _ in range(min(20, calls)):  # compiles, warms up
                    fn()
                cuda.synchronize()
                issue, batch = [], max(1, calls // 10)
                for _ in range(10):  # calls issued back to back: host time per call
                    t0 = time.perf_counter()
                    for _ in range(batch):
                        fn()
                    issue.append((time.perf_counter() - t0) / batch)
                    cuda.synchronize()
                sync = []
                for _ in range(max(1, calls // 4)):
                    t0 = time.perf_counter()
                    fn()
                    cuda.synchronize()
                    sync.append(time.perf_counter() - t0)
                for what, st in (("issue", _stats(1e3 * np.asarray(issue))), ("sync", _stats(1e3 * np.asarray(sync))),
                                 ("event", single_calls(fn, repeats=50, warmup_s=0.05))):
                    setattr(row, f"{what}_us", 1e3 * st.median_ms)
                    setattr(row, f"{what}_p10_us", 1e3 * st.p10_ms)
                    setattr(row, f"{what}_p90_us", 1e3 * st.p90_ms)
            except Exception as e:  # noqa: BLE001
                row.error = f"{type(e).__name__}: {e}"
            rows.append(row)
            pbar.update()
    return rows


def measure_shape(group, shape, repeats, pbar, all_plans=False):
    """One ShapeRow: check, single calls and back-to-back for gl.sgemm and cuBLAS (and every
    candidate plan with ``all_plans``); any exception becomes the row's error."""
    M, N, K = shape
    row = ShapeRow(shape=[M, N, K], group=group)
    try:
        rng = np.random.default_rng(M * 7 + N * 3 + K)
        A_d, A = random_device_matrix(M, K, rng)
        B_d, B = random_device_matrix(K, N, rng)
        C_d = cuda.to_device(np.full((M, N), POISON, np.float32))
        wide = not (K % 4 or N % 4)
        row.plan = str(dispatch.plan_for(M, N, K, wide))
        pbar.set_postfix_str(f"{M}x{N}x{K}: checking ({row.plan})")
        device_arrays.sgemm(A_d, B_d, C_d)
        row.correct, row.rel_error, row.checked = check_product(A, B, C_d.copy_to_host())
        del A, B
        if backend.SIMULATOR:
            return row
        fns = {"gl": lambda: device_arrays.sgemm(A_d, B_d, C_d)}
        if cublas.available():
            fns["cublas"] = lambda: cublas.sgemm(A_d, B_d, C_d)
        for who, fn in fns.items():
            pbar.set_postfix_str(f"{M}x{N}x{K}: {who} single calls")
            setattr(row, f"single_{who}", single_calls(fn, repeats))
            pbar.set_postfix_str(f"{M}x{N}x{K}: {who} back to back")
            setattr(row, f"back_to_back_{who}", back_to_back(fn, repeats))
        if row.single_cublas is not None:
            row.pct_cublas_single = 100 * row.single_cublas.median_ms / row.single_gl.median_ms
            row.pct_cublas_back_to_back = 100 * row.back_to_back_cublas.median_ms / row.back_to_back_gl.median_ms
        if all_plans and 2.0 * M * N * K <= PLANS_MAX_FLOP:
            row.plans_ms = {}
            for plan in dispatch.candidates(M, N, K, wide):
                pbar.set_postfix_str(f"{M}x{N}x{K}: plan {plan}")
                try:
                    t = back_to_back(lambda: device_arrays.run_plan(plan, A_d, B_d, C_d), repeats=5,
                                     warmup_s=0.1, max_s=1.0)
                    row.plans_ms[str(plan)] = t.median_ms
                except Exception as e:  # noqa: BLE001
                    row.plans_ms[str(plan)] = f"{type(e).__name__}: {e}"
            timed = {p: ms for p, ms in row.plans_ms.items() if isinstance(ms, float)}
            row.best_plan = min(timed, key=timed.get) if timed else None
    except Exception as e:  # noqa: BLE001 (one failing shape must not end the run)
        row.error = f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=3)}"
    return row


def summarise(rows):
    ok = [r for r in rows if r.pct_cublas_single is not None]
    out = {"shapes": len(rows), "failed": sum(1 for r in rows if r.error), "incorrect":
           sum(1 for r in rows if r.correct is False)}
    for kind in ("single", "back_to_back"):
        pct = [getattr(r, f"pct_cublas_{kind}") for r in ok]
        if pct:
            out[f"geomean_pct_cublas_{kind}"] = float(math.exp(np.mean(np.log(pct))))
            worst = min(ok, key=lambda r: getattr(r, f"pct_cublas_{kind}"))
            out[f"min_pct_cublas_{kind}"] = [getattr(worst, f"pct_cublas_{kind}"), worst.shape]
    disagree = [[r.shape, r.plan, r.best_plan] for r in rows if r.best_plan and r.best_plan != r.plan]
    if any(r.best_plan for r in rows):
        out["dispatch_disagrees_with_fastest_plan"] = disagree
    return out


def plot(record, path):
    """% of cuBLAS per shape, single calls and back to back; failed shapes marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = record.rows
    labels = ["x".join(map(str, r.shape)) for r in rows]
    x = np.arange(len(rows))
    fig, ax = plt.subplots(figsize=(max(8, 0.6 * len(rows)), 4.5))
    for off, kind, color in ((-0.2, "single", "tab:blue"), (0.2, "back_to_back", "tab:orange")):
        vals = [getattr(r, f"pct_cublas_{kind}") or 0 for r in rows]
        ax.bar(x + off, vals, 0.4, color=color, label=kind.replace("_", " ") + " calls")
        for xi, v in zip(x + off, vals):
            if v:
                ax.text(xi, v, f"{v:.0f}", ha="center", va="bottom", fontsize=6)
    for i, r in enumerate(rows):
        if r.error or r.correct is False:
            ax.text(i, 5, "FAILED" if r.error else "WRONG", rotation=90, ha="center", color="tab:red")
    ax.axhline(100, color="k", ls="--", lw=1)
    geo = (record.summary or {}).get("geomean_pct_cublas_single")
    if geo:
        ax.axhline(geo, color="tab:blue", ls=":", lw=1, label=f"geometric mean, single calls: {geo:.0f}%")
    ax.set_xticks(x, labels, rotation=60, ha="right", fontsize=8)
    ax.set_ylabel("% of cuBLAS (time of cuBLAS / time of gl.sgemm)")
    title = f"gl.sgemm vs cuBLAS per shape ({record.device.name}, {record.date[:10]})"
    if not record.timed:
        title += ": NOT TIMED (simulator)"
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)
    return path


def parse_shape(text):
    M, N, K = (int(v) for v in text.lower().split("x"))
    return M, N, K


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="a smaller suite, no calibration or plan sweep (~1 min)")
    p.add_argument("--shapes", nargs="*", default=None, help="MxNxK problems instead of the suite")
    p.add_argument("--repeats", type=int, default=None)
    p.add_argument("--no-calibration", action="store_true")
    p.add_argument("--overhead-only", action="store_true", help="only the per-call cost (about 20 s)")
    p.add_argument("--no-plans", action="store_true", help="do not time every candidate plan")
    p.add_argument("--out", default=None, help="results directory (default: the repo's results/)")
    p.add_argument("--no-progress", action="store_true")
    args = p.parse_args(argv)
    t_start = time.perf_counter()
    sim = backend.SIMULATOR
    if args.overhead_only:
        shapes = []
    elif args.shapes is not None:
        shapes = [("given", parse_shape(s)) for s in args.shapes]
    elif sim:
        shapes = [("square", (16, 16, 16)), ("odd", (9, 7, 5)), ("skinny", (4, 8, 40))]
    else:
        shapes = suite(args.quick)
    repeats = args.repeats or (10 if args.quick else 20)
    calibrate_now = not (sim or args.quick or args.no_calibration or args.overhead_only)
    all_plans = not (sim or args.quick or args.no_plans)
    overhead_sizes = () if sim else ((256, 1024) if args.quick else OVERHEAD_SIZES)
    info = device_info()
    record = ShapesRecord(
        device=Device.from_info(info), date=provenance.now(), versions=provenance.versions(),
        git_commit=provenance.git_commit(), timed=not sim,
        command="python -m gemm_lessons.runs.shapes " + " ".join(argv if argv is not None else sys.argv[1:]),
        note=("CUDA simulator: the code path ran end to end at tiny sizes and checked correctness; "
              "nothing was timed (a Python emulation says nothing about a GPU)") if sim else None)
    if not sim and not cublas.available():
        record.note = "cuBLAS unavailable: gl.sgemm timed alone, no % of cuBLAS"
    seconds = {}
    total = (len(dispatch.KERNELS) * len(dispatch.TILES) if calibrate_now else 0) + 5 * len(overhead_sizes) + len(shapes)
    pbar = bar(total, "gl.sgemm vs cuBLAS", not args.no_progress)
    if calibrate_now:
        t0 = time.perf_counter()
        record.calibration, model = calibrate(CALIBRATION_SIZE, repeats, pbar, info.sm_count)
        dispatch.set_model(model)
        seconds["calibration"] = round(time.perf_counter() - t0, 1)
    record.model = dispatch.model().to_dict()
    if overhead_sizes:
        t0 = time.perf_counter()
        record.overhead = measure_overhead(overhead_sizes, pbar)
        seconds["overhead"] = round(time.perf_counter() - t0, 1)
    t0 = time.perf_counter()
    record.rows = []
    for group, shape in shapes:
        record.rows.append(measure_shape(group, shape, repeats, pbar, all_plans))
        pbar.update()
    pbar.close()
    seconds["suite"] = round(time.perf_counter() - t0, 1)
    record.launch = {repr(k): repr(v) for k, v in device_arrays._LAUNCHERS.items()}
    record.summary = summarise(record.rows)
    seconds["total"] = round(time.perf_counter() - t_start, 1)
    record.seconds = seconds
    out = args.out or results.RESULTS_DIR
    import os

    os.makedirs(out, exist_ok=True)
    kind = "shapes-quick" if args.quick else "shapes"  # a quick run leaves the full record (and model) alone
    path = record.write(results.path_for(kind, info.name, directory=out))
    png = plot(record, results.path_for("plot", info.name, name=kind, directory=out))
    print_summary(record)
    print("wrote", path, "and", png)
    return 1 if record.summary["failed"] or record.summary["incorrect"] else 0


def print_summary(record, file=sys.stdout):
    print(f"\n{record.device.name} {record.date}" + ("" if record.timed else f"  ({record.note})"), file=file)
    for r in record.overhead or []:
        if r.error:
            print(f"  per call {r.caller:52s} {r.size:5d}^2  ERROR {r.error}", file=file)
        else:
            print(f"  per call {r.caller:52s} {r.size:5d}^2  issue {r.issue_us:7.1f} us  "
                  f"sync {r.sync_us:7.1f} us  event {r.event_us:7.1f} us", file=file)
    for r in record.rows:
        shape = "x".join(map(str, r.shape))
        if r.error:
            print(f"  {shape:18s} FAILED: {r.error.splitlines()[0]}", file=file)
            continue
        line = f"  {shape:18s} {r.plan:28s} {'ok' if r.correct else 'WRONG'} err {r.rel_error:.1e}"
        if r.pct_cublas_single is not None:
            line += (f"  single {r.single_gl.median_ms:8.3f} ms {r.pct_cublas_single:5.1f}%  "
                     f"b2b {r.back_to_back_gl.median_ms:8.3f} ms {r.pct_cublas_back_to_back:5.1f}%")
        if r.best_plan and r.best_plan != r.plan:
            line += f"  (fastest plan: {r.best_plan})"
        print(line, file=file)
    print("  summary:", record.summary, file=file)


if __name__ == "__main__":
    sys.exit(main())
