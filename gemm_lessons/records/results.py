"""Recorded results in results/: where every file goes (``path_for``) and reading the records;
and the records of the one-off experiments in experiments/<name>/ (``experiment``,
``experiment_record``).

Without a GPU the notebooks plot these recorded numbers, always labelled with device and date.
In a checkout (or an editable install) the records are the repository's results/ and
experiments/; an installed wheel ships them as package data, found through
``importlib.resources``.
"""
import fnmatch
import glob
import importlib.resources
import os
import pathlib
import re

from gemm_lessons.core.paths import REPO_DIR
from gemm_lessons.records.schema import BankTruth, BenchRecord, ShapesRecord, TuningRecord



def _records_dir(folder, package):
    """The checkout's ``folder`` (results/, experiments/); in an installed wheel, which has no
    checkout, the same files shipped as package data (pyproject.toml maps them to ``package``),
    found through ``importlib.resources``."""
    here = os.path.join(REPO_DIR, folder)
    if os.path.isdir(here):
        return here
    try:
        found = importlib.resources.files(package)
    except ModuleNotFoundError:  # not installed either: the checkout's path, as before
        return here
    if not isinstance(found, pathlib.Path):
        # A namespace package (results/ has no __init__.py) comes back as a MultiplexedPath,
        # which names no one folder: its regular parent package's subfolder does.
        parent, _, leaf = package.rpartition(".")
        found = importlib.resources.files(parent).joinpath(leaf)
    # Kept a plain str path, not a Traversable: many readers call os.path / glob / open on these.
    # A wheel installed on disk gives a real pathlib.Path; anything else (a zip) is no folder.
    return str(found) if isinstance(found, pathlib.Path) and found.is_dir() else here


RESULTS_DIR = _records_dir("results", "gemm_lessons.recorded")
EXPERIMENTS_DIR = _records_dir("experiments", "gemm_lessons.recorded_experiments")

# Every kind of file in results/: {device} is the GPU's slug, {name} a part the kind needs (a
# plot, a run), {suffix} "-" + name when one is given.  The first pattern a file matches is its
# kind, so "bench" comes last.
# The GPU whose records the lessons' prose and committed outputs were rendered from. Records of
# other GPUs sit beside its own (lesson 10 compares them); they are read only when asked for by
# name, so adding one does not change what a lesson shows.
REFERENCE_DEVICE = "NVIDIA H100 80GB HBM3"
# The GPU of the current round's lesson records (the limiter model, power, lesson 05's steps,
# lesson 07's buffers, lesson 08's sweep, lesson 11's shape suite): lessons rendered without a GPU
# read these from this GPU, and REFERENCE_DEVICE's for the records not yet re-run on it.
COURSE_DEVICE = "NVIDIA H200"

PATHS = {
    "tuning": "tuning-{device}.json",  # python -m gemm_lessons.runs.tuning
    "banks": "banks-{device}.json",  # tools/bank_truth.py table
    "ncu-banks": "ncu-banks-{device}.csv",  # ncu ... tools/bank_truth.py run
    "ncu-transpose": "ncu-transpose-{device}.csv",  # ncu ... tools/transpose_profile.py run
    "ncu-roofline": "ncu-roofline-{device}.csv",  # ncu ... tools/roofline_profile.py run
    "ncu-l2order": "ncu-l2order-{device}.csv",  # ncu ... tools/l2order.py run (lesson 08, block order)
    "ncu-lessons": "ncu-lessons-{device}.csv",  # python -m gemm_lessons.instruments.profiler record (lessons 01, 04, 06, 08)
    "sanitizer": "sanitizer-{device}.txt",  # compute-sanitizer ... tools/sanitize.py
    "reproducibility": "reproducibility/{device}{suffix}.json",  # bench runs to compare: "run-a", "run-b"
    "reproducibility-report": "reproducibility/{device}{suffix}.txt",  # tools/compare_runs.py
    "experiment": "experiments/{name}-{device}.json",  # a bench run of a few kernels ("l2order": tools/l2order.py)
    "latency": "latency-{device}.json",  # python -m gemm_lessons.measure.latency (the primer)
    "limiter": "limiter-{device}.json",  # python -m gemm_lessons.runs.limiter measure / predict
    "power": "power-{device}.json",  # python -m gemm_lessons.runs.power: clock and watts, each rung back to back
    "ncu-limiter": "ncu-limiter-{device}.csv",  # ncu ... python -m gemm_lessons.runs.limiter run
    "primer-listing": "primer-listing.json",  # python -m gemm_lessons.teaching.primer_listing (one device)
    "arch-facts": "arch-facts.json",  # python -m gemm_lessons.runs.arch_facts: offline, every compute capability
    "arch-facts-tables": "arch-facts.md",  # ... its tables
    "shapes-quick": "shapes-quick-{device}.json",  # python -m gemm_lessons.runs.shapes --quick
    "shapes": "shapes-{device}.json",  # python -m gemm_lessons.runs.shapes: gl.sgemm vs cuBLAS, dispatch model
    "transpose-suite": "transpose-suite-{device}.json",  # tools/transpose_suite.py: library.transpose vs sgeam
    "plot": "{device}-{name}.png",  # python -m gemm_lessons.runs.bench: "ladder", "sizes", "roofline"
    "bench": "{device}.json",  # python -m gemm_lessons.runs.bench
}
RECORDS = {"bench": BenchRecord, "reproducibility": BenchRecord, "experiment": BenchRecord,
           "tuning": TuningRecord, "banks": BankTruth, "shapes": ShapesRecord,
           "shapes-quick": ShapesRecord}


