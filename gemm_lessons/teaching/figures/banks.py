"""Shared-memory banks: which lane reads which bank, the wavefronts it costs (lessons 05, 06, 09),
and the interactive explorer."""
import collections

import matplotlib.pyplot as plt
import matplotlib.patches as patches
import numpy as np

from gemm_lessons.instruments.bank_model import BANKS, PHASE_LANES, wavefronts, warp_layout_addresses, words_of


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
