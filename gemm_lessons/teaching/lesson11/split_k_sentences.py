"""Lesson 11, section 3 in words: the split kernels' blocks per SM against the model's, split-K against
the fastest plan without it, the one-launch split-K probe, and the two reductions side by side.
"""

import numpy as np

from gemm_lessons.library import dispatch
from gemm_lessons.teaching.lesson11.kernel_facts import offline_facts
from gemm_lessons.teaching.lesson11.probes import (probe_median, reduce_wide_probe,
                                                   splitk_probe, splitk_probe_facts)
from gemm_lessons.teaching.lesson11.split_k_plans import split_k_best
from gemm_lessons.teaching.lesson11.suite_record import (SKINNY_SHAPE, label, load, recorded_model, row,
                                                         shape_name, tflops)


def split_occupancy_sentence(model, cc="9.0"):
    """Where the model's blocks per SM for the wide kernel's split plans (the unsplit kernel's,
    from its calibration) differ from what the offline compile of the split form reports
    (results/arch-facts.json): one generated sentence."""
    if all(offline_facts(f"wide_split {tiles}", cc) is None for tiles in dispatch.TILES):
        return "No offline compile of the split kernels is recorded, so the model's blocks per SM for them are unchecked."
    differ = []
    for tiles in dispatch.TILES:
        split = offline_facts(f"wide_split {tiles}", cc)
        speed = model.speeds.get(f"wide/{tiles}")
        if split and speed and split["blocks_per_sm"] != speed.blocks_per_sm:
            differ.append(f"{tiles}: {split['blocks_per_sm']} blocks per SM ({split['registers']} registers) where the "
                          f"model counts {speed.blocks_per_sm}")
    head = ("The model counts a split plan's slots with the unsplit kernel's blocks per SM: its calibration times the "
            "unsplit kernel. The wide kernel's split form (`TileConfig(split_k=True)`) is a separate compile. ")
    if not differ:
        return head + f"Compiled offline for sm_{cc.replace('.', '')} (results/arch-facts.json), it fits as many blocks per SM as the unsplit form at every tile size."
    return (head + f"Compiled offline for sm_{cc.replace('.', '')} (results/arch-facts.json), it differs at "
            + "; ".join(differ) + ". For those split plans the figure and the model's estimates count fewer slots than "
            "the split kernel likely has; the model was not corrected for it, and what it changes in the choice was "
            "not measured.")


def split_k_compared(r):
    """The two plans split_k_gain compares at ``r``'s shape, with their times (back to back)."""
    best = split_k_best(r)
    if best is None:
        return ""
    whole, w_ms, split, s_ms = best
    shape = tuple(r.shape)
    return (f"the fastest plan without split-K, {whole}, took {w_ms:.3f} ms ({tflops(shape, w_ms):.1f} TFLOPS); "
            f"the fastest with it, {split}, {s_ms:.3f} ms ({tflops(shape, s_ms):.1f} TFLOPS): {w_ms / s_ms:.2f}x as "
            "fast.")


def split_k_sentence(rec, shape=SKINNY_SHAPE):
    r = row(rec, shape)
    if r is None or split_k_best(r) is None:
        return ""
    text = (f"At {shape_name(shape)} ({label(rec)}, back to back) " + split_k_compared(r)
            + f" gl.sgemm chose {r.plan}")
    if r.pct_cublas_single:
        text += (f", which ran at {r.pct_cublas_single:.0f}% of cuBLAS in single calls and "
                 f"{r.pct_cublas_back_to_back:.0f}% back to back")
    return text + "."


def _longer(ratio):
    return f"{100 * (ratio - 1):.0f}% longer" if ratio >= 1 else f"{100 * (1 - ratio):.0f}% less time"


