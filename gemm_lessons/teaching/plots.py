"""The three pictures of the series: the ladder, GFLOPS against size, and the roofline.

Every function takes a results record (see gemm_lessons.records.results) and labels the figure with
the device and date the numbers were measured on.
"""
import matplotlib
import matplotlib.pyplot as plt
import numpy as np

from gemm_lessons.model import counting
from gemm_lessons.records import results
from gemm_lessons.records.results import label, sgemm_rows


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
            inside = t > 0.25 * max(tflops)  # inside the bar's top, clear of the cuBLAS line above it
            ax.text(b.get_x() + b.get_width() / 2, t * 0.97 if inside else t,
                    f"{t:.1f}\n{100 * t / (cub[0].gflops / 1e3):.0f}%\nof cuBLAS",
                    ha="center", va="top" if inside else "bottom", fontsize=7, color="white" if inside else "black")
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
        _, ax = plt.subplots(figsize=(9.5 if len(kernels) > 4 else 7, 4))
    host_bound = False
    for k in kernels:
        rows = sorted((r for r in sgemm_rows(record, k) if r.M == r.N == r.K), key=lambda r: r.M)
        if rows:
            (line,) = ax.plot([r.M for r in rows], [r.gflops / 1e3 for r in rows], "o-", label=k,
                              lw=2.5 if k == "cublas" else 1.5)
            bound = [r for r in rows if r.host_bound]  # timed the launch overhead, not the kernel
            if bound:
                host_bound = True
                ax.plot([r.M for r in bound], [r.gflops / 1e3 for r in bound], "o", ms=9, mfc="white", color=line.get_color(),
                        mec=line.get_color())
    if host_bound:
        ax.plot([], [], "o", mfc="white", color="grey", label="host-bound (launch overhead)")
    ax.set_xscale("log", base=2)
    ax.set_ylim(bottom=0)
    ax.set_xlabel("M = N = K")
    ax.set_ylabel("TFLOPS")
    ax.set_title(f"SGEMM throughput against size ({label(record)})", fontsize=10)
    if len(kernels) > 4:  # outside the axes: inside, it would cover lines
        ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5))
        ax.figure.tight_layout()
    else:
        ax.legend(fontsize=8)
    return ax


def rung_versus_size(rung, record=None, ax=None):
    """A lesson's plot: TFLOPS against square size for ``rung``, the rung before it on the
    ladder and cuBLAS, from the recorded benchmark (every size timed in one run)."""
    record = record or results.load()
    order = record.ladder or []
    if rung not in order:
        raise ValueError(f"{rung!r} is not a rung of the recorded ladder ({', '.join(order)})")
    i = order.index(rung)
    kernels = order[max(i - 1, 0):i + 1] + ["cublas"]
    ax = versus_size(record, kernels, ax)
    what = f"{rung}, the rung before it and cuBLAS" if i else f"{rung} and cuBLAS"
    lines = [[r.gflops / 1e3 for r in sgemm_rows(record, k) if r.M == r.N == r.K] for k in kernels]
    tops = [max(v, default=0) for v in lines]
    if min(tops) and max(tops) > 10 * min(tops):  # a line this far below the others reads better on a log scale
        every = [v for line in lines for v in line]
        ax.set_yscale("log")
        ax.set_ylim(min(every) / 1.5, max(every) * 1.5)
        what += ", log scale"
    ax.set_title(f"{what} (recorded on {label(record)})", fontsize=10)
    return ax


def _tflops_axis(ax):
    """Label a GFLOPS-valued log axis in TFLOPS, as every table of the course reads."""
    from matplotlib.ticker import FuncFormatter

    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v / 1e3:g}"))
    ax.set_ylabel("TFLOPS")


