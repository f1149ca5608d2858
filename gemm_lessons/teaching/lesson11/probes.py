"""The records of lesson 11's probes, as the lesson reads them (dicts and rows, no sentences):
tools/launch_probe.py, splitk_probe.py, bigtile_probe.py, multistage_probe.py, cp_async_probe.py and
reduce_wide_probe.py.  The lessons write the sentences.
"""

from gemm_lessons.records import results


def launch_probe(device=None):
    """The record of experiments/launch/launch_probe.py for ``device`` (default: the reference GPU), or None."""
    return results.experiment_record("launch", device=device)


def alloc_pool_probe(device="NVIDIA H200"):
    """The record of experiments/alloc_pool/alloc_probe.py (gl.sgemm(A, B) with numba's allocator
    and with the driver's stream-ordered pool, in one run) for ``device``, or None."""
    return results.experiment_record("alloc_pool", device=device)


def splitk_probe(device=None):
    """The record of tools/splitk_probe.py at commit 1fc2bd8 (split-K in one launch against two;
    experiments/splitk/) for ``device``."""
    return results.experiment_record("splitk", device=device)


def splitk_probe_facts(probe):
    """{(shape, plan): (back-to-back ratio, single-call ratio, host µs saved, same bits)}: one
    launch's time over two launches' for each pair the probe timed."""
    out = {}
    for r in probe["rows"]:
        two, one = r["forms"]["two launches"], r["forms"]["one launch"]
        out[tuple(r["shape"]), r["plan"]] = (
            one["back_to_back"]["median_ms"] / two["back_to_back"]["median_ms"],
            one["single"]["median_ms"] / two["single"]["median_ms"],
            two["issue_us"] - one["issue_us"], one["same_bits_as_two_launches"] and one["correct"])
    return out


def bigtile_probe(device=None):
    """The record of experiments/bigtile/bigtile_probe.py (larger block tiles against 128x128) for ``device``."""
    return results.experiment_record("bigtile", device=device)


BIGTILE_BASE = "library 128x128"


def cp_async_probe(device=None):
    """The record of experiments/cp_async/cp_async_probe.py for ``device``, or None."""
    return results.experiment_record("cp_async", device=device)


def multistage_probe(device=None):
    """The record of experiments/multistage/multistage_probe.py (cp.async stages against 128x128) for ``device``."""
    return results.experiment_record("multistage", device=device)


def reduce_wide_probe(device=None):
    """experiments/reduce_wide/'s record: (where it comes from: "`<probe>`, <device>, <date>, commit
    <sha>", [{size, plan, split, call, pass, single, b2b}]) with (median, p10, p90) in ms, ``pass``
    1 or 2 (each size ran twice), or None."""
    probe = results.experiment_record("reduce_wide", device=device)
    if not probe:
        return None
    source = (f"`experiments/reduce_wide/reduce_wide_probe.py`, {probe['device']}, {probe['date'][:10]}, "
              f"commit {probe['git_commit']}")
    times = ("median_ms", "p10_ms", "p90_ms")
    rows = [{**{k: r[k] for k in ("size", "plan", "split", "call", "pass")},
             "single": tuple(r["single"][t] for t in times), "b2b": tuple(r["back_to_back"][t] for t in times)}
            for r in probe["rows"]]
    return source, rows


def probe_median(rows, size, call, kind, which=1):
    """The median (ms) of ``call`` at ``size`` in pass ``which`` of reduce_wide_probe's ``rows``;
    ``kind`` "single" or "b2b"."""
    return next(r[kind][0] for r in rows if r["size"] == size and r["call"] == call and r["pass"] == which)
