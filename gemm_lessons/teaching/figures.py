"""Small explanatory figures (the "Idea" step of each lesson), drawn from the same index
arithmetic the kernels use, and the pictures of what the instruments find (bank maps)."""
import collections

import matplotlib.pyplot as plt
import matplotlib.patches as patches
import numpy as np

from gemm_lessons.instruments.bank_model import BANKS, PHASE_LANES, wavefronts, warp_layout_addresses, words_of

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
    for x in range(0, cols + 1, SECTOR_BYTES // 4):  # sector boundaries along a row
        axis.axvline(x, color="black", lw=0.6)
    axis.set_xlim(0, cols)
    axis.set_ylim(rows, 0)
    axis.set_aspect("equal")
    axis.set_xticks(range(0, cols + 1, 8))
    axis.set_yticks(range(0, rows + 1, 8 if rows > 8 else 1))
    axis.tick_params(labelsize=7)
    axis.set_xlabel(xlabel, fontsize=8)
    axis.set_ylabel(ylabel, fontsize=8)
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


def tiles(BM=32, BN=32, BK=32, M=128, N=128, K=128, ax=None):
    """A block's tile of C, the strip of A and B it needs, and one BK-wide slice of each."""
    if ax is None:
        _, ax = plt.subplots(1, 3, figsize=(10, 3.4))
    specs = [("A (M x K)", M, K, (BM, 0, BM, K), (BM, BK, BM, BK)),
             ("B (K x N)", K, N, (0, BN, K, BN), (BK, BN, BK, BN)),
             ("C (M x N)", M, N, (BM, BN, BM, BN), None)]
    for axis, (title, rows, cols, strip, slice_) in zip(ax, specs):
        axis.add_patch(patches.Rectangle((0, 0), cols, rows, fill=False))
        r0, c0, h, w = strip
        axis.add_patch(patches.Rectangle((c0, r0), w, h, color="tab:blue", alpha=0.25))
        if slice_:
            r0, c0, h, w = slice_
            axis.add_patch(patches.Rectangle((c0, r0), w, h, color="tab:blue", alpha=0.8))
        axis.set_xlim(-2, cols + 2)
        axis.set_ylim(rows + 2, -2)
        axis.set_aspect("equal")
        axis.set_title(title, fontsize=9)
        axis.set_xticks([])
        axis.set_yticks([])
    ax[0].set_title(f"A (M x K): dark = the {BM}x{BK} slice in shared memory now", fontsize=9)
    ax[1].set_title(f"B (K x N): dark = the {BK}x{BN} slice", fontsize=9)
    ax[2].set_title(f"C (M x N): one block's {BM}x{BN} tile", fontsize=9)
    plt.tight_layout()
    return ax


def outer_product(TM=8, TN=8, ax=None):
    """TM values of A times TN values of B: TM*TN products from TM+TN reads."""
    if ax is None:
        _, ax = plt.subplots(figsize=(4, 4))
    for i in range(TM):
        ax.add_patch(patches.Rectangle((-1.5, i), 1, 1, fc="tab:red", alpha=0.6, ec="white"))
    for j in range(TN):
        ax.add_patch(patches.Rectangle((j, -1.5), 1, 1, fc="tab:olive", alpha=0.6, ec="white"))
    for i in range(TM):
        for j in range(TN):
            ax.add_patch(patches.Rectangle((j, i), 1, 1, fc="tab:blue", alpha=0.35, ec="white"))
    ax.text(-1.0, TM + 0.3, f"a_reg: {TM} values\nof the A tile\n(a column)", ha="center", va="top", fontsize=7)
    ax.text(TN / 2, -1.7, f"b_reg: {TN} values of the B tile (a row)", ha="center", va="bottom", fontsize=7)
    ax.text(TN / 2, TM / 2, f"{TM} x {TN} accumulators:\nacc[i, j] += a_reg[i] * b_reg[j]", ha="center",
            va="center", fontsize=7)
    ax.set_xlim(-2.2, TN + 0.5)
    ax.set_ylim(TM + 2.2, -2.6)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title(f"one k-step of one thread: {TM}+{TN} reads, {TM * TN} FMAs", fontsize=9)
    return ax


def thread_tile_rows_cols(thread, BM=128, BN=128, TM=8, TN=8, spread=False):
    """The rows and columns of the block's C tile that ``thread`` owns, as the reg2d kernel lays
    them out: side by side, or with ``spread`` BM//TM rows and BN//TN columns apart."""
    t_row, t_col = thread // (BN // TN), thread % (BN // TN)
    if spread:
        return [t_row + i * (BM // TM) for i in range(TM)], [t_col + j * (BN // TN) for j in range(TN)]
    return [t_row * TM + i for i in range(TM)], [t_col * TN + j for j in range(TN)]


def register_block(BM=128, BN=128, BK=8, TM=8, TN=8, thread=37, k=2, spread=False, axes=None):
    """One block of the 2-D register-tiled kernel (left): the BM x BK slice of A and the BK x BN
    slice of B in shared memory, the BM x BN tile of C cut into (BM/TM) x (BN/TN) threads of
    TM x TN results, one ``thread``'s results and, at k-step ``k``, the TM values of A and TN values
    of B it reads; and that thread's outer product (right, ``outer_product``)."""
    if axes is None:
        _, axes = plt.subplots(1, 2, figsize=(10, 5.2), gridspec_kw={"width_ratios": [1.45, 1]})
    ax = axes[0]
    gap = 3
    rows, cols = thread_tile_rows_cols(thread, BM, BN, TM, TN, spread)
    # the slices in shared memory: A to the left of C, B above it
    ax.add_patch(patches.Rectangle((-gap - BK, 0), BK, BM, fc="tab:red", alpha=0.12, ec="black", lw=0.8))
    ax.add_patch(patches.Rectangle((0, -gap - BK), BN, BK, fc="tab:olive", alpha=0.12, ec="black", lw=0.8))
    for i in range(1, BK):  # the k columns of the A slice, the k rows of the B slice
        ax.plot([-gap - BK + i] * 2, [0, BM], color="0.8", lw=0.4)
        ax.plot([0, BN], [-gap - BK + i] * 2, color="0.8", lw=0.4)
    for r in rows:
        ax.add_patch(patches.Rectangle((-gap - BK + k, r), 1, 1, fc="tab:red", ec="none"))
    for c in cols:
        ax.add_patch(patches.Rectangle((c, -gap - BK + k), 1, 1, fc="tab:olive", ec="none"))
    # the C tile and its grid of threads
    ax.add_patch(patches.Rectangle((0, 0), BN, BM, fill=False, ec="black", lw=1.2))
    for y in range(0, BM + 1, TM):
        ax.plot([0, BN], [y, y], color="0.8", lw=0.4)
    for x in range(0, BN + 1, TN):
        ax.plot([x, x], [0, BM], color="0.8", lw=0.4)
    for r in rows:
        for c in cols:
            ax.add_patch(patches.Rectangle((c, r), 1, 1, fc="tab:blue", ec="none"))
    threads = (BM // TM) * (BN // TN)
    ax.text(-gap - BK / 2, BM + 2, f"A slice\n{BM}x{BK}", ha="center", va="top", fontsize=8)
    ax.text(BN + 2, -gap - BK / 2, f"B slice\n{BK}x{BN}", ha="left", va="center", fontsize=8)
    ax.text(BN / 2, BM + 2, f"C tile {BM}x{BN}: {BM // TM}x{BN // TN} = {threads} threads (grey grid),\n"
            f"{TM}x{TN} results each; blue: thread {thread}'s", ha="center", va="top", fontsize=8)
    ax.set_xlim(-gap - BK - 2, BN + 22)
    ax.set_ylim(BM + 14, -gap - BK - 2)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title(f"one block, one slice (BK = {BK}); dark: what thread {thread} reads at k = {k}", fontsize=9)
    outer_product(TM, TN, ax=axes[1])
    plt.tight_layout()
    return axes


def register_column(TM=16, ax=None):
    """One k-step of one thread of the 1-D register tile: one value of B kept in a register,
    TM values of A, TM accumulators: 1 + TM reads, TM FMAs."""
    if ax is None:
        _, ax = plt.subplots(figsize=(5.2, 4.2))
    h = 6.0 / TM  # the column is drawn 6 units tall whatever TM is
    for i in range(TM):
        ax.add_patch(patches.Rectangle((0, i * h), 1, h, fc="tab:red", alpha=0.6, ec="white"))
        ax.add_patch(patches.Rectangle((2.5, i * h), 1, h, fc="tab:blue", alpha=0.35, ec="white"))
    ax.add_patch(patches.Rectangle((2.5, -1.6), 1, 1, fc="tab:olive", alpha=0.7, ec="white"))
    ax.text(0.5, 6.25, f"sA[t_row*{TM} + i, k]\nfor i = 0..{TM - 1}:\n{TM} reads, each one\nword for the whole\nwarp (broadcast)",
            ha="center", va="top", fontsize=8)
    ax.text(3.6, -1.1, "b = sB[k, t_col]: 1 read,\nkept in a register", ha="left", va="center", fontsize=8)
    ax.text(3.6, 3.0, f"acc[i] += sA[...] * b\n{TM} accumulators\n(registers): one column\nof {TM} results of C",
            ha="left", va="center", fontsize=8)
    ax.annotate("", xy=(2.45, 3.0), xytext=(1.05, 3.0), arrowprops={"arrowstyle": "->"})
    ax.annotate("", xy=(3.0, -0.05), xytext=(3.0, -0.55), arrowprops={"arrowstyle": "->"})
    ax.set_xlim(-0.6, 7.2)
    ax.set_ylim(8.4, -2.0)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title(f"one k-step of one thread: 1 + {TM} shared reads, {TM} FMAs", fontsize=9)
    return ax


def transposed_tile(BM=16, BK=8, TM=4, ax=None):
    """One thread's TM values of A for one k: strided in sA[BM][BK], contiguous in sAT[BK][BM]."""
    if ax is None:
        _, ax = plt.subplots(1, 2, figsize=(9, 3))
    k, m0 = 2, 4
    for axis, (rows, cols, title, cells) in zip(ax, [
            (BM, BK, "sA[m, k]: 4 reads, each 4 bytes, 32 bytes apart", [(m0 + i, k) for i in range(TM)]),
            (BK, BM, "sAT[k, m]: the same 4 floats side by side: one 16-byte read",
             [(k, m0 + i) for i in range(TM)])]):
        grid = np.zeros((rows, cols))
        for r, c in cells:
            grid[r, c] = 1
        axis.imshow(grid, cmap="Blues", vmin=0, vmax=1.5)
        axis.set_xticks(range(cols))
        axis.set_yticks(range(rows))
        axis.tick_params(labelsize=6)
        axis.set_title(title, fontsize=9)
        first = title.split(":")[0]  # sA[m, k] or sAT[k, m]: rows are the first index
        row_name, col_name = ("m (a row of C)", "k") if first.startswith("sA[") else ("k", "m (a row of C)")
        axis.set_ylabel(f"{row_name}, first index", fontsize=7)
        axis.set_xlabel(f"{col_name}, second index", fontsize=7)
    ax[0].figure.suptitle(f"a {BM} x {BK} tile (the lesson's is 128 x 8): one thread's {TM} values of A at "
                          f"k = {k} (a 4-byte float per cell)", fontsize=8, y=0.02, va="bottom")
    plt.tight_layout(rect=(0, 0.06, 1, 1))
    return ax


def double_buffer_timeline(slices=4, ax=None):
    """What one warp does per slice with one shared buffer (load, wait, barrier, compute,
    barrier) and with two (the next slice's loads run under the compute; one barrier)."""
    if ax is None:
        _, ax = plt.subplots(figsize=(10, 2.6))
    load, compute, bar = 3.0, 4.0, 0.4
    colors = {"global load (waiting)": "tab:red", "store to shared": "tab:orange",
              "compute from shared": "tab:blue", "barrier": "black"}

    def box(y, x, w, what, h=0.6, alpha=0.8):
        ax.add_patch(patches.Rectangle((x, y), w, h, fc=colors[what], alpha=alpha, ec="white"))

    t = 0.0
    for _ in range(slices):  # one buffer: nothing overlaps
        box(1.2, t, load, "global load (waiting)")
        box(1.2, t + load, 0.4, "store to shared")
        box(1.2, t + load + 0.4, bar, "barrier")
        box(1.2, t + load + 0.8, compute, "compute from shared")
        box(1.2, t + load + 0.8 + compute, bar, "barrier")
        t += load + 0.8 + compute + bar
    end_single = t
    t = 0.0
    box(0.2, t, load, "global load (waiting)")  # prologue: slice 0
    box(0.2, t + load, 0.4, "store to shared")
    box(0.2, t + load + 0.4, bar, "barrier")
    t += load + 0.8
    for _ in range(slices):  # two buffers: loads of slice s+1 in flight under the compute of s
        box(0.2, t, compute, "compute from shared")
        box(-0.25, t, load, "global load (waiting)", h=0.35, alpha=0.35)
        box(0.2, t + compute, 0.4, "store to shared")
        box(0.2, t + compute + 0.4, bar, "barrier")
        t += compute + 0.4 + bar
    ax.set_xlim(0, max(end_single, t) + 0.5)
    ax.set_ylim(-0.5, 2.1)
    ax.set_yticks([0.5, 1.5], ["two buffers", "one buffer"])
    ax.set_xticks([])
    ax.set_xlabel("time (one warp; schematic)")
    handles = [patches.Patch(color=c, label=k) for k, c in colors.items()]
    handles.append(patches.Patch(color=colors["global load (waiting)"], alpha=0.35,
                                 label="global load in flight under the compute (no wait)"))
    ax.legend(handles=handles, fontsize=7, ncol=3, loc="upper center", bbox_to_anchor=(0.5, 1.32))
    return ax


def warp_tiles(BM=128, BN=128, WM=32, WN=64, TM=8, TN=8, ax=None):
    """The block tile cut into warp tiles (colours), and in warp 0 the lanes' 4x4 pieces: lane l
    sits at (l // LN, l % LN) of an LM x LN grid, repeated TM/4 x TN/4 times across the warp tile;
    every piece is numbered with its lane (20 colours repeat among 32 lanes)."""
    LM, LN = WM // TM, WN // TN
    if ax is None:
        _, ax = plt.subplots(figsize=(5.5, 5.5))
    cmap = plt.get_cmap("tab20")
    w = 0
    for r in range(0, BM, WM):
        for c in range(0, BN, WN):
            ax.add_patch(patches.Rectangle((c, r), WN, WM, fc=cmap(w % 20), alpha=0.25, ec="black", lw=1.2))
            ax.text(c + WN - 1, r + WM - 1, f"warp {w}", ha="right", va="bottom", fontsize=7)
            w += 1
    for lane in range(32):
        lr, lc = lane // LN, lane % LN
        for p in range(TM // 4):
            for q in range(TN // 4):
                y, x = p * LM * 4 + lr * 4, q * LN * 4 + lc * 4
                ax.add_patch(patches.Rectangle((x, y), 4, 4, fc=cmap(lane % 20), alpha=0.9, ec="white", lw=0.3))
                ax.text(x + 2, y + 2, str(lane), ha="center", va="center", fontsize=5)
    ax.set_xlim(0, BN)
    ax.set_ylim(BM, 0)
    ax.set_aspect("equal")
    ax.set_title(f"{BM}x{BN} block, {WM}x{WN} warp tiles ({LM}x{LN} lanes), {TM}x{TN} per thread", fontsize=9)
    ax.set_xlabel("column of the C tile")
    ax.set_ylabel("row")
    return ax


# ------------------------------------------------------------------ shared-memory banks
def lane_label(lanes):
    """Every lane of a list, runs of three or more written as ranges: [0, 1, 2, 3] -> "0-3",
    [0, 16] -> "0,16", [0, 1, 2, 3, 16, 17, 18, 19] -> "0-3,16-19" (a bank map's cell label)."""
    lanes = sorted(set(lanes))
    runs, start = [], 0
    for i in range(1, len(lanes) + 1):
        if i == len(lanes) or lanes[i] != lanes[i - 1] + 1:
            run = lanes[start:i]
            runs.append(f"{run[0]}-{run[-1]}" if len(run) > 2 else ",".join(map(str, run)))
            start = i
    return ",".join(runs)


def bank_map(addresses, width=4, ax=None, title=None, rows=None):
    """Draw one warp-wide access: 32 banks across, 128-byte rows down, each touched word
    labelled with its lane(s) and coloured by phase; words that conflict are outlined red."""
    cost = wavefronts(addresses, width)
    per = PHASE_LANES[width]
    cells = collections.defaultdict(list)  # (row, bank) -> lanes
    for lane, a in enumerate(addresses):
        if a is None:
            continue
        for w in words_of(a, width):
            cells[(w // BANKS, w % BANKS)].append(lane)
    row_ids = sorted({r for r, _ in cells})
    all_rows = len(row_ids)
    if rows is not None:
        row_ids = row_ids[:rows]
    if ax is None:
        _, ax = plt.subplots(figsize=(12, 0.45 * len(row_ids) + 1.2))
    conflict = set()
    for start in range(0, 32, per):
        words = collections.defaultdict(set)
        for lane in range(start, start + per):
            a = addresses[lane]
            if a is not None:
                for w in words_of(a, width):
                    words[w % BANKS].add(w)
        for bank, ws in words.items():
            if len(ws) > 1:
                conflict.update((w // BANKS, bank, start) for w in ws)
    cmap = plt.get_cmap("tab10")
    for y, r in enumerate(row_ids):
        for bank in range(BANKS):
            lanes = cells.get((r, bank))
            if not lanes:
                ax.add_patch(plt.Rectangle((bank, y), 1, 1, fc="white", ec="0.85"))
                continue
            phase = lanes[0] // per
            red = any((r, bank, s) in conflict for s in range(0, 32, per))
            ax.add_patch(plt.Rectangle((bank, y), 1, 1, fc=cmap(phase % 10), alpha=0.45,
                                       ec="red" if red else "0.5", lw=2 if red else 0.5))

    by_address = collections.defaultdict(list)  # one label per access, centred on its words
    for lane, a in enumerate(addresses):
        if a is not None:
            by_address[a].append(lane)
    ys = {r: y for y, r in enumerate(row_ids)}
    for a, lanes in by_address.items():
        ws = list(words_of(a, width))
        if ws[0] // BANKS in ys:
            label = lane_label(lanes)
            ax.text(ws[0] % BANKS + len(ws) / 2, ys[ws[0] // BANKS] + 0.5, label, ha="center", va="center",
                    fontsize=10 if len(ws) > 1 or len(label) <= 2 else 7)
    ax.set_xlim(0, BANKS)
    ax.set_ylim(len(row_ids), 0)
    ax.set_xticks(np.arange(BANKS) + 0.5)
    ax.set_xticklabels(range(BANKS), fontsize=9)
    ax.set_yticks(np.arange(len(row_ids)) + 0.5)
    ax.set_yticklabels([f"bytes {128 * r}-{128 * r + 127}" for r in row_ids], fontsize=9)
    ax.set_xlabel("bank (4-byte words; a row of this picture is 128 bytes)")
    head = title or "warp access"
    shown = "" if len(row_ids) == all_rows else f"; first {len(row_ids)} of {all_rows} rows shown"
    ax.set_title(f"{head}: {width}-byte accesses, {len(cost.phases)} phase(s), {cost.wavefronts} wavefronts "
                 f"(ideal {cost.ideal}), worst {cost.degree}-way{shown}", fontsize=10, loc="left")
    coloured = {lanes[0] // per for lanes in cells.values()}  # a word takes the colour of its first lane's phase
    handles = [patches.Patch(fc=cmap(p % 10), alpha=0.45, ec="0.5", label=f"phase {p}: lanes {p * per}-{p * per + per - 1}")
               for p in range(32 // per) if p in coloured]
    hidden = [p for p in range(32 // per) if p not in coloured]
    if hidden:
        handles.append(patches.Patch(fc="none", ec="none", label=(
            "phase" + ("s " if len(hidden) > 1 else " ") + ", ".join(map(str, hidden))
            + ": the same words as an earlier phase\n(in its colour; the label lists every lane)")))
    handles.append(patches.Patch(fc="white", ec="red", lw=2, label="conflict: another word of this bank, same phase"))
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=9, frameon=False,
              title="numbers = lanes", title_fontsize=9)
    return ax




def tile_column_banks(addresses, tile_width, ax=None, title=None):
    """One warp-wide 4-byte read of a shared tile ``tile_width`` floats wide (``addresses``: the 32
    lanes' byte addresses, as the tracer records them): a row per tile row, a column per bank,
    every lane's float labelled with its lane; under the grid, how many lanes each bank serves.
    The largest of those counts is the access's wavefronts (one phase of 32 lanes)."""
    cost = wavefronts(addresses, 4)
    words = {lane: a // 4 for lane, a in enumerate(addresses) if a is not None}
    rows = sorted({w // tile_width for w in words.values()})
    height = max(rows) + 1
    if ax is None:
        _, ax = plt.subplots(figsize=(6.5, 7))
    per_bank = collections.Counter(w % BANKS for w in words.values())
    for y in range(height):
        for bank in range(BANKS):
            ax.add_patch(plt.Rectangle((bank, y), 1, 1, fc="white", ec="0.88", lw=0.5))
    for lane, w in words.items():
        y, bank = w // tile_width, w % BANKS
        red = per_bank[bank] > 1
        ax.add_patch(plt.Rectangle((bank, y), 1, 1, fc="tab:red" if red else "tab:blue", alpha=0.75, ec="white"))
        ax.text(bank + 0.5, y + 0.5, str(lane), ha="center", va="center", fontsize=7.5, color="white")
    ax.axhline(height + 0.25, color="black", lw=0.8)
    for bank in range(BANKS):
        n = per_bank.get(bank, 0)
        ax.text(bank + 0.5, height + 1, str(n), ha="center", va="center", fontsize=7.5,
                color="tab:red" if n > 1 else "black", fontweight="bold" if n > 1 else "normal")
    ax.set_xlim(0, BANKS)
    ax.set_ylim(height + 1.6, 0)
    ax.set_aspect("equal")
    ax.set_xticks(np.arange(0, BANKS, 4) + 0.5, range(0, BANKS, 4), fontsize=8)
    ax.set_yticks(list(np.arange(0, height, 4) + 0.5) + [height + 1],
                  [str(r) for r in range(0, height, 4)] + ["lanes in bank"], fontsize=8)
    ax.set_xlabel("bank", fontsize=9)
    ax.set_ylabel("tile row", fontsize=9)
    ax.tick_params(length=0)
    head = title or f"tile[..][{tile_width}]"
    ax.set_title(f"{head}: {cost.wavefronts} wavefront{'s' if cost.wavefronts > 1 else ''}", fontsize=10)
    return ax


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


def bank_explorer():
    """A small widget: warp shape, access width and padding -> bank map of a B-tile read."""
    import ipywidgets as w  # a notebook-only dependency: imported when the widget is asked for

    shape = w.Dropdown(options=[("2 x 16", (2, 16)), ("4 x 8", (4, 8)), ("8 x 4", (8, 4))],
                       value=(2, 16), description="warp")
    width = w.Dropdown(options=[("LDS.32", 4), ("LDS.64", 8), ("LDS.128", 16)], value=16,
                       description="load")
    along = w.Dropdown(options=[("lanes along columns", "cols"), ("lanes along rows", "rows")],
                       value="cols", description="lanes")
    split = w.Checkbox(value=False, description="split 8 -> 4+4")
    pad = w.IntSlider(value=0, min=0, max=8, description="pad (floats)")
    out = w.Output()

    def draw(*_):
        with out:
            out.clear_output(wait=True)
            addrs = warp_layout_addresses(shape.value, split=split.value, row_floats=128 + pad.value,
                                          lanes_along=along.value, k=1)
            if width.value > 4:  # wide loads need aligned addresses: padding may break that
                addrs = [a if a % width.value == 0 else None for a in addrs]
            bank_map(addrs, width.value, title=f"warp {shape.value[0]}x{shape.value[1]}")
            plt.show()

    for c in (shape, width, along, split, pad):
        c.observe(draw, "value")
    draw()
    return w.VBox([w.HBox([shape, width, along]), w.HBox([split, pad]), out])


# ------------------------------------------------------------------ the primer (00a)
def execution_model(n=1000, threads_per_block=256, ax=None):
    """A 1-D launch: the grid's blocks, each cut into warps of 32 threads; the threads whose
    index cuda.grid(1) is n or more (past the end of the array) are hatched red."""
    blocks = -(-n // threads_per_block)
    warps = threads_per_block // 32
    if ax is None:
        _, ax = plt.subplots(figsize=(10, 2.4))
    for b in range(blocks):
        x0 = b * threads_per_block
        ax.add_patch(patches.Rectangle((x0, 0), threads_per_block, 1.6, fill=False, ec="black", lw=1.5))
        ax.text(x0 + threads_per_block / 2, 1.75, f"block {b}  (blockIdx.x = {b})", ha="center", fontsize=8)
        for w in range(warps):
            wx = x0 + 32 * w
            past = max(0, min(32, wx + 32 - n))  # threads of this warp with index >= n
            ax.add_patch(patches.Rectangle((wx, 0.15), 32 - past, 1.0, fc="tab:blue", alpha=0.35, ec="white"))
            if past:
                ax.add_patch(patches.Rectangle((wx + 32 - past, 0.15), past, 1.0, fc="white", ec="tab:red",
                                               hatch="///", lw=0.8))
            ax.text(wx + 16, 0.65, f"w{w}", ha="center", va="center", fontsize=6)
    ax.axvline(n, color="tab:red", lw=1.5)
    ax.text(n, -0.25, f"n = {n}", color="tab:red", ha="center", va="top", fontsize=8)
    ax.set_xlim(-8, blocks * threads_per_block + 8)
    ax.set_ylim(-0.6, 2.1)
    ax.set_yticks([])
    ax.set_xlabel("global thread index i = blockIdx.x * blockDim.x + threadIdx.x  (= cuda.grid(1))", fontsize=8)
    ax.set_title(f"kernel[{blocks}, {threads_per_block}]: {blocks} blocks x {warps} warps x 32 threads = "
                 f"{blocks * threads_per_block} threads for {n} elements; hatched: "
                 f"{blocks * threads_per_block - n} threads past the end", fontsize=9, loc="left")
    for s in ("top", "right", "left"):
        ax.spines[s].set_visible(False)
    return ax


def memory_hierarchy(levels, ax=None, title=None):
    """The memory hierarchy as stacked boxes, fastest and smallest on top.  ``levels``: list of
    dicts with "name", "scope" (who sees it), "size" and "latency" (short texts)."""
    if ax is None:
        _, ax = plt.subplots(figsize=(11, 0.8 * len(levels) + 0.7))
    colors = ["tab:green", "tab:olive", "tab:orange", "tab:red", "tab:purple"]
    n = len(levels)
    for i, lv in enumerate(levels):
        y = n - 1 - i
        width = 0.55 + 0.43 * i / max(1, n - 1)  # wider = larger and farther from the threads
        x0 = (1 - width) / 2
        ax.add_patch(patches.FancyBboxPatch((x0, y + 0.08), width, 0.84, boxstyle="round,pad=0.005",
                                            fc=colors[i % len(colors)], alpha=0.3, ec="black"))
        ax.text(0.5, y + 0.64, f"{lv['name']}  ({lv['scope']})", ha="center", va="center", fontsize=9,
                weight="bold")
        ax.text(0.5, y + 0.32, f"size: {lv['size']}   |   latency: {lv['latency']}", ha="center",
                va="center", fontsize=8)
    ax.set_xlim(0, 1)
    ax.set_ylim(0, n)
    ax.axis("off")
    ax.set_title(title or "memory hierarchy (top: closest to the threads)", fontsize=9, loc="left")
    return ax


def latency_curve(record, ax=None, plateaus=True):
    """Cycles per dependent load against the working set of the chase (a latency record of
    gemm_lessons.measure.latency), with the L2 size the driver reports.  ``plateaus``: name the
    flat stretches of the curve (L1, L2, DRAM: the working sets ``latency.levels`` picks, and their
    neighbours within 15% of the same latency) with their cycles."""
    from gemm_lessons.measure import latency

    rows = record["global"]
    if ax is None:
        _, ax = plt.subplots(figsize=(8, 3.4))
    x = [r["bytes"] for r in rows]
    y = [r["cycles_per_load"] for r in rows]
    ax.plot(x, y, "o-", color="tab:blue")
    ax.set_xscale("log", base=2)
    ticks = x
    ax.set_xticks(ticks)
    ax.set_xticklabels([_bytes_label(b) for b in ticks], fontsize=7)
    l2 = (record.get("limits") or {}).get("l2_bytes")
    if l2:
        ax.axvline(l2, color="tab:red", ls="--", lw=1)
        ax.text(l2, 0.3 * max(y), f" L2 size = {_bytes_label(l2)} ", color="tab:red", fontsize=8, va="center",
                ha="right")
    if plateaus:
        for name, r in latency.levels(record).items():
            i = rows.index(r)
            lo = hi = i
            while lo > 0 and abs(y[lo - 1] / y[i] - 1) <= 0.15:
                lo -= 1
            while hi < len(y) - 1 and abs(y[hi + 1] / y[i] - 1) <= 0.15:
                hi += 1
            ax.plot([x[lo], x[hi]], [y[i]] * 2, color="black", lw=6, alpha=0.15, solid_capstyle="round")
            ax.text((x[lo] * x[hi]) ** 0.5, y[i] + 0.04 * max(y), f"{name}: {y[i]:.0f} cycles", ha="center",
                    va="bottom", fontsize=9, weight="bold")
    if record.get("shared"):
        ax.axhline(record["shared"]["cycles_per_load"], color="tab:green", ls=":", lw=1)
        ax.text(x[-1], record["shared"]["cycles_per_load"], "shared memory ", color="tab:green", fontsize=8,
                va="bottom", ha="right")
    ax.set_ylim(0, max(y) * 1.2)
    ax.set_xlabel("working set of the chase (one load per 128-byte line)")
    ax.set_ylabel("cycles per dependent load")
    ax.set_title(f"load latency, measured on {record['device']['name']}, {record['date'][:10]}", fontsize=9,
                 loc="left")
    return ax


def _bytes_label(b):
    for unit, n in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if b >= n:
            return f"{b / n:g} {unit}"
    return f"{b} B"


def issue_timeline(latency=4, chains=(1, 4), cycles=16, ax=None, label=None):
    """Issue slots of one warp, cycle by cycle: with one chain of dependent FFMAs a new one can
    start only every ``latency`` cycles; with ``latency`` independent chains one starts every
    cycle.  Schematic: one issue per cycle, a fixed latency, no other instructions."""
    if ax is None:
        _, ax = plt.subplots(figsize=(10, 0.8 * len(chains) + 1.0))
    cmap = plt.get_cmap("tab10")
    for row, c in enumerate(chains):
        y = len(chains) - 1 - row
        ready = [0] * c  # cycle at which each chain's next FFMA may issue
        issued = 0
        for t in range(cycles):
            k = next((j for j in range(c) if ready[j] <= t), None)
            if k is None:
                ax.add_patch(patches.Rectangle((t, y + 0.15), 1, 0.7, fc="0.92", ec="white"))
                continue
            ax.add_patch(patches.Rectangle((t, y + 0.15), 1, 0.7, fc=cmap(k % 10), alpha=0.7, ec="white"))
            ax.text(t + 0.5, y + 0.5, f"c{k}", ha="center", va="center", fontsize=7)
            ready[k] = t + latency
            issued += 1
        ax.text(cycles + 0.3, y + 0.5, f"{issued} FFMA in {cycles} cycles", va="center", fontsize=8)
    ax.set_xlim(0, cycles + 5)  # room on the right for the counts
    ax.set_xticks(range(0, cycles + 1, 2 if cycles <= 24 else 4))
    ax.spines["bottom"].set_bounds(0, cycles)  # the axis ends where the cycles drawn end
    ax.set_ylim(0, len(chains))
    ax.set_yticks([len(chains) - 1 - r + 0.5 for r in range(len(chains))],
                  [f"{c} chain{'s' if c > 1 else ''}" for c in chains])
    ax.set_xlabel("cycle (grey: the warp has nothing independent to issue)")
    ax.set_title(label or f"one warp, FFMA latency {latency} cycles (schematic)", fontsize=9, loc="left")
    for s in ("top", "right"):
        ax.spines[s].set_visible(False)
    return ax


LIMITER_LABELS = {"fp32": "FP32 lanes", "issue": "instruction issue", "shared": "shared-memory wavefronts",
                  "l2": "L2 bytes", "dram": "DRAM bytes", "latency": "latency (Little's law)"}


def limiter_bars(row, ax=None, title=None):
    """The limiter model of one kernel as bars: the time each ceiling allows (a row of
    ``limiter_table.why``: ``ceilings_ms``, ``binding``, ``measured_ms``), the binding one
    coloured, the measured time as a vertical line."""
    names = [n for n in LIMITER_LABELS if n in row.ceilings_ms]
    if ax is None:
        _, ax = plt.subplots(figsize=(8, 0.45 * len(names) + 1.0))
    top = max(max(row.ceilings_ms.values()), row.measured_ms)
    for k, n in enumerate(names):
        ms = row.ceilings_ms[n]
        binding = n == row.binding
        ax.barh(k, ms, color="tab:red" if binding else "0.75", height=0.6)
        label = f"{ms:.3g} ms" + (", binding" if binding else "")
        inside = ms > 0.4 * top  # a long bar carries its label inside, clear of the measured line
        ax.text(ms - 0.01 * top if inside else ms + 0.01 * top, k, label, va="center", ha="right" if inside else "left",
                fontsize=8, weight="bold" if binding else "normal", color="white" if inside and binding else "black")
    ax.axvline(row.measured_ms, color="black", ls="--", lw=1)
    ax.text(row.measured_ms, -0.55, f" measured: {row.measured_ms:.3g} ms", ha="left", va="center", fontsize=8)
    ax.set_yticks(range(len(names)), [LIMITER_LABELS[n] for n in names], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, top * 1.3)
    ax.set_ylim(len(names) - 0.4, -0.9)
    ax.set_xlabel("time the ceiling alone allows, ms (the longest bar binds)")
    ax.set_title(title or f"limiter model: {row.rung}", fontsize=9, loc="left")
    for s in ("top", "right"):
        ax.spines[s].set_visible(False)
    return ax


# ------------------------------------------------------------------ block order (08)
def block_order(tiles_m, tiles_n, group_m, resident, ax=None):
    """The first wave of a launch over the tiles of C: the first ``resident`` blocks in the
    order of their linear index (colour: that order; grey: later blocks; dotted: the groups),
    and left of and above C the block-rows of A and block-columns of B the wave reads (red)."""
    from matplotlib.colors import ListedColormap

    from gemm_lessons.teaching.block_order import launch_order, order_name

    order = launch_order(tiles_m, tiles_n, group_m)[:resident]
    wave = np.full((tiles_m, tiles_n), np.nan)
    for i, (r, c) in enumerate(order):
        wave[r, c] = i
    rows = np.zeros((tiles_m, 1))
    cols = np.zeros((1, tiles_n))
    for r, c in order:
        rows[r, 0] = cols[0, c] = 1
    if ax is None:
        _, ax = plt.subplots(figsize=(5.5, 5.8))
    strip, gap = max(1.0, tiles_n / 16), max(0.5, tiles_n / 64)
    later = plt.get_cmap("viridis").copy()
    later.set_bad("0.9")  # tiles of later blocks
    ax.imshow(np.ma.masked_invalid(wave), cmap=later, extent=(0, tiles_n, tiles_m, 0), interpolation="nearest")
    for r in range(group_m, tiles_m, group_m) if group_m > 1 else ():  # the groups' borders
        ax.plot([0, tiles_n], [r, r], color="black", lw=0.5, ls=":")
    two = ListedColormap(["0.92", "tab:red"])
    ax.imshow(rows, cmap=two, vmin=0, vmax=1, extent=(-gap - strip, -gap, tiles_m, 0), interpolation="nearest")
    ax.imshow(cols, cmap=two, vmin=0, vmax=1, extent=(0, tiles_n, -gap, -gap - strip), interpolation="nearest")
    for x0, y0, w, h in ((0, 0, tiles_n, tiles_m), (-gap - strip, 0, strip, tiles_m), (0, -gap - strip, tiles_n, strip)):
        ax.add_patch(patches.Rectangle((x0, y0), w, h, fill=False, ec="black", lw=0.8))
    ax.set_xlim(-3 * gap - 2 * strip, tiles_n + 0.5)
    ax.set_ylim(tiles_m + 0.5, -3 * gap - 2 * strip)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.text(-2 * gap - strip, tiles_m / 2, "block-rows of A", rotation=90, ha="right", va="center", fontsize=8)
    ax.text(tiles_n / 2, -2 * gap - strip, "block-columns of B", ha="center", va="bottom", fontsize=8)
    ax.set_title(f"{order_name(group_m)}: the first {len(order)} blocks (colour: start order)\n"
                 f"read {int(rows.sum())} block-rows of A + {int(cols.sum())} block-columns of B "
                 f"({tiles_m} x {tiles_n} tiles of C)", fontsize=9)
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
        for x in range(0, width + 1, SECTOR_BYTES // 4):  # sector boundaries along a row
            axis.axvline(x, color="black", lw=0.6)
        axis.set_xlim(0, width)
        axis.set_ylim(height, 0)
        axis.set_aspect("equal")
        axis.set_xticks(range(0, width + 1, 8))
        axis.set_yticks(range(0, height + 1, 4 if height > 10 else 1))
        axis.tick_params(labelsize=7)
        axis.set_xlabel("column", fontsize=8)
        axis.set_ylabel("row", fontsize=8)
        moved = "read" if "read" in name else "written"
        axis.set_title(f"{name}: lanes 0-31 touch {len(fetched)} sectors\n({len(addrs) * 4} bytes {moved}; "
                       f"the sectors hold {len(fetched) * SECTOR_BYTES})", fontsize=9)
    ax[0].figure.text(0.01, 0.02, "blue: the float a lane (number) reads or writes; shaded: the rest of the 32-byte "
                      "sectors the warp touches; black lines: sector boundaries (8 floats)", fontsize=8)
    plt.tight_layout(rect=(0, 0.05, 1, 1))
    return ax
