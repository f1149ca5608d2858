"""The recorded results the documents show, generated from the results file: RESULTS.md's full
tables and the README's five-row headline.  A test keeps both in step with results/:
python -m gemm_lessons.course.readme_results --write updates them."""
import argparse
import os
import re
import sys

from gemm_lessons.records import results
from gemm_lessons.core import tables
from gemm_lessons.kernels.ladder import SGEMM

BEGIN, END = "<!-- results: begin -->", "<!-- results: end -->"  # RESULTS.md: every rung and transpose
HEADLINE_BEGIN, HEADLINE_END = "<!-- headline: begin -->", "<!-- headline: end -->"  # README: five rows
REPO_DIR = os.path.dirname(results.RESULTS_DIR)
README = os.path.join(REPO_DIR, "README.md")
RESULTS_MD = os.path.join(REPO_DIR, "RESULTS.md")
HEADLINE_RUNGS = ["naive", "reg2d", "vec", "warptile", "cublas"]
SIZES = [(4096,) * 3, (8192,) * 3]



def _row(record, name, size):
    rows = results.sgemm_rows(record, name, size)
    return rows[0] if rows else None


def _pct(row):
    return 100.0 if row.pct_cublas is None else row.pct_cublas


def _lesson(name):
    return SGEMM[name].lesson if name in SGEMM else ""


SGEMM_HEADERS = ["rung", "lesson", "4096^3 TFLOPS", "% cuBLAS", "8192^3 TFLOPS", "% cuBLAS"]


def summary(record):
    """RESULTS.md's tables: every rung with its p10-p90 range, and the transposes at 8192x8192."""
    dev, v = record.device, record.versions
    lines = [
        f"Measured on **{dev.name}** ({dev.sm_count} SMs, {dev.clock_mhz:.0f} MHz, "
        f"FP32 peak {dev.peak_gflops / 1e3:.1f} TFLOPS) on {record.date[:10]}; driver "
        f"{(record.nvidia_smi_before or {}).get('driver_version', '?')}, CUDA {v.get('cuda_runtime', '?')}, "
        f"numba-cuda {v.get('numba_cuda', '?')}, numba {v.get('numba', '?')}, numpy {v.get('numpy', '?')}, "
        f"nvmath-python {v.get('nvmath_python', '?')}, cuBLAS {v.get('cublas', '?')} (FP32, no TF32). "
        f"Medians of CUDA-event timings, p10-p90 in brackets; % of cuBLAS from the same run "
        f"(`{results.shown_command(record, 'python -m gemm_lessons.runs.bench')}`, raw data in `results/`).",
    ]

    def cells(name, size):
        r = _row(record, name, size)
        if r is None:
            return ["", ""]
        return [f"{r.gflops / 1e3:.2f} ({r.gflops_p10 / 1e3:.2f}-{r.gflops_p90 / 1e3:.2f})", f"{_pct(r):.1f}%"]

    rungs = [[name, _lesson(name), *(c for size in SIZES for c in cells(name, size))]
             for name in record.ladder + ["cublas"]]
    lines += ["", tables.markdown(SGEMM_HEADERS, rungs, "llrrrr")]
    transposes = [[r.kernel, f"{r.gbs:,.0f} ({r.gbs_p10:,.0f}-{r.gbs_p90:,.0f})", f"{r.pct_sgeam:.1f}%",
                   f"{r.pct_copy:.1f}%"] for r in record.transpose or [] if r.shape == (8192, 8192)]
    lines += ["", tables.markdown(["transpose 8192x8192", "GB/s", "% of cuBLAS sgeam", "% of copy"], transposes, "lrrr")]
    return "\n".join(lines)


def headline_figure(record):
    """The README's figure: the ladder plot of the same run as its table, a path from the repository's root."""
    path = results.path_for("plot", record.device.name, "ladder")
    return f"![the ladder on an {record.device.name}: every rung's TFLOPS against cuBLAS]({os.path.relpath(path, REPO_DIR)})"


def headline(record):
    """The README's figure and five rows (medians only), the last rung's share of cuBLAS in words."""
    last = [_row(record, "warptile", size) for size in SIZES]
    lines = [headline_figure(record), "", f"Medians on an **{record.device.name}** ({record.date[:10]}), FP32 without TF32, cuBLAS timed in the "
             f"same run: the last rung, `warptile`, reaches {_pct(last[0]):.1f}% of cuBLAS at 4096^3 and "
             f"{_pct(last[1]):.1f}% at 8192^3. Every rung, the spreads and the transposes: [RESULTS.md](RESULTS.md)."]

    def cells(name, size):
        r = _row(record, name, size)
        return ["", ""] if r is None else [f"{r.gflops / 1e3:.1f}", f"{_pct(r):.1f}%"]

    rows = [[name, _lesson(name), *(c for size in SIZES for c in cells(name, size))] for name in HEADLINE_RUNGS]
    lines += ["", tables.markdown(SGEMM_HEADERS, rows, "llrrrr")]
    return "\n".join(lines)


def results_block(record):
    return BEGIN + "\n" + summary(record) + "\n" + END


def headline_block(record):
    return HEADLINE_BEGIN + "\n" + headline(record) + "\n" + HEADLINE_END


# (document, begin marker, end marker, the block from a record)
BLOCKS = [(RESULTS_MD, BEGIN, END, results_block), (README, HEADLINE_BEGIN, HEADLINE_END, headline_block)]


def current_block(path=RESULTS_MD, begin=BEGIN, end=END):
    text = open(path).read()
    m = re.search(re.escape(begin) + ".*?" + re.escape(end), text, re.S)
    return m.group(0) if m else None


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--write", action="store_true", help="rewrite the blocks in RESULTS.md and README.md")
    args = p.parse_args(argv)
    record = results.load()
    for path, begin, end, make in BLOCKS:
        block = make(record)
        if args.write:
            old = current_block(path, begin, end)
            if old is None:
                raise SystemExit(f"{os.path.basename(path)} has no {begin} ... {end} block")
            text = open(path).read().replace(old, block)
            with open(path, "w") as f:
                f.write(text)
        print(block)
    return 0


if __name__ == "__main__":
    sys.exit(main())
