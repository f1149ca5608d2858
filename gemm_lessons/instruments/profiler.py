"""The profiler inside the lesson: Nsight Compute's counters of your kernel, as a small table.

    gl.profile({"naive": functools.partial(naive.sgemm, kernel=sgemm_naive)}, lesson="01")

takes what ``measure.compare`` takes (name -> a launch ``f(A, B, C)``, or a ladder rung's name)
and shows the few counters the lesson is about: achieved occupancy, DRAM and L2 traffic,
shared-memory wavefronts and bank conflicts, the top warp stall reasons.

* **On a GPU with Nsight Compute**, the launches run once each in a child Python process under
  ``ncu --clock-control none`` (ncu profiles a whole process, and clocks stay as they are). The
  kernels travel to the child pickled by value (cloudpickle, as numba pickles kernels, plus the
  ``tile``/``config`` attributes the course's launchers read) and compile there again, with
  the same options (``max_registers``...).
* **Without a GPU**, and where ``ncu`` is missing or may not read the counters
  (ERR_NVGPUCTRPERM, with a message saying what to do), the table shows counters recorded on a
  GPU, labelled with the device and date: ``results/ncu-lessons-<device>.csv``, written by
  ``python -m gemm_lessons.instruments.profiler record`` (``tools/gpu_run.sh profiler``); where that file
  does not exist yet, lesson 10's roofline profile (``results/ncu-roofline-<device>.csv``).

The metrics, the stall reasons and the tables' rows are in ``ncu_metrics``; the lessons write
their readings of the counters in their own cells.
"""
import argparse
import functools
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field

from gemm_lessons.core.paths import REPO_DIR
from gemm_lessons.core import backend, tables
from gemm_lessons.instruments.ncu_metrics import (ALL_ROWS, LESSON_CASES, LESSON_ROWS, ROWS, STALL_REASONS,
                                                  STALL_ROWS, STALLS, limited_by, metrics_for, top_stalls)
from gemm_lessons.records import results

DEFAULT_SIZE = (4096, 4096, 4096)
TIMEOUT_S = 600
CHILD_LINE = "# gemm-lessons profiler child: "  # what the child prints when its launches are done
HEADER_LINE = "# gemm-lessons profiler: "  # the first line of a recorded file: device, date, cases
LAUNCH_ATTRIBUTES = ("tile", "config")  # attributes of a kernel that the course's launchers read
ROOFLINE_SIZE = (4096, 4096, 4096)  # tools/roofline_profile.py's SIZE


def _rows_of(lesson):
    if lesson is None:
        return ALL_ROWS
    if lesson not in LESSON_ROWS:
        raise ValueError(f"lesson={lesson!r}: the profiler knows lessons {', '.join(LESSON_ROWS)} "
                         "(or None: every counter)")
    return LESSON_ROWS[lesson]


def _plain(label):
    """A markdown label without its links, for the console."""
    return re.sub(r"\[([^\]]+)\]\([^)]*\)", r"\1", label)


