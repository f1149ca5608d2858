"""Where a warp's loads land: sectors and cache lines of global memory (lessons 01, 09), and
bytes in flight against what an SM needs (lesson 09)."""
import collections

import matplotlib.pyplot as plt
import matplotlib.patches as patches
import numpy as np


SECTOR_BYTES = 32


CACHE_LINE_BYTES = 128  # the unit the L1 tracks: four sectors


def sectors(byte_addresses):
    """Distinct 32-byte sectors touched by one warp-wide access (the unit DRAM and L2 serve)."""
    return len({a // SECTOR_BYTES for a in byte_addresses})


def cache_lines(byte_addresses):
    """Distinct 128-byte cache lines touched by one warp-wide access (the L1 serves a warp's load
    one cache line per pass: lesson 01)."""
    return len({a // CACHE_LINE_BYTES for a in byte_addresses})


def naive_warp_addresses(coalesced, K=1024, N=1024, k=0, row0=0, col0=0, block_x=32):
    """Byte addresses of A and B read by the 32 threads of one warp at step k of the naive kernel.
    ``block_x`` is the block's width (blockDim.x): a warp is 32 consecutive thread numbers, x
    fastest, so with block_x = 16 it spans two values of threadIdx.y."""
    lanes = range(32)
    if coalesced:  # threadIdx.x -> column, threadIdx.y -> row
        rows, cols = [row0 + l // block_x for l in lanes], [col0 + l % block_x for l in lanes]
    else:  # threadIdx.x -> row, threadIdx.y -> column
        rows, cols = [row0 + l % block_x for l in lanes], [col0 + l // block_x for l in lanes]
    a = [4 * (r * K + k) for r in rows]
    b = [4 * (k * N + c) for c in cols]
    return a, b


def _sector_axes(axis, cols, rows, row_step, xlabel, ylabel):
    """The frame of a matrix drawn float by float: its 32-byte sectors marked along each row."""
    for x in range(0, cols + 1, SECTOR_BYTES // 4):  # sector boundaries along a row
        axis.axvline(x, color="black", lw=0.6)
    axis.set_xlim(0, cols)
    axis.set_ylim(rows, 0)
    axis.set_aspect("equal")
    axis.set_xticks(range(0, cols + 1, 8))
    axis.set_yticks(range(0, rows + 1, row_step))
    axis.tick_params(labelsize=7)
    axis.set_xlabel(xlabel, fontsize=8)
    axis.set_ylabel(ylabel, fontsize=8)


def _lanes_on_matrix(axis, addrs, ld, rows, cols, name, xlabel, ylabel):
    """One matrix's corner as a grid of floats: blue, the float each lane reads (its number inside,
    or one note for a float all lanes share); shaded and outlined, each 32-byte sector fetched."""
    fetched = {a // SECTOR_BYTES for a in addrs}
    lanes_of = collections.defaultdict(list)
    for lane, a in enumerate(addrs):
        lanes_of[a // 4].append(lane)
    floats_per_sector = SECTOR_BYTES // 4
    for s in fetched:
        y, x = divmod(s * floats_per_sector, ld)
        axis.add_patch(patches.Rectangle((x, y), floats_per_sector, 1, fc="tab:orange", alpha=0.35,
                                         ec="tab:red", lw=0.8))
    for f, lanes in lanes_of.items():
        y, x = divmod(f, ld)
        axis.add_patch(patches.Rectangle((x, y), 1, 1, fc="tab:blue", ec="white"))
        if len(lanes) == 1:
            axis.text(x + 0.5, y + 0.5, str(lanes[0]), ha="center", va="center", fontsize=6.5, color="white")
        else:
            axis.annotate(f"lanes {lanes[0]}-{lanes[-1]} all read\nthis one float (a broadcast)",
                          (x + 1, y + 0.5), (x + 4, y + 2.6), fontsize=8, va="center",
                          arrowprops=dict(arrowstyle="->", lw=0.8))
    _sector_axes(axis, cols, rows, 8 if rows > 8 else 1, xlabel, ylabel)
    n = len(lanes_of)
    axis.set_title(f"{name}: {n} float{'s' if n > 1 else ''}, {len(fetched)} sector{'s' if len(fetched) > 1 else ''}",
                   fontsize=9)


def naive_warp_map(K=64, N=64, cols_a=16, cols_b=40):
    """The naive kernel's two thread mappings, one above the other: which float of A and of B each
    lane of one warp reads at k = 0, and the sectors and cache lines fetched (rows of K and N floats;
    the first ``cols_a`` columns of A and ``cols_b`` of B drawn)."""
    fig = plt.figure(figsize=(10, 7.9))
    top, bottom = fig.subfigures(2, 1, height_ratios=[1, 2.3])
    for sub, coalesced in ((top, True), (bottom, False)):
        a, b = naive_warp_addresses(coalesced, K, N)
        rows_a = max(4, max(x // 4 // K for x in a) + 1)
        ax = sub.subplots(1, 2, gridspec_kw={"width_ratios": [cols_a, cols_b]})
        _lanes_on_matrix(ax[0], a, K, rows_a, cols_a, "A", "column of A (k)", "row of A = row of C")
        _lanes_on_matrix(ax[1], b, N, 4, cols_b, "B", "column of B = column of C", "row of B (k)")
        total = sectors(a) + sectors(b)
        lines_a, lines_b = cache_lines(a), cache_lines(b)
        head = ("COALESCED: threadIdx.x walks the columns of C (lane i: row 0, column i)" if coalesced else
                "UNCOALESCED: threadIdx.x walks the rows of C (lane i: row i, column 0)")
        sub.suptitle(f"{head}\n{sectors(a)} + {sectors(b)} = {total} sectors, in {lines_a} + {lines_b} = "
                     f"{lines_a + lines_b} cache lines, per warp per k-step", fontsize=10,
                     fontweight="bold", color="tab:green" if coalesced else "tab:red")
    bottom.subplots_adjust(bottom=0.14)  # room for the two-line caption under the lower panels
    fig.text(0.01, 0.005, "blue: the float a lane (number) reads at k = 0; shaded, outlined: each 32-byte sector "
             f"fetched; black lines: sector boundaries (8 floats).\nThe matrices are {K} floats wide; only the "
             f"first {cols_a} columns of A and {cols_b} of B are shown.", fontsize=8, va="bottom")
    return fig


def bytes_in_flight(names, per_sm, needed, duty=1.0, ax=None):
    """Bars of the bytes of loads each SM keeps in flight while its blocks load (``per_sm``, one
    per name) against what Little's law needs (``needed``: bandwidth x latency per SM) and, when
    loads are in flight only a fraction ``duty`` of the time, against needed / duty (a bar short of
    that line sustains only its share of the bandwidth)."""
    if ax is None:
        _, ax = plt.subplots(figsize=(9, 0.5 * len(names) + 1.6))
    y = np.arange(len(names))
    per_sm = np.array(per_sm, dtype=float)
    enough = needed / duty
    ax.barh(y, per_sm, color=["tab:blue" if b >= enough else "tab:orange" for b in per_sm], alpha=0.8)
    right = max(per_sm.max(), enough) * 1.25
    for yi, b in zip(y, per_sm):
        ax.text(b + right / 150, yi, f"{b:,.0f}", va="center", fontsize=9, bbox=dict(fc="white", ec="none", pad=1))
    lines = [(needed, ":", f"B x L per SM: {needed:,.0f}")]
    if duty != 1:
        lines.append((enough, "--", f"needed when loading {duty:.0%} of the time: {enough:,.0f}"))
    for i, (x, style, label) in enumerate(lines):
        ax.axvline(x, color="black", ls=style, lw=1)
        ax.text(x, -0.75 - 0.55 * i, " " + label, fontsize=9, va="center",
                bbox=dict(fc="white", ec="none", pad=1))
    ax.set_title("orange: short of the last line (a share of the bandwidth); blue: enough", fontsize=9, loc="left")
    ax.set_yticks(y, names, fontsize=9)
    ax.set_ylim(len(names) - 0.5, -0.75 - 0.55 * len(lines))
    ax.set_xlim(0, right)
    ax.xaxis.set_major_formatter(plt.FuncFormatter(lambda v, _: f"{v:,.0f}"))
    ax.set_xlabel("bytes of loads in flight per SM while its blocks load", fontsize=9)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    return ax


def naive_transpose_warp_addresses(rows=64, cols=64, r=0, c0=0):
    """Byte addresses that warp 0 of lesson 09's naive transpose reads in src and writes in dst
    (rows x cols, float32, row-major): lane l has threadIdx.x = l, so c = c0 + l, at src row r;
    it reads src[r, c] and writes dst[c, r]."""
    lanes = range(32)
    return [4 * (r * cols + c0 + l) for l in lanes], [4 * ((c0 + l) * rows + r) for l in lanes]


def transpose_warp_access(rows=64, cols=64, ax=None):
    """Lanes to addresses in the naive transpose: the warp's 32 reads lie along one row of src
    (four 32-byte sectors), its 32 writes down one column of dst (a sector each)."""
    read, write = naive_transpose_warp_addresses(rows, cols)
    if ax is None:
        _, ax = plt.subplots(1, 2, figsize=(11, 5.2), gridspec_kw={"width_ratios": [3.2, 1]})
    show_r, show_c = 6, 40  # the part of src drawn: its first rows and columns
    for axis, addrs, name, width, height, ld in ((ax[0], read, "src (read)", show_c, show_r, cols),
                                                 (ax[1], write, "dst (write)", 10, 34, rows)):
        fetched = {a // SECTOR_BYTES for a in addrs}
        for y in range(height):
            for x in range(width):
                idx = y * ld + x
                if idx * 4 // SECTOR_BYTES in fetched:  # part of a sector the warp fetches
                    axis.add_patch(patches.Rectangle((x, y), 1, 1, fc="tab:orange", alpha=0.25, ec="none"))
        for lane, a in enumerate(addrs):
            y, x = divmod(a // 4, ld)
            axis.add_patch(patches.Rectangle((x, y), 1, 1, fc="tab:blue", ec="white"))
            axis.text(x + 0.5, y + 0.5, str(lane), ha="center", va="center", fontsize=6.5, color="white")
        _sector_axes(axis, width, height, 4 if height > 10 else 1, "column", "row")
        moved = "read" if "read" in name else "written"
        axis.set_title(f"{name}: lanes 0-31 touch {len(fetched)} sectors\n({len(addrs) * 4} bytes {moved}; "
                       f"the sectors hold {len(fetched) * SECTOR_BYTES})", fontsize=9)
    ax[0].figure.text(0.01, 0.02, "blue: the float a lane (number) reads or writes; shaded: the rest of the 32-byte "
                      "sectors the warp touches; black lines: sector boundaries (8 floats)", fontsize=8)
    plt.tight_layout(rect=(0, 0.05, 1, 1))
    return ax
