"""How the work is cut: block, register and warp tiles, the transposed tile, double buffering and
the order blocks run in (lessons 02-08)."""
import matplotlib.pyplot as plt
import matplotlib.patches as patches
import numpy as np


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