# --- the table ------------------------------------------------------------------------------
@dataclass
class Profile:
    """Nsight Compute's counters of some kernels, one column per kernel.  ``counters[name]`` is
    every metric collected for it (None: nothing recorded for that name)."""
    size: tuple
    rows: tuple
    counters: dict
    source: str  # "measured now on ..." or "recorded on ..."
    note: str = None  # why the counters are recorded ones although this is a GPU
    kernels: dict = field(default_factory=dict)  # name -> the kernel name ncu reported

    def value(self, name, row):
        """The number behind one cell (None where not collected or not recorded)."""
        c = self.counters.get(name)
        return None if c is None else ROWS[row].value(c)

    def top_stalls(self, name, n=STALL_ROWS):
        """top_stalls of the counters of ``name``."""
        return top_stalls(self.counters.get(name) or {}, n)

    def _cell(self, name, row):
        c = self.counters.get(name)
        if c is None:
            return "not recorded"
        v = ROWS[row].value(c)
        if v is None:
            return "n/a"
        if row == "blocks_per_sm":
            return f"{v:.0f} ({', '.join(limited_by(c))})"
        return ROWS[row].fmt(v)

    def _body(self):
        names = list(self.counters)
        body = []
        for key in self.rows:
            if key != STALLS:
                body.append([ROWS[key].label] + [self._cell(n, key) for n in names])
                continue
            for i in range(STALL_ROWS):
                body.append([f"[stall reason](GLOSSARY.md#stall-reasons) {i + 1}"]
                            + [self._stall_cell(n, i) for n in names])
        return ["counter"] + names, body

    def _stall_cell(self, name, i):
        if self.counters.get(name) is None:
            return "not recorded"
        tops = self.top_stalls(name)
        if i >= len(tops):
            return "n/a"
        reason, pct = tops[i]
        return f"{reason.replace('_', ' ')} {pct:.0f}%"

    def _stall_legend(self):
        seen = sorted({r for n in self.counters for r, _ in self.top_stalls(n)})
        return [f"**{r.replace('_', ' ')}**: {STALL_REASONS.get(r, 'see the Profiling Guide')}" for r in seen]

    def _blanks(self, body):
        """What the table's empty cells mean, for those it has."""
        cells = {c for row in body for c in row[1:]}
        out = []
        if "n/a" in cells:
            out.append("n/a: not collected (not in the recorded file, or no such counter on this GPU) or, for a stall "
                       "reason, fewer reasons above 0%")
        if "not recorded" in cells:
            out.append("not recorded: no counters of a kernel of that name in the file")
        return out

    def _title(self):
        M, N, K = self.size
        return f"Nsight Compute counters, SGEMM {M}x{N}x{K}"

    def _repr_markdown_(self):
        head, body = self._body()
        parts = []
        if self.note:
            parts.append(f"**Not profiled here.** {self.note}")
        parts.append(f"**{self._title()}**: {self.source}.")
        parts.append(tables.markdown(head, body, "l" + "r" * (len(head) - 1)))
        legend = self._stall_legend()
        if legend:
            parts.append("Stall reasons, as % of the cycles the warps were resident (active): "
                         + "; ".join(legend) + ". More in the [glossary](GLOSSARY.md#stall-reasons).")
        if self._blanks(body):
            parts.append("; ".join(self._blanks(body)) + ".")
        return "\n\n".join(parts)

    def __repr__(self):
        head, body = self._body()
        text = tables.text(head, [[_plain(c) for c in row] for row in body], "l" + "r" * (len(head) - 1))
        lines = ([f"Not profiled here. {self.note}"] if self.note else []) + [f"{self._title()}: {self.source}.", text]
        lines += [_plain(s).replace("**", "") for s in self._stall_legend()] + self._blanks(body)
        return "\n".join(lines)


# --- running ncu ----------------------------------------------------------------------------
class ProfilerUnavailable(Exception):
    """ncu cannot profile here; the message says what to do (the table then shows recorded counters)."""


NCU_MISSING = ("Nsight Compute's command line, `ncu`, was not found. It comes with the CUDA toolkit and from "
               "https://developer.nvidia.com/nsight-compute: put the directory that holds `ncu` on PATH (or set "
               "GEMM_LESSONS_NCU=/path/to/ncu) and run this cell again.")
NOT_PERMITTED = ("This machine does not let you read the GPU's performance counters (ERR_NVGPUCTRPERM: by default "
                 "only administrators may). An administrator can allow it for all users, as "
                 "https://developer.nvidia.com/ERR_NVGPUCTRPERM explains; or run the notebook where profiling is "
                 "permitted.")
UNKNOWN_METRICS = re.compile(r"Failed to access the following \d+ metrics?: ([^\n]+)")


def ncu_path():
    """The ncu to run: $GEMM_LESSONS_NCU, else ncu on PATH (None when there is none)."""
    return os.environ.get("GEMM_LESSONS_NCU") or shutil.which("ncu")