def slug(device_name):
    return re.sub(r"[^a-z0-9]+", "-", device_name.lower()).strip("-")


def shown_command(record, default=""):
    """The command that made ``record``, a directory given to --out shown as DIR (a path on the
    machine that ran it means nothing to a reader)."""
    return re.sub(r"(--out[ =])\S+", r"\1DIR", record.command or default)


def course_device(kind, name=None, directory=RESULTS_DIR):
    """COURSE_DEVICE when its file of ``kind`` exists, else REFERENCE_DEVICE: whose record the
    lessons read on the simulator."""
    return COURSE_DEVICE if os.path.exists(path_for(kind, COURSE_DEVICE, name, directory=directory)) else REFERENCE_DEVICE


def course_path(kind, name=None, directory=RESULTS_DIR):
    """The file of ``kind`` for course_device (which may not exist)."""
    return path_for(kind, course_device(kind, name, directory), name, directory=directory)


def path_for(kind, device_name, name=None, directory=RESULTS_DIR):
    """The file of ``kind`` (a key of PATHS) for ``device_name``, e.g. path_for("tuning",
    "NVIDIA H100 80GB HBM3") is results/tuning-nvidia-h100-80gb-hbm3.json."""
    if "{name}" in PATHS[kind] and not name:
        raise ValueError(f"a {kind} file needs a name: {PATHS[kind]}")
    return os.path.join(directory, PATHS[kind].format(device=slug(device_name), name=name,
                                                      suffix=f"-{name}" if name else ""))


def _pattern(kind):
    return PATHS[kind].format(device="*", name="*", suffix="*")


def kind_of(path):
    """Which kind of results file ``path`` is, judged by its name (None for none)."""
    path = os.path.abspath(path).replace(os.sep, "/")
    return next((kind for kind in PATHS if fnmatch.fnmatchcase(path, "*/" + _pattern(kind))), None)


def files(kind, directory=RESULTS_DIR):
    """The files of ``kind`` in ``directory``, for every device, sorted."""
    return sorted(p for p in glob.glob(os.path.join(directory, _pattern(kind))) if kind_of(p) == kind)