def splitk_probe_sentence(probe=None):
    """What the one-launch split-K measured against two launches, in a generated sentence."""
    probe = probe if probe is not None else splitk_probe()
    if not probe:
        return "No split-K probe is recorded for this GPU."
    facts = splitk_probe_facts(probe)
    b2b, single, saved = ([f[i] for f in facts.values()] for i in range(3))
    slower = sum(r > 1 for r in b2b)
    chosen = sum(r["chosen"] for r in probe["rows"])
    text = (f"Measured (`tools/splitk_probe.py`, {probe['device']}, {probe['date'][:10]}, commit "
            f"{probe['git_commit']}; {len(facts)} pairs of a shape and a split plan, {chosen} of them the plan "
            f"dispatch chose): back to back, one launch took from {_longer(min(b2b))} to {_longer(max(b2b))} than "
            f"two launches (longer on {slower} of the {len(facts)} pairs); one call at a time, from "
            f"{_longer(min(single))} to {_longer(max(single))}. "
            + ("It gave the same bits as two launches, and the right product, on every pair. " if all(
                f[3] for f in facts.values()) else "It did NOT give the same bits as two launches on every pair. ")
            + f"Host time per call: two launches' minus one launch's, {float(np.median(saved)):.1f} µs (the median over "
            f"the pairs; from {min(saved):.1f} to {max(saved):.1f} µs).")
    regs = probe.get("offline_sm90")
    if regs:
        K = regs["kernels"]
        parts = []
        for tiles in dict.fromkeys(name.split()[0] for name in K):
            one, two = K[f"{tiles} one launch"], K[f"{tiles} two launches"]
            spills = (f", {one['spill_store_bytes']} bytes of spill stores where two launches have "
                      f"{two['spill_store_bytes']}" if one["spill_store_bytes"] != two["spill_store_bytes"] else "")
            parts.append(f"{tiles}: {one['registers']} registers per thread and {one['blocks_per_sm']} blocks per SM "
                         f"against {two['registers']} and {two['blocks_per_sm']}{spills}")
        text += (f" The compiler's counts for the two forms of the kernel (compiled offline for sm_90 at commit "
                 f"{regs['git_commit']}, one launch against two): " + "; ".join(parts) + ".")
    return text


def reduce_wide_sentence(probe=None):
    """The two reductions side by side, back to back, from experiments/reduce_wide/reduce_wide_probe.py's record."""
    probe = probe or reduce_wide_probe()
    if not probe:
        return ""
    header, rows = probe
    parts = []
    for size in (1024, 1000):
        get = lambda call: min(probe_median(rows, size, call, "b2b", w) for w in (1, 2))  # noqa: E731
        parts.append(f"at {size}^3 the product kernel alone took {get('main alone'):.4f} ms, with the one-float "
                     f"reduction after it {get('main+reduce'):.4f} ms, with the 16-byte one {get('main+reduce_wide'):.4f} "
                     f"ms, and cuBLAS {get('cublas'):.4f} ms")
    text = (f"Back to back ({header}; each shape timed in two passes, the faster median of the "
            "two): " + "; ".join(parts) + ".")
    rec = load()
    model = recorded_model(rec) if rec else None
    plan, split = next(((r["plan"], r["split"]) for r in rows if r["size"] == 1024), ("", None))
    if model and split:  # what the one-float reduction's bytes alone would take at the calibration's copy rate
        n, s = 1024, split
        nbytes = 4 * (s + 1) * n * n  # reads the s parts, writes C (beta 0: C is not read)
        added = min(probe_median(rows, n, "main+reduce", "b2b", w) for w in (1, 2)) - min(
            probe_median(rows, n, "main alone", "b2b", w) for w in (1, 2))
        text += (f" At {n}^3 ({plan}) the reduction reads the {s} parts and writes C: {nbytes / 1e6:.1f} MB, "
                 f"{nbytes / (model.bandwidth_gbs * 1e3):.1f} µs at the {model.bandwidth_gbs:,.0f} GB/s the model's "
                 f"calibration measured for copies, while the one-float reduction added {1e3 * added:.1f} µs.")
    return text