def ncu_version(ncu):
    try:
        out = subprocess.run([ncu, "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    lines = [line.strip() for line in out.splitlines() if line.strip()]
    return lines[-1] if lines else None


def _rung(name):
    from gemm_lessons.kernels import ladder

    rungs = {**ladder.SGEMM, **ladder.VARIANTS}
    if name not in rungs:
        raise ValueError(f"{name!r} is not a rung of the ladder: {', '.join(rungs)}")
    return rungs[name]


def _kernel_of(launch):
    """The numba kernel a launch runs, where it can be seen: a rung's name or Rung, or a
    functools.partial(launcher, kernel=...) as the lessons write them."""
    if isinstance(launch, str):
        launch = _rung(launch)
    kernel = getattr(launch, "kernel", None)
    if kernel is None and isinstance(launch, functools.partial):
        kernel = launch.keywords.get("kernel")
    return kernel


def _kernel_names(cases):
    """The Python names of the cases' kernels (they appear in ncu's kernel names), or None when
    one cannot be seen: then every kernel the child launches is profiled."""
    names = []
    for launch in cases.values():
        fn = getattr(_kernel_of(launch), "py_func", None)
        if fn is None:
            return None
        names.append(fn.__name__)
    return names


def _rebuild_kernel(py_func, targetoptions, attributes):
    """In the child: the kernel as cuda.jit made it (same options), with its launch attributes."""
    from numba.cuda.dispatcher import CUDADispatcher

    kernel = CUDADispatcher._rebuild(py_func, targetoptions)
    for name, value in attributes.items():
        setattr(kernel, name, value)
    return kernel


def dumps(obj):
    """Pickle launches for the child: functions by value where they are not importable (a
    notebook's cells), numba kernels as their Python function and jit options (as numba pickles
    them) plus the attributes the launchers read (kernel.tile, kernel.config).  The checks of
    exercises rebuild a kernel from its source and constants instead (exercises._kernel_spec),
    which drops jit options such as max_registers: here they decide the counters."""
    import io

    from numba.cuda.dispatcher import CUDADispatcher
    from numba.cuda.serialize import NumbaPickler

    from gemm_lessons.instruments.profiler import _rebuild_kernel as rebuild  # importable by name, also under -m

    class KernelPickler(NumbaPickler):
        def reducer_override(self, obj):
            if isinstance(obj, CUDADispatcher):
                attributes = {a: getattr(obj, a) for a in LAUNCH_ATTRIBUTES if hasattr(obj, a)}
                return rebuild, (obj.py_func, obj.targetoptions, attributes)
            return super().reducer_override(obj)

    buf = io.BytesIO()
    KernelPickler(buf).dump(obj)
    return buf.getvalue()


def _cases(launches):
    if isinstance(launches, str) or callable(launches):
        launches = {launches if isinstance(launches, str) else _name_of(launches): launches}
    for name, launch in launches.items():
        if isinstance(launch, str):
            _rung(launch)  # raises for an unknown name
        elif not callable(launch):
            raise TypeError(f"{name}: expected a launch f(A, B, C) or a rung's name, got {type(launch).__name__}")
    return dict(launches)


def _name_of(launch):
    """A column name for a single launch: a rung's name, else its kernel's or its own."""
    if getattr(launch, "name", None):
        return launch.name
    return getattr(getattr(_kernel_of(launch), "py_func", None) or launch, "__name__", "kernel")


def _ncu_command(ncu, metrics, names, count, job):
    cmd = [ncu, "--clock-control", "none", "--csv", "--print-units", "base", "--metrics", ",".join(metrics)]
    if names:  # only the cases' kernels: their Python names are in ncu's (demangled) kernel names
        cmd += ["--kernel-name-base", "demangled", "--kernel-name", "regex:.*(" + "|".join(sorted(set(names))) + ").*"]
    cmd += ["--launch-count", str(count), sys.executable, "-m", "gemm_lessons.instruments.profiler", "child", job]
    return cmd


def _child_env():
    """The child imports this gemm_lessons, the one whose kernels and launchers were pickled."""
    here = REPO_DIR
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and p != here]
    return {**os.environ, "PYTHONPATH": os.pathsep.join([here] + paths)}


def run_ncu(cases, size, metrics, timeout=TIMEOUT_S):
    """Profile ``cases`` (name -> launch or rung name) in a child process under ncu.  Returns
    (launches: one dict of counters per case, in order, metrics ncu does not know, ncu's standard
    output: its CSV and messages).
    Raises ProfilerUnavailable when ncu is missing or not permitted, RuntimeError when the run
    fails (the message quotes the end of its output)."""
    ncu = ncu_path()
    if ncu is None:
        raise ProfilerUnavailable(NCU_MISSING)
    names = _kernel_names(cases)
    unknown = []
    with tempfile.TemporaryDirectory(prefix="gemm-lessons-profile-") as tmp:
        job = os.path.join(tmp, "job.pkl")
        with open(job, "wb") as f:
            f.write(dumps({"size": tuple(size), "cases": list(cases.items())}))
        while True:
            cmd = _ncu_command(ncu, [m for m in metrics if m not in unknown], names, len(cases), job)
            try:
                out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=os.getcwd(),
                                     env=_child_env())
            except subprocess.TimeoutExpired:
                raise RuntimeError(f"profiling took longer than {timeout} s: try a smaller size=, "
                                   "or a longer timeout=") from None
            text = out.stdout + "\n" + out.stderr
            if "ERR_NVGPUCTRPERM" in text:
                raise ProfilerUnavailable(NOT_PERMITTED)
            missing = UNKNOWN_METRICS.search(text)
            if missing and not unknown:  # this ncu or GPU lacks some metrics: once more without them
                unknown = [m.strip() for m in missing.group(1).split(",") if m.strip()]
                continue
            break
    launches = results.parse_ncu_csv(out.stdout)
    done = any(line.startswith(CHILD_LINE) for line in out.stdout.splitlines())
    if out.returncode != 0 or not done:
        problem = f"the profiled run failed (exit code {out.returncode})"
    elif len(launches) != len(cases):
        problem = f"ncu profiled {len(launches)} kernel(s) for {len(cases)} launch(es): each must launch one kernel"
    elif names and any(n not in launch["kernel"] for n, launch in zip(names, launches)):
        problem = (f"ncu profiled {[launch['kernel'][:60] for launch in launches]}, not the kernels "
                   f"{names} in that order")
    else:
        return launches, unknown, out.stdout
    tail = "\n".join(text.strip().splitlines()[-25:])
    raise RuntimeError(f"{problem}. The end of its output:\n{tail}")


