"""Lesson 11, section 3 (split-K): a diagram of split-K, how a plan's blocks fill the GPU in waves
(numbers and a figure), and the fastest plans with and without split-K where every plan was timed.
The lesson writes the section's sentences.
"""
import numpy as np


def split_k_diagram(splits=4, ax=None):
    """A (M x K) cut into ``splits`` column chunks, B into as many row chunks, each pair a partial
    product in the workspace, the parts added into C."""
    import matplotlib.pyplot as plt
    import matplotlib.patches as patches

    if ax is None:
        _, ax = plt.subplots(figsize=(11, 3.2))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    M, K, N = 1.0, 8.0, 3.0  # drawing units: a short, wide A; a tall, narrow B; a small C
    w = K / splits
    for z in range(splits):
        c = colors[z % len(colors)]
        ax.add_patch(patches.Rectangle((z * w, 0), w, M, fc=c, alpha=0.45, ec="black"))
        ax.add_patch(patches.Rectangle((K + 1.0, -z * w * 0.35 - 0.2), N, w * 0.35, fc=c, alpha=0.45, ec="black"))
        ax.add_patch(patches.Rectangle((K + 2.0 + N + 0.2 * z, 0.15 * z), N, M, fc=c, alpha=0.45, ec="black"))
        ax.text(z * w + w / 2, M / 2, f"k chunk {z}", ha="center", va="center", fontsize=8)
    ax.text(K / 2, M + 0.25, "A (M x K): part z reads columns z*k_chunk ...", ha="center", fontsize=8)
    ax.text(K + 1.0 + N / 2, 0.62, "B (K x N): ... and the same rows", ha="center", fontsize=8)
    ax.text(K + 2.0 + N / 2 + 0.3, M + 0.15 * splits + 0.2, f"workspace: {splits} partial C's", ha="center", fontsize=8)
    x0 = K + 4.6 + 2 * N
    ax.annotate("", (x0, M / 2), (x0 - 0.9, M / 2), arrowprops=dict(arrowstyle="->"))
    ax.add_patch(patches.Rectangle((x0 + 0.1, 0), N, M, fc="lightgrey", ec="black"))
    ax.text(x0 + 0.1 + N / 2, M / 2, "C = alpha * sum\n+ beta * C", ha="center", va="center", fontsize=8)
    ax.text(x0 - 0.45, M / 2 - 0.2, "reduction\nkernel", ha="center", va="top", fontsize=7)
    ax.set_xlim(-0.2, x0 + N + 0.4)
    ax.set_ylim(-w * 0.35 * splits - 0.4, M + 0.15 * splits + 0.5)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title(f"split-K with {splits} parts: {splits}x the blocks, each with 1/{splits} of the k-loop, "
                 "then one more kernel", fontsize=9)
    return ax


def waves(shape, plan, model):
    """How ``plan`` fills the GPU at ``shape`` under ``model``: blocks, block slots (resident
    blocks per SM x SMs), waves, and the share of the slots the last wave uses."""
    M, N, K = shape
    gx, gy, split = plan.grid(M, N)
    blocks = gx * gy * split
    bps = model.speed(plan).blocks_per_sm
    slots = bps * model.sms
    n = -(-blocks // slots)
    return {"plan": str(plan), "blocks": blocks, "blocks_per_sm": bps, "slots": slots, "waves": n,
            "last_wave": (blocks - (n - 1) * slots) / slots, "k_per_block": plan.k_chunk(K)}


def waves_figure(shape, plans, model, ax=None):
    """For each plan, one strip per resident block slot over the SMs: how the first wave fills
    the GPU (blocks handed out one per SM first: an assumption, the hardware's order is not
    documented)."""
    import matplotlib.pyplot as plt

    if ax is None:
        rows = sum(model.speed(p).blocks_per_sm for p in plans)
        _, ax = plt.subplots(len(plans), 1, figsize=(11, 0.3 * rows + 0.7 * len(plans)),
                             gridspec_kw={"height_ratios": [model.speed(p).blocks_per_sm for p in plans]})
    ax = np.atleast_1d(ax)
    for axis, plan in zip(ax, plans):
        w = waves(shape, plan, model)
        grid = np.zeros((w["blocks_per_sm"], model.sms))
        first = min(w["blocks"], w["slots"])
        for b in range(first):
            grid[b // model.sms, b % model.sms] = 1
        axis.imshow(grid, aspect="auto", cmap="Blues", vmin=0, vmax=1.3, interpolation="nearest")
        axis.set_yticks(range(w["blocks_per_sm"]), [f"slot {i}" for i in range(w["blocks_per_sm"])], fontsize=6)
        axis.set_xticks([0, model.sms - 1], ["SM 0", f"SM {model.sms - 1}"], fontsize=6)
        busy = first / w["slots"]
        ragged = plan.split > 1 and w["k_per_block"] * plan.split != shape[2]  # the last layer sums the rest of K
        each = f"{w['k_per_block']} k each" + (f" (the last layer {shape[2] - (plan.split - 1) * w['k_per_block']})"
                                                if ragged else "")
        axis.set_title(f"{plan}: {w['blocks']} blocks of {each} for {w['slots']} slots "
                       f"({w['blocks_per_sm']} per SM x {model.sms} SMs): {w['waves']} wave(s), the first "
                       f"{100 * busy:.0f}% busy", fontsize=8, loc="left")
    plt.tight_layout()
    return ax


def split_k_gain(r):
    """How many times as fast as the fastest plan without split-K the fastest split-K plan ran
    (ShapeRow with plans_ms), or nan."""
    timed = {p: ms for p, ms in (r.plans_ms or {}).items() if isinstance(ms, float)}
    split = [ms for p, ms in timed.items() if " split " in p]
    whole = [ms for p, ms in timed.items() if " split " not in p]
    return min(whole) / min(split) if split and whole else float("nan")
