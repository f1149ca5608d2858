"""Lesson 11, section 1 (edges and alignment): which rows of a row-major matrix a float4 load may
start (a figure), and gl.sgemm at the aligned square and the odd shape (a table).  The section's
sentences are in ``edge_shapes_sentences``.
"""
import numpy as np

from gemm_lessons.core import tables
from gemm_lessons.teaching.lesson11.suite_record import ODD_SHAPE, REFERENCE_SHAPE, label, row, shape_name, tflops


def alignment_figure(ks=(8, 10), rows=4, ax=None):
    """Each row-major matrix of ``rows`` rows and K columns as it lies in memory: which rows start
    on a 16-byte boundary (a float4 load of a row's first 4 floats is legal only there)."""
    import matplotlib.pyplot as plt
    import matplotlib.patches as patches

    if ax is None:
        _, ax = plt.subplots(len(ks), 1, figsize=(11, 1.5 * len(ks)))
    ax = np.atleast_1d(ax)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for axis, K in zip(ax, ks):
        n = rows * K
        width = -(-n // 4) * 4
        for f in range(n):
            r = f // K
            axis.add_patch(patches.Rectangle((f, 0), 1, 1, fc=colors[r % len(colors)], alpha=0.35, ec="white"))
        for b in range(0, width + 1, 4):
            axis.axvline(b, color="black", lw=1.6 if b % 8 == 0 else 0.8)
        bad = []
        for r in range(rows):
            start = r * K
            ok = start % 4 == 0
            if not ok:
                bad.append(r)
            axis.annotate(f"row {r}\nbyte {4 * start}", (start, 1), (start + 0.1, 1.55), fontsize=7,
                          color="tab:green" if ok else "tab:red", va="center")
        axis.set_xlim(0, width)
        axis.set_ylim(0, 2.1)
        axis.set_yticks([])
        axis.set_xticks(range(0, width + 1, 4))
        axis.tick_params(labelsize=7)
        what = (f"rows {', '.join(map(str, bad))} start between two 16-byte boundaries: no float4 load there"
                if bad else "every row starts on a 16-byte boundary: float4 loads work")
        axis.set_title(f"K = {K} floats per row ({4 * K} bytes): {what}", fontsize=9, loc="left")
    ax[-1].set_xlabel("float index in memory (thick lines every 32 bytes, thin every 16)", fontsize=8)
    plt.tight_layout()
    return ax


def edges_markdown(rec, shapes=(REFERENCE_SHAPE, ODD_SHAPE)):
    """gl.sgemm at the aligned square and the odd shape (single calls), with the calibration of
    the two kernels behind them: the measured cost of the edges."""
    body = []
    for shape in shapes:
        r = row(rec, shape)
        if r is None or r.single_gl is None:
            continue
        body.append([shape_name(shape), r.plan, f"{r.single_gl.median_ms:.3f}", f"{tflops(shape, r.single_gl.median_ms):.1f}",
                     f"{r.single_cublas.median_ms:.3f}" if r.single_cublas else "",
                     f"{r.pct_cublas_single:.1f}%" if r.pct_cublas_single else "",
                     f"{r.pct_cublas_back_to_back:.1f}%" if r.pct_cublas_back_to_back else ""])
    table = tables.markdown(["M x N x K", "plan gl.sgemm chose", "gl.sgemm ms (single call)", "TFLOPS",
                             "cuBLAS ms", "% of cuBLAS, single", "% of cuBLAS, back to back"], body, "llrrrrr")
    return f"**Edges: the aligned square and the odd shape**, recorded on {label(rec)}\n\n" + table