def _child(job_path):
    """What runs under ncu: each case launched once on the same random A and B."""
    import pickle

    import numpy as np
    from numba import cuda

    from gemm_lessons.measure.device import device_info
    from gemm_lessons.measure.problems import random_matrix

    with open(job_path, "rb") as f:
        job = pickle.load(f)
    M, N, K = job["size"]
    rng = np.random.default_rng(0)
    A, B = cuda.to_device(random_matrix(M, K, rng)), cuda.to_device(random_matrix(K, N, rng))
    C = cuda.device_array((M, N), np.float32)
    for name, launch in job["cases"]:
        (_rung(launch) if isinstance(launch, str) else launch)(A, B, C)
        cuda.synchronize()
    print(CHILD_LINE + json.dumps({"device": device_info().name, "cases": [n for n, _ in job["cases"]]}), flush=True)


def ncu_label(version):
    """'Nsight Compute 2025.3.1' from ncu's version line ('Version 2025.3.1.0 (build ...) ...')."""
    found = re.search(r"(\d+\.\d+\.\d+)", version or "")
    return f"Nsight Compute {found.group(1)}" if found else "Nsight Compute"


def _measured(cases, size, rows, timeout):
    from gemm_lessons.measure.device import device_info

    ncu = ncu_path()
    launches, unknown, _ = run_ncu(cases, size, metrics_for(rows), timeout)
    counters = {name: {k: v for k, v in launch.items() if k != "kernel"} for name, launch in zip(cases, launches)}
    version = ncu_version(ncu)
    source = f"measured now on {device_info().name} ({ncu_label(version)}; the GPU's clocks left as they were)"
    if unknown:
        source += f"; not available here: {', '.join(unknown)}"
    return Profile(tuple(size), rows, counters, source,
                   kernels={name: launch["kernel"] for name, launch in zip(cases, launches)})


