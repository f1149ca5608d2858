"""The machine: the execution model, the memory hierarchy, the latency curve, issue, and the
limiter model's ceilings (the primer, lessons 00, 10)."""
import matplotlib.pyplot as plt
import matplotlib.patches as patches


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
