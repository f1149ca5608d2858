"""python -m gemm_lessons.runs.bench: every rung and cuBLAS in one process, checked and timed.

Writes results/<device>.json (device, date, clocks, versions, per-kernel medians and
spreads, checks, compiler facts) and the plots beside it, and prints the table.  Needs a GPU.
The measuring is gemm_lessons.measure.rung_timing's; this module is the command line.
"""
import argparse
import sys


from gemm_lessons.core import backend, tables
from gemm_lessons.instruments import compiler_facts
from gemm_lessons.measure import rung_timing, provenance
from gemm_lessons.kernels import ladder
from gemm_lessons.records import results
from gemm_lessons.measure.device import device_info
from gemm_lessons.records.schema import BenchRecord, CheckRow, Device

DEFAULT_SIZES = (1024, 2048, 4096, 8192)
DEFAULT_SHAPES = ((4096, 8192, 1024), (8192, 2048, 4096))  # two non-square problems


def print_table(record, file=sys.stdout):
    peak = record.device.peak_gflops
    print(f"\n{record.device.name}  {record.date}  peak FP32 {peak / 1e3:.1f} TFLOPS\n", file=file)
    rows = []
    for r in record.sgemm:
        shape = f"{r.M}x{r.N}x{r.K}"
        if r.gflops is None:
            rows.append([r.kernel, shape, "", "", "", "", f"refused: {r.refused[:60]}"])
            continue
        rows.append([r.kernel, shape, f"{r.gflops / 1e3:.2f}", f"{r.gflops_p10 / 1e3:.2f}-{r.gflops_p90 / 1e3:.2f}",
                     f"{r.pct_cublas or 0:.1f}%", f"{100 * r.gflops / peak:.1f}%", "yes" if r.correct else "NO"])
    print(tables.text(["kernel", "M x N x K", "TFLOPS", "p10-p90", "% cuBLAS", "% peak", "ok"], rows, "lrrrrrl"),
          file=file)

    def gbs(r):
        return [r.kernel, f"{r.rows}x{r.cols}", f"{r.gbs:,.0f}", f"{r.gbs_p10:,.0f}-{r.gbs_p90:,.0f}"]

    print("\n" + tables.text(["copy", "rows x cols", "GB/s", "p10-p90", ""],
                             [gbs(r) + ["HOST-BOUND" if r.host_bound else ""] for r in record.bandwidth or []],
                             "lrrrl"), file=file)
    rows = [gbs(r) + [f"{r.pct_sgeam:.1f}%", f"{r.pct_copy:.1f}%",
                      ("WRONG " if r.correct is False else "") + ("HOST-BOUND" if r.host_bound else "")]
            for r in record.transpose or []]
    print("\n" + tables.text(["transpose", "rows x cols", "GB/s", "p10-p90", "% sgeam", "% copy", ""], rows,
                             "lrrrrrl"), file=file)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=int, nargs="*", default=list(DEFAULT_SIZES))
    p.add_argument("--shapes", nargs="*", default=[f"{m}x{n}x{k}" for m, n, k in DEFAULT_SHAPES],
                   help="extra MxNxK problems")
    p.add_argument("--kernels", nargs="*", default=None, help="rungs/variants to run (default: all)")
    p.add_argument("--repeats", type=int, default=20)
    p.add_argument("--variant-limit", type=int, default=rung_timing.SLOW_LIMIT, metavar="N",
                   help="time variants only at sizes whose sides are at most N (default %(default)s)")
    p.add_argument("--out", default=None, help="results directory (default: the repo's results/)")
    p.add_argument("--no-progress", action="store_true")
    args = p.parse_args(argv)
    if backend.SIMULATOR:
        sys.exit("python -m gemm_lessons.runs.bench needs a GPU (this machine runs the CUDA simulator): "
                 "nothing would be measured.")
    kernels = {**ladder.SGEMM, **ladder.VARIANTS}  # time_sgemm stops variants at SLOW_LIMIT
    if args.kernels:
        unknown = set(args.kernels) - set(kernels)
        if unknown:
            sys.exit(f"unknown kernels {sorted(unknown)}; choose from {sorted(kernels)}")
        kernels = {k: kernels[k] for k in args.kernels}
    shapes = [(s, s, s) for s in args.sizes] + [tuple(int(x) for x in s.split("x")) for s in args.shapes]
    record = BenchRecord(
        device=Device.from_info(device_info()), date=provenance.now(), versions=provenance.versions(),
        git_commit=provenance.git_commit(), nvidia_smi_before=provenance.nvidia_smi(),
        cublas_math_mode="default (FP32, no TF32)", ladder=list(ladder.SGEMM), variants=list(ladder.VARIANTS),
        command="python -m gemm_lessons.runs.bench " + " ".join(argv if argv is not None else sys.argv[1:]))
    record.checks = rung_timing.run_checks(kernels)
    record.sgemm = rung_timing.time_sgemm(kernels, shapes, args.repeats, progress=not args.no_progress,
                                        variant_limit=args.variant_limit)
    record.bandwidth = rung_timing.time_bandwidth()
    record.transpose = rung_timing.time_transpose(progress=not args.no_progress)
    record.transpose_checks = rung_timing.run_transpose_checks()
    record.compiler = compiler_facts.facts_of(ladder.compiled_kernels())
    record.nvidia_smi_after = provenance.nvidia_smi()
    out = args.out or results.RESULTS_DIR
    path = results.save(record, out)
    print_table(record)
    failed = ([c for c in record.checks + record.transpose_checks if c.passed is False]
              + [r for r in record.sgemm + record.transpose if r.correct is False])
    for c in failed:
        print("FAILED:", c.message if isinstance(c, CheckRow) else c)
    print("wrote", path)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