def profile(launches, size=DEFAULT_SIZE, lesson=None, timeout=TIMEOUT_S):
    """Nsight Compute's counters of each launch at ``size`` = (M, N, K): ``launches`` is a dict
    name -> launch f(A, B, C) (or a ladder rung's name), as for measure.compare, or a single
    launch.  ``lesson`` ("01", "04", "06", "08") picks the counters that lesson is about; None
    shows all.  On the simulator, or where ncu is missing or not permitted, the counters
    recorded on a GPU for the same names (see the module's docstring)."""
    rows = _rows_of(lesson)
    cases = _cases(launches)
    # recorded counters are looked up by rung name: the value where it is one, else the column's name
    names = {name: launch if isinstance(launch, str) else name for name, launch in cases.items()}
    if backend.SIMULATOR:
        return recorded(names, size, rows, why=backend.not_measured_why())
    try:
        return _measured(cases, size, rows, timeout)
    except ProfilerUnavailable as e:
        return recorded(names, size, rows, why="not measured here", note=f"{e} The table shows recorded counters.")


# --- recorded counters ----------------------------------------------------------------------
def read_recorded(path):
    """A recorded file (``record``) -> (its header: device, date, size, cases..., name ->
    counters)."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    header = next((json.loads(line[len(HEADER_LINE):]) for line in text.splitlines() if line.startswith(HEADER_LINE)),
                  None)
    if header is None:
        raise ValueError(f"{path}: no '{HEADER_LINE}' line: not written by `python -m gemm_lessons.instruments.profiler record`")
    launches = results.parse_ncu_csv(text)
    if len(launches) != len(header["cases"]):
        raise ValueError(f"{path}: {len(launches)} profiled kernels for {len(header['cases'])} cases")
    return header, {name: {k: v for k, v in launch.items() if k != "kernel"}
                    for name, launch in zip(header["cases"], launches)}


def _device_named(slug_):
    """The device name behind a results file's slug (from the bench records), else the slug."""
    for path in results.available():
        try:
            name = results.read(path).device.name
        except Exception:  # noqa: BLE001 (an unreadable record just does not name the device)
            continue
        if results.slug(name) == slug_:
            return name
    return slug_


def _where(path):
    """results/<file> (no machine paths in a notebook's output)."""
    return os.path.join(os.path.basename(os.path.dirname(path)), os.path.basename(path))


def _recorded_sources(directory):
    """(label, size, name -> counters) of each recorded source, best first."""
    out = []
    for path in results.files("ncu-lessons", directory):
        header, counters = read_recorded(path)
        label = f"recorded on {header['device']}, {header['date'][:10]} ({_where(path)})"
        out.append((header["date"], label, tuple(header["size"]), counters))
    out.sort(key=lambda s: s[0], reverse=True)  # the newest recording first
    for path in results.files("ncu-roofline", directory):
        slug_ = os.path.basename(path)[len("ncu-roofline-"):-len(".csv")]
        counters = results.roofline_counters(slug_, directory) or {}
        label = (f"recorded on {_device_named(slug_)}, date not in the file ({_where(path)}: lesson 10's "
                 "roofline profile, DRAM, L2 and shared-load counters only)")
        out.append((None, label, ROOFLINE_SIZE, {k: {m: v for m, v in c.items() if m != "kernel"}
                                                  for k, c in counters.items()}))
    return [s[1:] for s in out]


def recorded(names, size=DEFAULT_SIZE, rows=ALL_ROWS, why="", note=None, directory=results.RESULTS_DIR):
    """The recorded counters of the package's kernels called ``names`` (a list, or a dict column
    -> recorded name): from the first recorded file that has any of them (the newest
    ncu-lessons file, then the roofline profile); a name it lacks shows as "not recorded"."""
    if not isinstance(names, dict):
        names = {n: n for n in names}
    sources = _recorded_sources(directory)
    label, rec_size, counters = next(((lb, s, c) for lb, s, c in sources if any(n in c for n in names.values())),
                                     (None, tuple(size), {}))
    if label is None:
        label = "none of these kernels has recorded counters in results/"
    else:
        label += "; the package's kernels of these names"
    if tuple(rec_size) != tuple(size):
        label += f"; recorded at {'x'.join(map(str, rec_size))}, not the {'x'.join(map(str, size))} asked for"
    if why:
        label += f"; {why}"
    return Profile(tuple(rec_size), rows, {col: counters.get(n) for col, n in names.items()}, label, note=note)


