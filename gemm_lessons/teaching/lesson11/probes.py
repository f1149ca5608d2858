"""The records of lesson 11's probes, as the lesson reads them (dicts and rows, no sentences):
tools/launch_probe.py, splitk_probe.py, bigtile_probe.py, multistage_probe.py, cp_async_probe.py and
reduce_wide_probe.py.  Their sentences are in the sections' ``*_sentences`` modules
(``call_overhead_sentences``, ``split_k_sentences``, ``probe_sentences``, ``shape_suite_sentences``).
"""
import os
import re

from gemm_lessons.records import results


def launch_probe(device=None):
    """The record of tools/launch_probe.py for ``device`` (default: the reference GPU), or None."""
    return results.plain_record("launch-probe", device or results.REFERENCE_DEVICE)


def splitk_probe(device=None):
    """The record of tools/splitk_probe.py (split-K in one launch against two) for ``device``."""
    return results.plain_record("splitk-probe", device or results.REFERENCE_DEVICE)


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
    """The record of tools/bigtile_probe.py (larger block tiles against 128x128) for ``device``."""
    return results.plain_record("bigtile-probe", device or results.REFERENCE_DEVICE)


BIGTILE_BASE = "library 128x128"


def cp_async_probe_log(device=None):
    """tools/cp_async_probe.py's recorded output for ``device``: its non-empty lines, stripped (the
    first is its header), or None where it has none."""
    path = results.path_for("experiment-log", device or results.REFERENCE_DEVICE, name="cp-async-probe")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return [line.strip() for line in f if line.strip()]


def multistage_probe(device=None):
    """The record of tools/multistage_probe.py (cp.async stages against 128x128) for ``device``."""
    return results.plain_record("multistage-probe", device or results.REFERENCE_DEVICE)


_PROBE_LINE = re.compile(r"^(\d+) (\S+ \S+ split \d+) (.+?)\s+single ([\d.]+) \(([\d.]+)-([\d.]+)\)\s+"
                         r"b2b ([\d.]+) \(([\d.]+)-([\d.]+)\)\s*$")


def reduce_wide_probe(device=None):
    """tools/reduce_wide_probe.py's recorded output: (its header, [{size, plan, call, pass, single,
    b2b}]) with (median, p10, p90) in ms, ``pass`` 1 or 2 (each size ran twice), or None."""
    path = results.path_for("reduce-wide-probe", device or results.REFERENCE_DEVICE)
    if not os.path.exists(path):
        return None
    with open(path) as f:
        lines = f.readlines()
    header, rows, seen = [], [], {}
    for line in lines:
        if line.startswith("#"):
            header.append(line[1:].strip())
            continue
        m = _PROBE_LINE.match(line.strip())
        if m:
            size, plan, call = int(m.group(1)), m.group(2), m.group(3).strip()
            seen[size, call] = seen.get((size, call), 0) + 1
            rows.append({"size": size, "plan": plan, "call": call, "pass": seen[size, call],
                         "single": tuple(float(m.group(i)) for i in (4, 5, 6)),
                         "b2b": tuple(float(m.group(i)) for i in (7, 8, 9))})
    return " ".join(header), rows


def probe_median(rows, size, call, kind, which=1):
    """The median (ms) of ``call`` at ``size`` in pass ``which`` of reduce_wide_probe's ``rows``;
    ``kind`` "single" or "b2b"."""
    return next(r[kind][0] for r in rows if r["size"] == size and r["call"] == call and r["pass"] == which)


def reduce_wide_source(header):
    """"`tools/reduce_wide_probe.py`, <device>, <date>, commit <sha>" from the record's header."""
    m = re.search(r"on (.+?), (\d{4}-\d\d-\d\d)[^,]*, commit (\w+)", header)
    return f"`tools/reduce_wide_probe.py`, {m.group(1)}, {m.group(2)}, commit {m.group(3)}" if m else header
