"""Small explanatory figures (the "Idea" step of each lesson), drawn from the same index
arithmetic the kernels use, and the pictures of what the instruments find (bank maps)."""
import collections

import matplotlib.pyplot as plt
import matplotlib.patches as patches
import numpy as np

from gemm_lessons.instruments.bank_model import BANKS, PHASE_LANES, wavefronts, warp_layout_addresses, words_of

SECTOR_BYTES = 32


def sectors(byte_addresses):
    """Distinct 32-byte sectors touched by one warp-wide access (the unit DRAM and L2 serve)."""
    return len({a // SECTOR_BYTES for a in byte_addresses})


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


def warp_access(coalesced=True, K=64, N=64, ax=None):
    """One warp, one k-step: which floats of A and B it reads, and how many 32-byte sectors."""
    a, b = naive_warp_addresses(coalesced, K, N)
    if ax is None:
        _, ax = plt.subplots(2, 1, figsize=(10, 2.6))
    for axis, addrs, name, ld in ((ax[0], a, "A", K), (ax[1], b, "B", N)):
        floats = sorted({x // 4 for x in addrs})
        lo = (floats[0] // 8) * 8
        hi = max(lo + 64, ((floats[-1] // 8) + 1) * 8)  # every float the warp reads, however far apart
        axis.set_xlim(lo, hi)
        axis.set_ylim(0, 1)
        wide = hi - lo > 320  # too many sectors to outline: draw only the fetched ones
        for s in range(lo, hi, 8):
            touched = any(s <= f < s + 8 for f in floats)
            if touched or not wide:
                axis.add_patch(patches.Rectangle((s, 0), 8, 1, fill=touched, alpha=0.6 if wide else 0.3,
                                                 ec="tab:orange" if wide else "black", fc="tab:orange"))
        for f in floats:
            if lo <= f < hi:
                axis.add_patch(patches.Rectangle((f, 0.2), 1, 0.6, color="tab:blue"))
        axis.set_yticks([])
        n, sec = len(floats), sectors(addrs)
        axis.set_title(f"{name}: {n} distinct float{'s' if n > 1 else ''} in {sec} sector{'s' if sec > 1 else ''} "
                       f"of 32 bytes (rows of {ld} floats; shaded = sectors fetched)", fontsize=9, loc="left")
        axis.set_xlabel("float index in memory (row-major)", fontsize=8)
    plt.tight_layout()
    return ax


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
    sits at (l // LN, l % LN) of an LM x LN grid, repeated TM/4 x TN/4 times across the warp tile."""
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
                if p == 0 and q == 0:
                    ax.text(x + 2, y + 2, str(lane), ha="center", va="center", fontsize=5)
    ax.set_xlim(0, BN)
    ax.set_ylim(BM, 0)
    ax.set_aspect("equal")
    ax.set_title(f"{BM}x{BN} block, {WM}x{WN} warp tiles ({LM}x{LN} lanes), {TM}x{TN} per thread", fontsize=9)
    ax.set_xlabel("column of the C tile")
    ax.set_ylabel("row")
    return ax


# ------------------------------------------------------------------ shared-memory banks
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
            label = ",".join(str(l) for l in lanes[:3]) + ("…" if len(lanes) > 3 else "")
            ax.text(ws[0] % BANKS + len(ws) / 2, ys[ws[0] // BANKS] + 0.5, label, ha="center", va="center",
                    fontsize=9 if len(ws) > 1 or len(label) <= 2 else 7)
    ax.set_xlim(0, BANKS)
    ax.set_ylim(len(row_ids), 0)
    ax.set_xticks(np.arange(BANKS) + 0.5)
    ax.set_xticklabels(range(BANKS), fontsize=8)
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


def latency_curve(record, ax=None):
    """Cycles per dependent load against the working set of the chase (a latency record of
    gemm_lessons.measure.latency), with the L2 size the driver reports."""
    rows = record["global"]
    if ax is None:
        _, ax = plt.subplots(figsize=(8, 3.2))
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
        ax.text(l2, 0.5 * max(y), f" L2 = {_bytes_label(l2)} ", color="tab:red", fontsize=8, va="center",
                ha="right")
    if record.get("shared"):
        ax.axhline(record["shared"]["cycles_per_load"], color="tab:green", ls=":", lw=1)
        ax.text(x[-1], record["shared"]["cycles_per_load"], "shared memory ", color="tab:green", fontsize=8,
                va="bottom", ha="right")
    ax.set_ylim(0, max(y) * 1.15)
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
    ax.set_xlim(0, cycles + 5)
    ax.set_ylim(0, len(chains))
    ax.set_yticks([len(chains) - 1 - r + 0.5 for r in range(len(chains))],
                  [f"{c} chain{'s' if c > 1 else ''}" for c in chains])
    ax.set_xlabel("cycle (grey: the warp has nothing independent to issue)")
    ax.set_title(label or f"one warp, FFMA latency {latency} cycles (schematic)", fontsize=9, loc="left")
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
