"""Lesson 11's tries at a larger block tile and at cp.async stages, in words: the big-tile table with
its reading, the cp.async probe's log as one line, and the multistage probe's results.
"""

from gemm_lessons.teaching.lesson11.probes import BIGTILE_BASE, bigtile_probe, cp_async_probe, multistage_probe


def bigtile_probe_markdown(probe=None):
    """A table of the big-tile probe: % of cuBLAS back to back per size and tile, with the
    compiler's registers and resident warps per SM, and a generated sentence under it."""
    probe = probe if probe is not None else bigtile_probe()
    if not probe:
        return "No big-tile probe is recorded for this GPU."
    names = list(probe["rows"][0]["kernels"])
    K = probe.get("offline_sm90", {}).get("kernels", {})
    head = (["block tile (config)", "registers", "blocks per SM", "warps per SM"]
            + [f"% of cuBLAS at {r['shape'][0]}^3" for r in probe["rows"]])
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name in names:
        cfg = probe["compiled"][name]["config"]
        k = K.get(name, {})
        cells = [f"{name} (`{cfg}`)"] + [str(k.get(x, "?")) for x in ("registers", "blocks_per_sm", "warps_per_sm")]
        cells += [f"{r['kernels'][name]['pct_cublas']:.1f}%" for r in probe["rows"]]
        lines.append("| " + " | ".join(cells) + " |")
    ok = all(probe["compiled"][n]["correct"] and all(r["kernels"][n]["correct"] for r in probe["rows"])
             for n in names)
    best_other = max(r["kernels"][n]["pct_cublas"] for r in probe["rows"] for n in names if n != BIGTILE_BASE)
    base_low = min(r["kernels"][BIGTILE_BASE]["pct_cublas"] for r in probe["rows"])
    wins = [(r["shape"][0], n) for r in probe["rows"] for n in names
            if n != BIGTILE_BASE and r["kernels"][n]["pct_cublas"] > r["kernels"][BIGTILE_BASE]["pct_cublas"]]
    text = (f"Measured (`experiments/bigtile/bigtile_probe.py`, {probe['device']}, {probe['date'][:10]}, commit {probe['git_commit']}; "
            f"back to back, % of the mean of cuBLAS's medians timed before and after the tiles; registers, blocks and warps per SM "
            f"from an offline sm_90 compile of the same commit). "
            + ("Every tile gave the right product (float64 reference) at every size and on a non-square check. "
               if ok else "NOT every tile gave the right product. ")
            + (f"No larger tile beat 128x128 at any size: the best of them reached {best_other:.1f}% of cuBLAS, "
               f"128x128 never less than {base_low:.1f}%." if not wins else
               "A larger tile beat 128x128 at " + ", ".join(f"{s}^3 ({n})" for s, n in wins) + "."))
    return "\n".join(lines) + "\n\n" + text


def cp_async_probe_line(device=None):
    """experiments/cp_async/'s record, as one line (or a line saying there is none)."""
    probe = cp_async_probe(device)
    if not probe:
        return "No cp.async probe is recorded for this GPU."
    versions = ", ".join(f"{name} {probe['versions'][key]}" for key, name in (("driver", "driver"),
                                                                              ("numba_cuda", "numba-cuda"))
                         if key in probe["versions"])
    head = f"{probe['device']}, {probe['date'][:10]}, commit {probe['git_commit']}" + (f" ({versions})" if versions else "")
    parts = [f"{c['copy']}: {'exact' if c['exact'] else 'WRONG'}" for c in probe["checks"]]
    # the SASS counts as "10 LDGSTS, ..." (glossary: cp.async)
    parts.append("SASS: " + ", ".join(f"{n} `{op}`" for op, n in probe["sass"].items())
                 + " ([cp.async, LDGSTS](GLOSSARY.md#cp-async) says what they are)")
    parts.append(f"cp.async through linked CUDA C: {'works' if probe['works'] else 'FAILED'}")
    return f"`experiments/cp_async/cp_async_probe.py` ({head}): " + "; ".join(parts) + "."



def multistage_probe_sentence(probe=None):
    """What the multistage (cp.async) form of the last rung measured, in a generated sentence."""
    probe = probe if probe is not None else multistage_probe()
    if not probe:
        return "No multistage probe is recorded for this GPU."
    rows = probe["rows"]
    sizes = [r["shape"][0] for r in rows]

    def span(name):
        v = [r["kernels"][name]["pct_cublas"] for r in rows]
        return f"{min(v):.1f}% to {max(v):.1f}%"

    names = list(rows[0]["kernels"])
    ok = not probe["failures"] and all(c["correct"] for c in probe["compiled"].values())
    regs = {c.get("registers") for c in probe["compiled"].values()}
    return (f"Measured (`experiments/multistage/multistage_probe.py`, {probe['device']}, {probe['date'][:10]}, commit {probe['git_commit']}; "
            f"back to back at {sizes[0]}^3 to {sizes[-1]}^3, % of the mean of cuBLAS's medians before and after): "
            + "; ".join(f"{n} {span(n)}" for n in names) + ". "
            + ("Every form gave the right product (float64 reference, a full check at "
               + "x".join(map(str, probe["compiled"][names[0]]["check_shape"])) + " and a sample at each size)"
               if ok else "NOT every form gave the right product")
            + (f"; each compiled to {regs.pop()} registers per thread." if len(regs) == 1 else "."))
