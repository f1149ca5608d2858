"""The three pictures of the series: the ladder, GFLOPS against size, and the roofline.

Every function takes a results record (see gemm_lessons.results) and labels the figure with
the device and date the numbers were measured on.
"""
import matplotlib.pyplot as plt

from . import counting, results
from .results import label, sgemm_rows


def _ordered_kernels(record):
    return [r for r in record.ladder or [] if sgemm_rows(record, r)]


def ladder(record, size=(4096, 4096, 4096), ax=None, kernels=None):
    """Bar chart of GFLOPS per rung at one size, with cuBLAS and the FP32 peak drawn in."""
    kernels = kernels or _ordered_kernels(record)
    values = [sgemm_rows(record, k, size) for k in kernels]
    names = [k for k, v in zip(kernels, values) if v]
    tflops = [v[0].gflops / 1e3 for v in values if v]
    lo = [v[0].gflops / 1e3 - v[0].gflops_p10 / 1e3 for v in values if v]
    hi = [v[0].gflops_p90 / 1e3 - v[0].gflops / 1e3 for v in values if v]
    if ax is None:
        _, ax = plt.subplots(figsize=(8, 4))
    bars = ax.bar(names, tflops, yerr=[lo, hi], color="tab:blue", capsize=3)
    cub = sgemm_rows(record, "cublas", size)
    if cub:
        ax.axhline(cub[0].gflops / 1e3, color="tab:green", ls="--", label=f"cuBLAS {cub[0].gflops / 1e3:.1f}")
        for b, t in zip(bars, tflops):
            ax.text(b.get_x() + b.get_width() / 2, t, f"{t:.1f}\n{100 * t / (cub[0].gflops / 1e3):.0f}%",
                    ha="center", va="bottom", fontsize=8)
    peak = record.device.peak_gflops
    if peak:
        ax.axhline(peak / 1e3, color="tab:red", ls=":", label=f"FP32 peak {peak / 1e3:.1f}")
    ax.set_ylabel("TFLOPS")
    ax.set_title(f"SGEMM {size[0]}x{size[1]}x{size[2]}: the ladder ({label(record)})", fontsize=10)
    ax.legend(loc="upper left", fontsize=8)
    ax.tick_params(axis="x", rotation=30)
    return ax


def versus_size(record, kernels=None, ax=None):
    """TFLOPS against size (square sizes) for each kernel and cuBLAS."""
    kernels = kernels or _ordered_kernels(record) + ["cublas"]
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 4))
    for k in kernels:
        rows = sorted((r for r in sgemm_rows(record, k) if r.M == r.N == r.K), key=lambda r: r.M)
        if rows:
            ax.plot([r.M for r in rows], [r.gflops / 1e3 for r in rows], "o-", label=k,
                    lw=2.5 if k == "cublas" else 1.5)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("M = N = K")
    ax.set_ylabel("TFLOPS")
    ax.set_title(f"SGEMM throughput against size ({label(record)})", fontsize=10)
    ax.legend(fontsize=8)
    return ax


def roofline(record, points=None, ax=None, size=(4096, 4096, 4096)):
    """Log-log roofline: measured copy bandwidth and FP32 peak as ceilings, kernels as points.

    ``points`` is a list of (name, FLOP per DRAM byte, GFLOPS); by default every rung and
    cuBLAS at ``size``, placed at the problem's ideal intensity (each input read once)."""
    peak = record.device.peak_gflops
    bw = max((r.gbs for r in record.bandwidth or []), default=record.device.memory_bandwidth_gbs)
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 4.5))
    xs = [2 ** (i / 4) for i in range(-16, 53)]
    ax.plot(xs, [min(peak, bw * x) for x in xs], "k-", lw=2)
    ridge = peak / bw
    ax.annotate(f"FP32 peak {peak / 1e3:.1f} TFLOPS", (xs[-1], peak), ha="right", va="bottom", fontsize=8)
    ax.annotate(f"measured copy {bw / 1e3:.2f} TB/s", (1, bw), rotation=0, fontsize=8, va="bottom")
    ax.axvline(ridge, color="grey", ls=":", lw=1)
    if points is None:
        I = counting.sgemm_intensity(*size)
        points = [(k, I, sgemm_rows(record, k, size)[0].gflops)
                  for k in _ordered_kernels(record) + ["cublas"] if sgemm_rows(record, k, size)]
    for name, x, y in points:
        ax.plot([x], [y], "o")
        ax.annotate(name, (x, y), fontsize=7, xytext=(4, -3), textcoords="offset points")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP per DRAM byte)")
    ax.set_ylabel("GFLOPS")
    ax.set_title(f"Roofline, ridge at {ridge:.0f} FLOP/byte ({label(record)})", fontsize=10)
    return ax


def save_figures(record, directory=results.RESULTS_DIR):
    """The three figures of ``record`` as PNG files in ``directory`` (what the bench writes)."""
    paths = []
    for what, fn in (("ladder", ladder), ("sizes", versus_size), ("roofline", roofline)):
        ax = fn(record)
        ax.figure.tight_layout()
        paths.append(results.path_for("plot", record.device.name, what, directory))
        ax.figure.savefig(paths[-1], dpi=110)
        plt.close(ax.figure)
    return paths