def profile_calls(calls, warmups=1, prefix=""):
    """For a tool run under ``ncu --profile-from-start off``: each of ``calls`` ({name: fn()})
    ``warmups`` times outside the profiled range (compiling, first-touch), then each once inside
    it, after a '# call PREFIXNAME' line that results.ncu_record reads back."""
    from numba import cuda

    for fn in calls.values():
        for _ in range(warmups):
            fn()
    cuda.synchronize()
    for name, fn in calls.items():
        print(f"# call {prefix}{name}", flush=True)
        cuda.profile_start()
        fn()
        cuda.synchronize()
        cuda.profile_stop()



# --- recording, on a GPU --------------------------------------------------------------------
def record(out_dir=results.RESULTS_DIR, size=DEFAULT_SIZE, timeout=TIMEOUT_S):
    """Profile the kernels of lessons 01, 04, 06 and 08 (LESSON_CASES) with every counter of
    ROWS, in one ncu run, and write results/ncu-lessons-<device>.csv: a header line (device,
    date, ncu version, commit, the cases in launch order), then ncu's standard output as it came."""
    from gemm_lessons.measure import provenance
    from gemm_lessons.measure.device import device_info

    if backend.SIMULATOR:
        raise SystemExit("record profiles on a GPU: there is no GPU here (CUDA simulator)")
    names = list(dict.fromkeys(n for cases in LESSON_CASES.values() for n in cases))
    _, unknown, text = run_ncu({n: n for n in names}, size, metrics_for(ALL_ROWS), timeout)
    device = device_info().name
    header = {"device": device, "date": provenance.now(), "size": list(size), "cases": names,
              "ncu": ncu_version(ncu_path()), "git_commit": provenance.git_commit(),
              "command": "python -m gemm_lessons.instruments.profiler record", "not_available": unknown}
    path = results.path_for("ncu-lessons", device, directory=out_dir)
    os.makedirs(out_dir, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(HEADER_LINE + json.dumps(header) + "\n" + text.strip() + "\n")
    return path


def show(path=None):
    """The four lessons' tables from a recorded file (the newest in results/ by default), as text."""
    if path is None:
        paths = results.files("ncu-lessons")
        if not paths:
            raise SystemExit("no results/ncu-lessons-*.csv yet: run `python -m gemm_lessons.instruments.profiler record` on a GPU")
        path = paths[-1]
    header, counters = read_recorded(path)
    label = f"recorded on {header['device']}, {header['date'][:10]} ({os.path.basename(path)})"
    out = []
    for lesson, names in LESSON_CASES.items():
        prof = Profile(tuple(header["size"]), LESSON_ROWS[lesson], {n: counters.get(n) for n in names}, label)
        out.append(f"## lesson {lesson}\n\n{prof._repr_markdown_()}\n")
    return "\n".join(out)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m gemm_lessons.instruments.profiler", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="what", required=True)
    rec = sub.add_parser("record", help="on a GPU: profile the lessons' kernels into results/ncu-lessons-<device>.csv")
    rec.add_argument("--out", default=results.RESULTS_DIR, help="directory to write to (default: results/)")
    rec.add_argument("--size", type=int, nargs=3, default=DEFAULT_SIZE, metavar=("M", "N", "K"))
    sh = sub.add_parser("show", help="print the lessons' tables of a recorded file (markdown)")
    sh.add_argument("path", nargs="?", help="a recorded file (default: the newest in results/)")
    child = sub.add_parser("child", help="(internal) the process ncu profiles")
    child.add_argument("job")
    args = parser.parse_args(argv)
    if args.what == "record":
        path = record(args.out, tuple(args.size))
        print(path)
        print(show(path))
    elif args.what == "show":
        print(show(args.path))
    else:
        _child(args.job)


if __name__ == "__main__":
    main()
