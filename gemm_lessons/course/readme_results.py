"""The results summary the README shows, generated from a results file (a test keeps the README
in step: python -m gemm_lessons.course.readme_results --write updates it)."""
import argparse
import os
import re
import sys

from gemm_lessons.records import results
from gemm_lessons.core import tables
from gemm_lessons.kernels.ladder import SGEMM

BEGIN, END = "<!-- results: begin -->", "<!-- results: end -->"
README = os.path.join(os.path.dirname(results.RESULTS_DIR), "README.md")


def summary(record):
    dev, v = record.device, record.versions
    lines = [
        f"Measured on **{dev.name}** ({dev.sm_count} SMs, {dev.clock_mhz:.0f} MHz, "
        f"FP32 peak {dev.peak_gflops / 1e3:.1f} TFLOPS) on {record.date[:10]}; driver "
        f"{(record.nvidia_smi_before or {}).get('driver_version', '?')}, CUDA {v.get('cuda_runtime', '?')}, "
        f"numba-cuda {v.get('numba_cuda', '?')}, numba {v.get('numba', '?')}, numpy {v.get('numpy', '?')}, "
        f"nvmath-python {v.get('nvmath_python', '?')}, cuBLAS {v.get('cublas', '?')} (FP32, no TF32). "
        f"Medians of CUDA-event timings, p10-p90 in brackets; % of cuBLAS from the same run "
        f"(`{record.command or 'python -m gemm_lessons.runs.bench'}`, raw data in `results/`).",
    ]

    def cells(name, size):
        rows = results.sgemm_rows(record, name, size)
        if not rows:
            return ["", ""]
        r = rows[0]
        return [f"{r.gflops / 1e3:.2f} ({r.gflops_p10 / 1e3:.2f}-{r.gflops_p90 / 1e3:.2f})",
                f"{100.0 if r.pct_cublas is None else r.pct_cublas:.1f}%"]

    rungs = [[name, SGEMM[name].lesson if name in SGEMM else "", *cells(name, (4096,) * 3), *cells(name, (8192,) * 3)]
             for name in record.ladder + ["cublas"]]
    lines += ["", tables.markdown(["rung", "lesson", "4096^3 TFLOPS", "% cuBLAS", "8192^3 TFLOPS", "% cuBLAS"],
                                  rungs, "llrrrr")]
    transposes = [[r.kernel, f"{r.gbs:,.0f} ({r.gbs_p10:,.0f}-{r.gbs_p90:,.0f})", f"{r.pct_sgeam:.1f}%",
                   f"{r.pct_copy:.1f}%"] for r in record.transpose or [] if r.shape == (8192, 8192)]
    lines += ["", tables.markdown(["transpose 8192x8192", "GB/s", "% of cuBLAS sgeam", "% of copy"], transposes, "lrrr")]
    return "\n".join(lines)


def readme_block(record):
    return BEGIN + "\n" + summary(record) + "\n" + END


def current_block(path=README):
    text = open(path).read()
    m = re.search(re.escape(BEGIN) + ".*?" + re.escape(END), text, re.S)
    return m.group(0) if m else None


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--write", action="store_true")
    args = p.parse_args(argv)
    block = readme_block(results.load())
    if args.write:
        old = current_block()
        if old is None:
            raise SystemExit(f"README has no {BEGIN} ... {END} block")
        text = open(README).read().replace(old, block)
        with open(README, "w") as f:
            f.write(text)
    print(block)
    return 0


if __name__ == "__main__":
    sys.exit(main())
