"""Lesson 11, section 1 (edges and alignment): which rows of a row-major matrix a float4 load may
start (a figure).  The lesson writes the section's sentences.
"""
import numpy as np



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