def roofline(record, points=None, ax=None, size=(4096, 4096, 4096), yticks=None, marks=None):
    """Log-log roofline: measured copy bandwidth and FP32 peak as ceilings, kernels as points.

    ``points`` is a list of (name, FLOP per DRAM byte, GFLOPS); by default every rung and
    cuBLAS at ``size``, placed at the problem's ideal intensity (each input read once).
    ``yticks``: TFLOPS values to label on the y axis, with a grid line each, so that points near
    the peak can be read against it; the axis then spans them.  ``marks``: (label, FLOP per
    byte) pairs drawn as dashed vertical lines (an intensity of interest, before any point)."""
    peak = record.device.peak_gflops
    bw = results.copy_bandwidth_gbs(record)
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 4.5))
    ridge = peak / bw
    xs = sorted([2 ** (i / 4) for i in range(-16, 53)] + [ridge])  # the corner drawn sharp
    ax.plot(xs, [min(peak, bw * x) for x in xs], "k-", lw=2)
    ax.annotate(f"FP32 peak {peak / 1e3:.1f} TFLOPS", (xs[-1], peak), ha="right", va="bottom", fontsize=8)
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
    _tflops_axis(ax)
    if yticks:
        from matplotlib.ticker import FixedLocator, NullLocator

        lo, hi = 1e3 * min(yticks), 1e3 * max(yticks)
        ax.set_ylim(lo / 1.15, hi * 1.15)
        ax.set_xlim(lo / 1.15 / bw, xs[-1] * 1.2)
        ax.yaxis.set_major_locator(FixedLocator([1e3 * t for t in yticks]))
        ax.yaxis.set_minor_locator(NullLocator())
        ax.grid(True, axis="y", which="major", alpha=0.35)
        ax.annotate(f"measured copy\n{bw / 1e3:.2f} TB/s", (0.6 * peak / bw, 0.6 * peak), fontsize=8,
                    xytext=(-6, 0), textcoords="offset points", ha="right", va="center")
    else:
        ax.annotate(f"measured copy {bw / 1e3:.2f} TB/s", (1, bw), rotation=0, fontsize=8, va="bottom")
    for name, x in marks or []:
        ax.axvline(x, color="tab:blue", ls="--", lw=1)
        ax.annotate(name, (x, np.sqrt(np.prod(ax.get_ylim()))), xytext=(-4, 0), textcoords="offset points",
                    rotation=90, ha="right", va="center", fontsize=8, color="tab:blue")
    ax.set_title(f"Roofline, ridge at {ridge:.0f} FLOP/byte ({label(record)})", fontsize=10)
    return ax


def _spread_labels(ax, points, min_gap=0.09):
    """Annotate (name, x, y) points on a log-log axis, nudging labels apart vertically where
    two would overlap (gap in decades of y)."""
    import math

    placed = []
    for name, x, y in sorted(points, key=lambda p: p[2]):
        ly = math.log10(y)
        for px, py in placed:
            if abs(math.log10(x) - px) < 0.6 and abs(ly - py) < min_gap:
                ly = py + min_gap
        placed.append((math.log10(x), ly))
        ax.annotate(name, (x, y), xytext=(x * 1.15, 10 ** ly), fontsize=7, va="center",
                    arrowprops=dict(arrowstyle="-", lw=0.4, color="grey"))


def roofline_rungs(record, counters=None, size=(4096, 4096, 4096), axes=None):
    """Two rooflines for the SGEMM rungs at ``size``, each rung at the intensity it achieves.

    Left, global memory: x = FLOP per byte the rung asks global memory for (its tiles:
    counting.sgemm_traffic; hollow) and, with ``counters`` from the profiler, per byte DRAM
    really delivered (filled, same colour): the L1 and L2 caches close the gap.  The ceiling is
    the measured copy bandwidth.  Right, shared memory: x = FLOP per byte read from shared
    memory (counting.sgemm_traffic), ceiling = 32 banks x 4 bytes per clock per SM.  A rung
    under a ceiling's slanted part is bound by that memory; the FP32 peak is the flat part."""
    from gemm_lessons.teaching.leaderboard import roofline_rows  # the same numbers as lesson 10's table

    M, N, K = size
    peak = record.device.peak_gflops
    rows = roofline_rows(record, counters, size)
    if axes is None:
        _, axes = plt.subplots(1, 2, figsize=(12, 4.8), sharey=True)
    ceilings = ((axes[0], results.copy_bandwidth_gbs(record), "global memory", "(measured copy bandwidth)"),
                (axes[1], record.device.shared_bandwidth_gbs, "shared memory",
                 "(32 banks x 4 B per clock x SMs x clock)"))
    for ax, ceiling, what, source in ceilings:
        xs = [2 ** (i / 4) for i in range(-12, 41)]
        ax.plot(xs, [min(peak, ceiling * x) for x in xs], "k-", lw=2)
        ax.text(0.98, 0.04, f"slanted ceiling: {what}, {ceiling / 1e3:.1f} TB/s\n{source}",
                transform=ax.transAxes, ha="right", va="bottom", fontsize=8)
        ax.axhline(peak, color="tab:red", ls=":", lw=1)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.grid(True, which="major", alpha=0.3)
    axes[0].annotate(f"FP32 peak {peak / 1e3:.1f} TFLOPS", (2 ** 10, peak), ha="right", va="bottom", fontsize=8)
    left, right = [], []
    for i, (k, tflops, asked, _, x_shared, _, dram) in enumerate(rows):
        gflops, colour = tflops * 1e3, f"C{i}"
        axes[0].plot([asked], [gflops], "o", mfc="none", color=colour)
        if dram:
            axes[0].plot([dram], [gflops], "o", color=colour)
            axes[0].plot([asked, dram], [gflops, gflops], "-", color=colour, lw=0.8)
        left.append((k, dram or asked, gflops))
        if x_shared:
            axes[1].plot([x_shared], [gflops], "s", color=colour)
            right.append((k, x_shared, gflops))
    _spread_labels(axes[0], left)
    _spread_labels(axes[1], right)
    axes[0].set_xlabel("FLOP per byte of global memory" + (": asked for (hollow), from DRAM (filled, ncu)"
                                                           if counters else " asked for (tile formula)"))
    axes[1].set_xlabel("FLOP per byte read from shared memory (tile formula)")
    _tflops_axis(axes[0])
    axes[0].set_title(f"SGEMM {M}x{N}x{K}: global memory ({label(record)})", fontsize=10)
    axes[1].set_title("... and shared memory", fontsize=10)
    return axes