# The one-off experiments (experiments/<name>/: a probe, the records it wrote, a README saying
# what was tested, found and decided): each one's records, {kind: file name}, with {device} and
# {suffix} as in PATHS.  "probe": the JSON a probe wrote; "ncu": Nsight Compute's CSV of a probe
# run under it ('# call NAME' lines, ncu_record); "log": text kept for people, read by nothing.
EXPERIMENTS = {
    "alloc_pool": {"probe": "alloc-pool-probe-{device}.json"},
    "bigtile": {"probe": "bigtile-probe-{device}.json", "sass": "bigtile-sass-offline.json",  # sass: compiled offline
                "ncu": "ncu-bigtile-{device}.csv"},
    "compile_time": {"log": "compile-time-{device}.txt"},  # {device}: the host that compiled
    "cp_async": {"probe": "cp-async-probe-{device}.json"},
    "dbuf": {"bench": "dbuf-{device}.json"},  # a BenchRecord
    "l2_sources": {"ncu": "ncu-l2-sources-{device}.csv"},
    "latency_probe": {"log": "latency-probe-{device}.txt"},
    "launch": {"probe": "launch-probe-{device}.json"},
    "multistage": {"probe": "multistage-probe-{device}.json", "ncu": "ncu-multistage-{device}.csv"},
    "ncu_vs_cublas": {"ncu": "ncu-vs-cublas-{device}.csv"},
    "reduce_wide": {"probe": "reduce-wide-probe-{device}.json"},
    "reg1d_64x64": {"probe": "reg1d-64x64-probe-{device}.json", "timings": "timings-{device}.json",
                    "ncu": "ncu-reg1d-64x64-{device}.csv"},
    "rewrite": {"probe": "rewrite-{device}.json", "log": "rewrite-{device}.txt"},
    "shape_classes": {"probe": "shape-classes-probe{suffix}-{device}.json",  # run "before": the old padded plan
                      "variants": "shape-variants-probe-{device}.json", "ncu": "ncu-shape-classes-{device}.csv",
                      "ncu_variants": "ncu-variants-{device}.csv", "epilogue": "epilogue-probe-{device}.json",
                      "sass": "sass-loop-offline.json",  # compiled offline for sm_90, no GPU
                      "sass_interior": "sass-loop-interior-offline.json",
                      "padded_parts": "padded-parts-probe-{device}.json", "interior": "interior-probe{suffix}-{device}.json",  # run "grouped": with --grouped
                      "ncu_interior": "ncu-interior-{device}.csv",
                      "log": "interior-probe{suffix}-{device}.log",  # a run stopped before its JSON: its printed output
                      "ncu_grouped": "ncu-grouped{suffix}-{device}.csv",  # run: the shape, e.g. "4096x4096x4096"
                      "near_1000": "near-1000-probe{suffix}-{device}.json",  # run "first": before the changes it led to; "splits": --splits
                      "ncu_near_1000": "ncu-near-1000{suffix}-{device}.csv",
                      "wave_rates": "wave-rates-{device}.json"},  # offline: read from the shape suite's record
    "splitk": {"probe": "splitk-probe{suffix}-{device}.json"},  # run "run1": the first form
    "transpose_anywide": {"suite": "transpose-suite-anywide{suffix}-{device}.json"},  # run "run2"
    "transpose_few_rows": {"suite": "transpose-suite{suffix}-{device}.json",  # run "before", "after", "odd-rows8", "odd-warps"
                           "ncu": "ncu-odd-sides-{device}.csv"},
    "transpose_pairs": {"suite": "transpose-suite{suffix}-{device}.json",  # run "pairs" (the candidates), "after" (the library)
                        "ncu": "ncu-pairs-{device}.csv", "order": "pairs-order{suffix}-{device}.json"},
}


def experiment(name, kind="probe", device=None, run=None, directory=None):
    """The file of experiment ``name``'s record of ``kind`` (a key of EXPERIMENTS[name]) for
    ``device`` (default REFERENCE_DEVICE) and ``run`` (None: the main one):
    experiments/<name>/<file>, or <directory>/<file> when a probe writes elsewhere (on the GPU
    machine), e.g. experiment("launch") is experiments/launch/launch-probe-nvidia-h100-80gb-hbm3.json."""
    pattern = EXPERIMENTS[name][kind]
    return os.path.join(directory or os.path.join(EXPERIMENTS_DIR, name),
                        pattern.format(device=slug(device or REFERENCE_DEVICE), suffix=f"-{run}" if run else ""))


def experiment_record(name, kind="probe", device=None, run=None, directory=None):
    """The JSON record of ``experiment(name, kind, device, run, directory)``, a dict, or None when
    there is none: the one reader of what the probes wrote."""
    import json

    path = experiment(name, kind, device, run, directory)
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def read(path):
    """The record in a results file, as the type its kind has (records.BenchRecord, ...)."""
    return RECORDS[kind_of(path)].read(path)


def save(record, directory=RESULTS_DIR):
    """Write a bench record to results/<device>.json (in ``directory``); returns the path."""
    os.makedirs(directory, exist_ok=True)
    return record.write(path_for("bench", record.device.name, directory=directory))


def available(directory=RESULTS_DIR):
    return files("bench", directory)




def load(device=None, directory=RESULTS_DIR):
    """The recorded bench results for ``device`` (a name or slug); with None, those of
    COURSE_DEVICE, else REFERENCE_DEVICE, or the newest file when neither has one."""
    paths = available(directory)
    for default in (COURSE_DEVICE, REFERENCE_DEVICE):
        if device is None and path_for("bench", default, directory=directory) in paths:
            device = default
    if device is not None:
        paths = [p for p in paths if p == path_for("bench", device, directory=directory)]
    if not paths:
        raise FileNotFoundError(
            f"no recorded results in {directory}" + (f" for {device}" if device else "")
            + ": run `python -m gemm_lessons.runs.bench` on a GPU to make them.")
    return max((BenchRecord.read(p) for p in paths), key=lambda r: r.date)


def load_banks(device=REFERENCE_DEVICE, directory=RESULTS_DIR):
    """The bank-conflict ground truth (ncu against the tracer) of ``device`` (default: the reference
    GPU's; None: the last file)."""
    paths = [path_for("banks", device, directory=directory)] if device else files("banks", directory)
    if not paths or not os.path.exists(paths[-1]):
        raise FileNotFoundError(f"no bank-conflict ground truth in {directory}: see tools/bank_truth.py")
    return BankTruth.read(paths[-1])


def label(record):
    """'NVIDIA H100 80GB HBM3, 2026-11-22' for titles and legends."""
    return f"{record.device.name}, {record.date[:10]}"


