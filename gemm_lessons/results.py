"""Recorded benchmark results: results/<device>.json, written by ``python -m gemm_lessons.bench``.

Without a GPU the notebooks plot these recorded numbers, always labelled with device and date.
"""
import glob
import json
import os
import re

RESULTS_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "results")


def slug(device_name):
    return re.sub(r"[^a-z0-9]+", "-", device_name.lower()).strip("-")


def path_for(device_name, directory=RESULTS_DIR):
    return os.path.join(directory, slug(device_name) + ".json")


def save(record, directory=RESULTS_DIR):
    os.makedirs(directory, exist_ok=True)
    path = path_for(record["device"]["name"], directory)
    with open(path, "w") as f:
        json.dump(record, f, indent=1, sort_keys=True)
        f.write("\n")
    return path


def available(directory=RESULTS_DIR):
    return sorted(glob.glob(os.path.join(directory, "*.json")))


def load(device=None, directory=RESULTS_DIR):
    """The recorded results for ``device`` (a name or slug), or the newest file if None."""
    files = available(directory)
    if device is not None:
        files = [f for f in files if os.path.basename(f) == slug(device) + ".json"]
    records = []
    for f in files:
        with open(f) as fh:
            rec = json.load(fh)
        if "sgemm" in rec:
            records.append(rec)
    if not records:
        raise FileNotFoundError(
            f"no recorded results in {directory}" + (f" for {device}" if device else "")
            + ": run `python -m gemm_lessons.bench` on a GPU to make them.")
    return max(records, key=lambda r: r["date"])


def label(record):
    """'NVIDIA H100 80GB HBM3, 2026-11-22' for titles and legends."""
    return f"{record['device']['name']}, {record['date'][:10]}"


def sgemm_rows(record, kernel=None, size=None):
    rows = record["sgemm"]
    if kernel is not None:
        rows = [r for r in rows if r["kernel"] == kernel]
    if size is not None:
        M, N, K = size
        rows = [r for r in rows if (r["M"], r["N"], r["K"]) == (M, N, K)]
    return rows


def sgemm_gflops(record, kernel, size):
    rows = sgemm_rows(record, kernel, size)
    return rows[0]["gflops"] if rows else None