CEILING_STYLE = {  # ceiling name -> (colour, label): the limiter model's ceilings (gemm_lessons.model.limiter)
    "fp32": ("tab:red", "FP32 lanes"),
    "issue": ("black", "instruction issue"),
    "shared": ("tab:blue", "shared-memory wavefronts"),
    "l2": ("tab:green", "L2 bandwidth"),
    "dram": ("tab:orange", "DRAM bandwidth"),
    "latency": ("tab:purple", "DRAM latency"),
}


def ceilings(table, measured=True, ax=None, top_tflops=200.0, source=None):
    """The roofline's ceilings, one column per rung: for each row of ``table`` (a
    teaching.limiter_table.LimiterTable of SGEMM rungs), the TFLOPS each ceiling of the limiter
    model allows (FLOP / its time), a dash per ceiling, the binding one drawn thick; with
    ``measured``, a dot at the rung's measured TFLOPS.  A ceiling above ``top_tflops`` is drawn
    as a triangle at the top edge: it is far from binding.  The FP32 ceiling is the same for
    every rung: the flat roof of a roofline, drawn across.  The gap from the thick dash down to
    the dot is the rung's measured / predicted.  ``source`` says where the measurements come from
    (default: the limiter record's run)."""
    from matplotlib.lines import Line2D

    n = int(table.size.split("^")[0])
    flop = 2 * n ** 3
    rows = table.rows
    if ax is None:
        _, ax = plt.subplots(figsize=(max(7.5, 0.85 * len(rows) + 2.5), 4.6))
    names = [c for c in CEILING_STYLE if any(c in r.ceilings_ms for r in rows)]
    lowest = top_tflops
    for i, r in enumerate(rows):
        for j, name in enumerate(names):
            if name not in r.ceilings_ms:
                continue
            colour = CEILING_STYLE[name][0]
            tflops = flop / (r.ceilings_ms[name] * 1e-3) / 1e12
            lowest = min(lowest, tflops)
            if tflops > top_tflops:
                ax.plot([i - 0.3 + 0.6 * j / max(1, len(names) - 1)], [top_tflops / 1.1], "^", color=colour, ms=5)
            else:
                ax.plot([i - 0.32, i + 0.32], [tflops, tflops], "-", color=colour,
                        lw=4 if name == r.binding else 1.3, solid_capstyle="butt")
        if measured:
            t = flop / (r.measured_ms * 1e-3) / 1e12
            lowest = min(lowest, t)
            ax.plot([i], [t], "o", color="tab:gray", mec="black", ms=7, zorder=5)
            ax.annotate(f"{t:.1f}", (i, t), xytext=(0, -12), textcoords="offset points", ha="center", fontsize=7)
    handles = [Line2D([], [], color=CEILING_STYLE[c][0], lw=2, label=CEILING_STYLE[c][1]) for c in names]
    handles.append(Line2D([], [], color="grey", lw=4, label="thick: the binding ceiling"))
    handles.append(Line2D([], [], color="grey", marker="^", ls="", label=f"a ceiling above {top_tflops:g} TFLOPS"))
    if measured:
        handles.append(Line2D([], [], color="tab:gray", mec="black", marker="o", ls="", label="measured"))
    ax.set_yscale("log")
    ax.set_ylim(lowest / 2, top_tflops)
    ax.set_xlim(-0.6, len(rows) - 0.4)
    ax.set_xticks(np.arange(len(rows)), [r.rung for r in rows], rotation=30, ha="right")
    ax.set_ylabel("TFLOPS (log scale)")
    ax.grid(True, axis="y", which="major", alpha=0.3)
    what = ", and where each rung ran" if measured else " (the model alone)"
    where = source or f"{table.device}, {table.date}"  # a source may say "measured" itself
    where = f"; {where if where.startswith('measured') else 'measured: ' + where}" if measured else ""
    ax.set_title(f"SGEMM {n}^3: the TFLOPS each ceiling allows{what}\n"
                 f"(model: {table.device}, {table.date}, SM clock {table.clock_mhz:,.0f} MHz{where})", fontsize=9)
    ax.legend(handles=handles, fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    ax.figure.tight_layout()
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


def transpose_suite(suite, ax=None):
    """% of cuBLAS sgeam per shape for library.transpose, single calls and back-to-back, from a
    recorded transpose suite (results.transpose_suite).  The shapes that move at least
    results.LARGE_TRANSPOSE_BYTES come first; the smaller ones follow in a shaded band, since
    there a call's cost on the host likely rivals the kernel's and the bars compare calls."""
    large = [r for r in suite["rows"] if 8 * r["shape"][0] * r["shape"][1] >= results.LARGE_TRANSPOSE_BYTES]
    rows = large + [r for r in suite["rows"] if r not in large]
    labels = ["x".join(map(str, r["shape"])) for r in rows]
    x = np.arange(len(rows))
    if ax is None:
        _, ax = plt.subplots(figsize=(max(8, 0.55 * len(rows)), 4.2))
    for off, key, color, name in ((-0.2, "pct_sgeam_single", "tab:blue", "single calls"),
                                  (0.2, "pct_sgeam", "tab:orange", "back-to-back")):
        vals = [r["kernels"].get("library", {}).get(key, 0) for r in rows]
        ax.bar(x + off, vals, 0.4, color=color, label=name)
        for xi, v in zip(x + off, vals):
            if v:
                ax.text(xi, v, f"{v:.0f}", ha="center", va="bottom", fontsize=6)
    ax.axhline(100, color="k", ls="--", lw=1, label="100%: as fast as sgeam")
    ax.axhline(95, color="grey", ls=":", lw=1, label="95%")
    if len(large) < len(rows):
        mib = results.LARGE_TRANSPOSE_BYTES // 2**20
        ax.axvspan(len(large) - 0.5, len(rows) - 0.5, color="0.88", zorder=0,
                   label=f"moves < {mib} MiB: likely calls compared, not kernels")
    ax.set_xlim(-0.6, len(rows) - 0.4)
    ax.set_xticks(x, labels, rotation=60, ha="right", fontsize=8)
    ax.set_ylabel("% of cuBLAS sgeam (its time / ours)")
    ax.set_title(f"library.transpose against cuBLAS sgeam, recorded on {suite['device']}, {suite['date'][:10]}",
                 fontsize=10)
    ax.legend(fontsize=8)
    return ax


def main(argv=None):
    """python -m gemm_lessons.teaching.plots [--out DIR] [--device NAME]: the three figures of a
    recorded benchmark (python -m gemm_lessons.runs.bench writes the record) as PNG files beside it."""
    import argparse

    p = argparse.ArgumentParser(description=main.__doc__)
    p.add_argument("--out", default=results.RESULTS_DIR, help="the results directory (default: the repo's results/)")
    p.add_argument("--device", default=None, help="the device whose record to draw (default: this GPU's, else the newest)")
    args = p.parse_args(argv)
    matplotlib.use("Agg")  # files only, no window
    for path in save_figures(results.load(args.device, args.out), args.out):
        print("wrote", path)


if __name__ == "__main__":
    main()