def sgemm_rows(record, kernel=None, size=None):
    rows = record.sgemm
    if kernel is not None:
        rows = [r for r in rows if r.kernel == kernel]
    if size is not None:
        rows = [r for r in rows if r.size == tuple(size)]
    return rows


def copy_bandwidth_gbs(record):
    """The roofline's memory ceiling: the best measured copy bandwidth of ``record``, else the
    device's theoretical DRAM bandwidth."""
    return max((r.gbs for r in record.bandwidth or []), default=record.device.memory_bandwidth_gbs)


def ncu_launches(path):
    """The launches of an ``ncu --csv --metrics ...`` file in the order they ran: a list of
    {"kernel": name, metric: value (float, base units)}."""
    with open(path, newline="") as f:
        return parse_ncu_csv(f.read())


def parse_ncu_csv(text):
    """``ncu --csv --metrics ...`` output (text) -> its launches in the order they ran, as
    ncu_launches.  Lines that are not CSV rows (ncu's ==PROF== messages, what the profiled
    program printed) are skipped: every CSV row starts with a double quote."""
    import csv

    launches = {}
    lines = [line for line in text.splitlines(True) if line.startswith('"')]
    for row in csv.DictReader(lines):
        launch = launches.setdefault(int(row["ID"]), {"kernel": row["Kernel Name"]})
        try:
            launch[row["Metric Name"]] = float(row["Metric Value"].replace(",", ""))
        except ValueError:
            launch[row["Metric Name"]] = row["Metric Value"]
    return [launches[i] for i in sorted(launches)]


def ncu_record(path):
    """A recorded profile of a probe that prints '# call NAME' before each profiled call, with a
    '# <probe> run on DEVICE, DATE, commit C, ...' header line first: (header, [call names],
    launches as parse_ncu_csv gives them), or None when ``path`` does not exist."""
    if not os.path.exists(path):
        return None
    with open(path) as f:
        text = f.read()
    lines = text.splitlines()
    header = lines[0][1:].strip() if lines and lines[0].startswith("# ") and not lines[0].startswith("# call ") else ""
    calls = [line[len("# call "):] for line in lines if line.startswith("# call ")]
    return header, calls, parse_ncu_csv(text)


def roofline_counters(device=None, directory=RESULTS_DIR):
    """Rung name -> the profiler's counters at 4096^3 (tools/roofline_profile.py: the rungs in
    ladder order, then cuBLAS, whose kernels are summed), or None when none were recorded."""
    from gemm_lessons.kernels.ladder import SGEMM

    paths = [p for p in files("ncu-roofline", directory)
             if not device or p == path_for("ncu-roofline", device, directory=directory)]
    if not paths:
        return None
    launches = ncu_launches(paths[0])
    names = list(SGEMM)
    out = {name: launch for name, launch in zip(names, launches)}
    rest = launches[len(names):]
    if rest:
        out["cublas"] = {k: sum(l[k] for l in rest) for k in rest[0] if isinstance(rest[0][k], float)}
    return out


def plain_record(kind, device=REFERENCE_DEVICE, directory=RESULTS_DIR):
    """A record of ``kind`` kept as plain JSON in results/ (no record class: the transpose suite)
    for ``device``, a dict, or None when there is none (the experiments' records:
    experiment_record)."""
    import json

    path = path_for(kind, device, directory=directory)
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def transpose_suite(device=REFERENCE_DEVICE, directory=RESULTS_DIR):
    """The recorded transpose suite (tools/transpose_suite.py) of ``device``, a dict, or None."""
    return plain_record("transpose-suite", device, directory)


LARGE_TRANSPOSE_BYTES = 64 * 2**20  # read + written: below this a call's host time rivals the kernel's


def transpose_suite_summary(suite, kernel="library", min_bytes=0):
    """How ``kernel`` stood against sgeam over the suite: geometric means and the lowest shape,
    for single calls and back-to-back, over the shapes where it ran correctly (and that move at
    least ``min_bytes``, read plus written); and the shapes where it was wrong or refused."""
    import math

    rows = [(r["shape"], r["kernels"].get(kernel, {})) for r in suite["rows"]
            if 8 * r["shape"][0] * r["shape"][1] >= min_bytes]
    ran = [(shape, k) for shape, k in rows if k.get("correct")]
    out = {"shapes": len(rows), "ran": len(ran),
           "not_run": [shape for shape, k in rows if not k.get("correct")]}
    for key, name in (("pct_sgeam_single", "single"), ("pct_sgeam", "back_to_back")):
        vals = [(k[key], shape) for shape, k in ran if key in k]
        if vals:
            out[f"geomean_{name}"] = math.exp(sum(math.log(v) for v, _ in vals) / len(vals))
            out[f"min_{name}"] = min(vals)
    return out
