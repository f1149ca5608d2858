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

The metrics are Nsight Compute's, named as in its Profiling Guide
(https://docs.nvidia.com/nsight-compute/ProfilingGuide/): "Metrics Structure" for the names,
"Occupancy", "Memory Tables" and "Shared Memory" for the counters, "Warp Stall Reasons" for the
stall reasons (https://docs.nvidia.com/nsight-compute/ProfilingGuide/index.html#warp-stall-reasons).
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
from gemm_lessons.records import results

DEFAULT_SIZE = (4096, 4096, 4096)
TIMEOUT_S = 600
CHILD_LINE = "# gemm-lessons profiler child: "  # what the child prints when its launches are done
HEADER_LINE = "# gemm-lessons profiler: "  # the first line of a recorded file: device, date, cases
LAUNCH_ATTRIBUTES = ("tile", "config")  # attributes of a kernel that the course's launchers read
ROOFLINE_SIZE = (4096, 4096, 4096)  # tools/roofline_profile.py's SIZE

# --- the counters ---------------------------------------------------------------------------
TIME = "gpu__time_duration.sum"
REGISTERS = "launch__registers_per_thread"
OCC_THEORETICAL = "sm__maximum_warps_per_active_cycle_pct"
OCC_ACHIEVED = "sm__warps_active.avg.pct_of_peak_sustained_active"
BLOCK_LIMITS = {"registers": "launch__occupancy_limit_registers",  # blocks per SM each resource allows
                "shared memory": "launch__occupancy_limit_shared_mem",
                "warps": "launch__occupancy_limit_warps",
                "blocks": "launch__occupancy_limit_blocks"}
SHARED_CONFIG = "launch__shared_mem_config_size"  # bytes of shared memory the driver set aside per SM for the launch
GLOBAL_LD_SECTORS = "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"
GLOBAL_LD_REQUESTS = "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"  # one per warp-wide load instruction
L1_HIT = "l1tex__t_sector_hit_rate.pct"
L2_BYTES = "lts__t_bytes.sum"
L2_HIT = "lts__t_sector_hit_rate.pct"
DRAM_READ, DRAM_WRITE = "dram__bytes_read.sum", "dram__bytes_write.sum"
DRAM_THROUGHPUT = "dram__throughput.avg.pct_of_peak_sustained_elapsed"
ISSUE_ACTIVE = "smsp__issue_active.avg.pct_of_peak_sustained_active"  # cycles a scheduler issued, of its active ones
SHARED = {(op, what): metric for op in ("ld", "st") for what, metric in [
    ("instructions", f"smsp__inst_executed_op_shared_{op}.sum"),
    ("wavefronts", f"l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{op}.sum"),
    ("conflicts", f"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{op}.sum")]}

# Each cycle every active warp is in one state; a stall reason's metric is the share of the
# active warp-cycles spent in it.  One line each, in plain words (the guide's table is longer).
STALL_REASONS = {
    "long_scoreboard": "waiting for data from global or local memory (a load served by L1, L2 or DRAM)",
    "short_scoreboard": "waiting for a result from shared memory (or from a slow math unit: sqrt, reciprocal)",
    "mio_throttle": "the queue into the MIO unit (shared memory, special math) is full: too many such instructions",
    "lg_throttle": "the queue for global and local memory instructions is full: too many of them at once",
    "barrier": "waiting at cuda.syncthreads() for the other warps of its block",
    "wait": "waiting a fixed number of cycles for an earlier instruction's result (one FFMA feeding the next)",
    "math_pipe_throttle": "the arithmetic unit it needs (FMA, ...) is busy with other warps' instructions",
    "not_selected": "ready, but the scheduler issued another warp's instruction in that cycle",
    "dispatch_stall": "ready, but the dispatch unit held the instruction back",
    "no_instruction": "its next instruction is not fetched yet (instruction cache miss, or just after a jump)",
    "branch_resolving": "waiting for a branch's target to be computed",
    "drain": "done, waiting for its last stores to leave before it can exit",
    "imc_miss": "waiting for a constant (a kernel argument, say) that missed the constant cache",
    "membar": "waiting at a memory fence",
    "sleeping": "all its threads are asleep or have yielded",
    "tex_throttle": "the texture unit's queue is full",
    "misc": "another hardware reason",
    "selected": "issuing an instruction: not a stall (never in the top 3)",
}
NOT_A_STALL = ("selected",)


def stall_metric(reason):
    return f"smsp__warp_issue_stalled_{reason}_per_warp_active.pct"


def _stall_reason(metric):
    m = re.fullmatch(r"smsp__warp_issue_stalled_(\w+)_per_warp_active\.pct", metric)
    return m.group(1) if m else None


STALL_METRICS = tuple(stall_metric(r) for r in STALL_REASONS)


def top_stalls(counters, n=3):
    """[(reason, % of active warp-cycles)] of one kernel's counters (metric -> value), largest
    first, without reasons at 0% and without 'selected' (a warp issuing is not stalled)."""
    found = [(r, counters[m]) for m, r in ((m, _stall_reason(m)) for m in counters) if r and r not in NOT_A_STALL
             and isinstance(counters[m], float) and counters[m] > 0]
    return sorted(found, key=lambda rv: -rv[1])[:n]


@dataclass(frozen=True)
class Row:
    label: str  # markdown: links into the glossary (the notebooks sit next to it)
    metrics: tuple  # what ncu must collect for it
    value: object  # counters (dict metric -> value) -> a number, or None where a metric is missing
    fmt: object  # number -> text


def _get(c, *metrics):
    values = [c.get(m) for m in metrics]
    return None if any(not isinstance(v, float) for v in values) else values


def _one(metric):
    return lambda c: (_get(c, metric) or [None])[0]


def _ratio(num, den):
    def value(c):
        v = _get(c, num, den)
        return v[0] / v[1] if v and v[1] else None
    return value


def _sum(*metrics):
    return lambda c: sum(_get(c, *metrics)) if _get(c, *metrics) else None


def _blocks_per_sm(c):
    limits = {name: c.get(metric) for name, metric in BLOCK_LIMITS.items()}
    if any(not isinstance(v, float) for v in limits.values()):
        return None
    return min(limits.values())


def _limited_by(c):
    limits = {name: c[metric] for name, metric in BLOCK_LIMITS.items()}
    return [name for name, v in limits.items() if v == min(limits.values())]


def fmt_time(ns):
    return f"{ns / 1e6:,.2f} ms" if ns >= 1e6 else f"{ns / 1e3:,.1f} µs"


def fmt_bytes(b):
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if b >= scale:
            return f"{b / scale:,.2f} {unit}"
    return f"{b:,.0f} B"


def fmt_count(n):
    return f"{n / 1e6:,.1f} M" if n >= 1e6 else f"{n:,.0f}"


def fmt_pct(p):
    return f"{p:.1f}%"


ROWS = {
    "time": Row("duration (one launch, under ncu)", (TIME,), _one(TIME), fmt_time),
    "registers": Row("[registers](GLOSSARY.md#register) per thread", (REGISTERS,), _one(REGISTERS),
                     lambda v: f"{v:.0f}"),
    "blocks_per_sm": Row("[blocks/SM](GLOSSARY.md#blocks-per-sm), limited by",
                         tuple(BLOCK_LIMITS.values()) + (SHARED_CONFIG,),
                         _blocks_per_sm, None),  # formatted with the limiting resource, in Profile
    "occupancy_theoretical": Row("theoretical [occupancy](GLOSSARY.md#occupancy)", (OCC_THEORETICAL,),
                                 _one(OCC_THEORETICAL), fmt_pct),
    "occupancy": Row("achieved [occupancy](GLOSSARY.md#occupancy)", (OCC_ACHIEVED,), _one(OCC_ACHIEVED), fmt_pct),
    "sectors_per_request": Row("global loads: [sectors](GLOSSARY.md#sector) per warp instruction",
                               (GLOBAL_LD_SECTORS, GLOBAL_LD_REQUESTS),
                               _ratio(GLOBAL_LD_SECTORS, GLOBAL_LD_REQUESTS), lambda v: f"{v:.2f}"),
    "l1_hit": Row("[L1](GLOSSARY.md#l1) hit rate", (L1_HIT,), _one(L1_HIT), fmt_pct),
    "l2_bytes": Row("[L2](GLOSSARY.md#l2) traffic", (L2_BYTES,), _one(L2_BYTES), fmt_bytes),
    "l2_hit": Row("L2 hit rate", (L2_HIT,), _one(L2_HIT), fmt_pct),
    "dram_bytes": Row("[DRAM](GLOSSARY.md#dram) traffic, read + written", (DRAM_READ, DRAM_WRITE),
                      _sum(DRAM_READ, DRAM_WRITE), fmt_bytes),
    "dram_throughput": Row("DRAM throughput, % of peak", (DRAM_THROUGHPUT,), _one(DRAM_THROUGHPUT), fmt_pct),
    "issue_active": Row("[issue](GLOSSARY.md#issue) slots busy: cycles a scheduler issued an instruction",
                        (ISSUE_ACTIVE,), _one(ISSUE_ACTIVE), fmt_pct),
    **{f"shared_{op}_{what}": Row(
        f"shared {'loads' if op == 'ld' else 'stores'}: "
        + {"instructions": "warp instructions", "wavefronts": "[wavefronts](GLOSSARY.md#wavefront)",
           "conflicts": "[bank conflicts](GLOSSARY.md#bank-conflict)"}[what],
        (metric,), _one(metric), fmt_count) for (op, what), metric in SHARED.items()},
}
STALL_ROWS = 3  # the table's last rows: the top 3 stall reasons
STALLS = "stalls"  # in a lesson's rows: the top stall reasons

# What each lesson's table shows: what the lesson's text is about.
LESSON_ROWS = {
    "01": ("time", "sectors_per_request", "l1_hit", "l2_bytes", "l2_hit", "dram_bytes", "issue_active", STALLS),
    "04": ("time", "registers", "blocks_per_sm", "occupancy_theoretical", "occupancy", "shared_ld_conflicts", STALLS),
    "06": ("time", "shared_ld_instructions", "shared_ld_wavefronts", "shared_ld_conflicts",
           "shared_st_instructions", "shared_st_wavefronts", "shared_st_conflicts", STALLS),
    "08": ("time", "registers", "blocks_per_sm", "occupancy_theoretical", "occupancy", "l2_hit", "dram_throughput",
           "issue_active", STALLS),
}
ALL_ROWS = tuple(ROWS) + (STALLS,)
# The kernels each lesson profiles (ladder names): what `record` profiles for the recorded file.
LESSON_CASES = {"01": ("naive", "naive_uncoalesced"), "04": ("reg2d", "reg2d_uncapped", "reg2d_contiguous"),
                "06": ("vec", "vec_split"), "08": ("dbuf", "warptile")}


def metrics_for(rows):
    out = []
    for key in rows:
        for m in (STALL_METRICS if key == STALLS else ROWS[key].metrics):
            if m not in out:
                out.append(m)
    return out


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
            return f"{v:.0f} ({', '.join(_limited_by(c))})"
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


def reading_04(prof=None, traced_conflicts=None, size=DEFAULT_SIZE, tile=(128, 128, 8)):
    """Lesson 04's reading of its profiled kernels in words, from ``prof`` (default: the recorded
    counters): what lifting the register cap changed (blocks/SM, occupancy, waits on global
    memory, time), and the bank-conflict row against the tracer: ``traced_conflicts``, the
    tracer's load conflicts of `reg2d_contiguous` in one block and one slice (BM x BN x BK =
    ``tile``), times the blocks and slices of ``size``."""
    names = ("reg2d", "reg2d_uncapped", "reg2d_contiguous")
    prof = prof or recorded(list(names), size=size, rows=LESSON_ROWS["04"])
    if any(prof.counters.get(n) is None for n in names):
        return "No counters of the three kernels recorded: run `python -m gemm_lessons.instruments.profiler record` on a GPU."
    v = {n: {r: prof.value(n, r) for r in ("time", "blocks_per_sm", "occupancy", "shared_ld_conflicts")}
         for n in names}
    waits = {n: dict(prof.top_stalls(n, 10)) for n in names}
    a, b, c = names
    text = (f"Reading the table ({prof.source}): without the register cap, `{b}` fits "
            f"{v[b]['blocks_per_sm']:.0f} block(s) per SM against {v[a]['blocks_per_sm']:.0f}, its achieved "
            f"occupancy is {v[b]['occupancy']:.1f}% against {v[a]['occupancy']:.1f}%, its warps spent "
            f"{waits[b].get('long_scoreboard', 0):.0f}% of their cycles waiting on global or local memory (long "
            f"scoreboard) against {waits[a].get('long_scoreboard', 0):.0f}%, and one launch took "
            f"{v[b]['time'] / v[a]['time']:.2f}x as long, as fewer resident warps hiding less of the loads' latency "
            "would make it (the counters show the waits, not their cause). ")
    text += shared_limit_reading(prof, a, b)
    M, N, K = size
    BM, BN, BK = tile
    blocks, slices = -(-M // BM) * -(-N // BN), -(-K // BK)
    if traced_conflicts is not None and v[c]["shared_ld_conflicts"]:
        expected = traced_conflicts * blocks * slices
        text += (f"The bank-conflict row: the tracer's {traced_conflicts:,} conflicts of `{c}` in one block and "
                 f"one slice, times {blocks:,} blocks and {slices:,} slices, make {expected / 1e6:,.1f} M; the "
                 f"profiler counted {v[c]['shared_ld_conflicts'] / 1e6:,.1f} M "
                 f"({100 * v[c]['shared_ld_conflicts'] / expected:.2f}% of it). ")
    if v[a]["shared_ld_conflicts"]:
        text += (f"For `{a}`, where the tracer finds none, the profiler counted {v[a]['shared_ld_conflicts']:,.0f}, "
                 f"{v[a]['shared_ld_conflicts'] / (blocks * slices):.2f} per block and slice: conflicts the "
                 "addresses do not explain (lesson 06 meets such extras too). ")
    top_c = prof.top_stalls(c, 1)[0]
    text += (f"`{c}`'s largest stall reason is {top_c[0].replace('_', ' ')} ({top_c[1]:.0f}%)"
             + (": waiting on shared memory, as its conflicts suggest" if top_c[0] == "short_scoreboard" else "")
             + f"; its launch took {v[c]['time'] / v[a]['time']:.2f}x as long as `{a}`'s.")
    return text


def l2_sources(device=None):
    """experiments/l2_sources/l2_sources.py's record: (its header line, {kernel name: counters}), or None."""
    from gemm_lessons.records import results

    record = results.ncu_record(results.experiment("l2_sources", "ncu", device))
    if record is None:
        return None
    header, calls, launches = record
    return header, dict(zip(calls, launches))


def l2_sources_reading(kernel="naive", record=None):
    """Where ``kernel``'s L2 misses came from, in words, from experiments/l2_sources/l2_sources.py's record."""
    record = record or l2_sources()
    k = record and record[1].get(kernel)
    if not k:
        return ("Where the difference came from, these counters do not say (`experiments/l2_sources/l2_sources.py` splits the "
                "misses by the requests' source; no such profile is recorded for this GPU).")
    sector = 32
    sm_miss = k["lts__t_sectors_srcunit_tex_lookup_miss.sum"] * sector
    fabric_miss = k["lts__t_sectors_srcunit_ltcfabric_lookup_miss.sum"] * sector
    dram_read = k["dram__sectors_read.sum"] * sector
    where = results.ncu_where(record[0])
    all_miss = k["lts__t_sectors_lookup_miss.sum"] * sector
    return (f"A second profile of the same kernel split the L2's lookups by where each request came from "
            f"(`experiments/l2_sources/l2_sources.py`, {where}, experiments/l2_sources/ncu-l2-sources-*.csv). Of its "
            f"{all_miss / 1e9:.1f} GB of misses, the lookups of requests from the SMs missed "
            f"{sm_miss / 1e9:.1f} GB, and DRAM read {dram_read / 1e9:.1f} GB ({100 * abs(sm_miss / dram_read - 1):.1f}% "
            f"apart); the other {fabric_miss / 1e9:.1f} GB (`lts__t_sectors_srcunit_ltcfabric_lookup_miss`, in "
            "32-byte sectors) were lookups of requests that came from the *LTC fabric*, not from an SM. Since the "
            "A100 the L2 is split into two partitions; `lts` is ncu's name for one L2 slice, and the LTC fabric is "
            "the link between the partitions, so these are requests one partition passed to the other (NVIDIA's "
            "answer in [this forum thread](https://forums.developer.nvidia.com/t/whats-the-meaning-of-performance-"
            "counter-lts-t-sectors-srcunit-ltcfabric/228015), which points to the \"A100 L2 Cache\" section of the "
            "[Ampere white paper](https://images.nvidia.com/aem-dam/en-zz/Solutions/data-center/nvidia-ampere-"
            "architecture-whitepaper.pdf)). Those did not add DRAM reads beyond the SMs' misses, so the miss rate, "
            "which counts every lookup, overstates what came from DRAM.")


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


def store_wavefronts_reading(prof, traces, traced_shape, bk=8):
    """Lesson 06: the profiler's shared-store wavefronts of each kernel at ``prof.size`` against
    the tracer's count of one block at ``traced_shape`` (M, N, K), scaled to the whole grid (the
    number of blocks, and the slices of BK along K): one generated sentence."""
    M, N, K = prof.size
    tm, tn, tk = traced_shape
    parts = []
    for name, trace in traces.items():
        got = prof.value(name, "shared_st_wavefronts")
        if got is None:
            continue
        blocks = (M // tm) * (N // tn)
        scaled = trace.totals("st")["wavefronts"] * blocks * (K // bk) / (tk // bk)
        parts.append(f"`{name}` {got / 1e6:,.1f} M against {scaled / 1e6:,.1f} M ({100 * (got / scaled - 1):+.1f}%)")
    if not parts:
        return "No shared-store wavefronts in this profile."
    return (f"Shared-store wavefronts at {M}x{N}x{K}, the profiler ({prof.source}) against the tracer's count of one "
            f"block at K = {tk} scaled to the grid ({M // tm} x {N // tn} blocks, {K // bk} slices of {bk}): "
            + "; ".join(parts) + ". Why the profiler counts more was not found.")


def reading_01(prof=None):
    """Lesson 01's reading of its profiled kernels in words, from ``prof`` (default: the recorded
    counters): what the loads cost `naive` (L1, DRAM bytes and rate against the bytes of a kernel
    that reads A and B once and writes C once), its largest stall reasons with the issue-slot
    counter, and why `naive_uncoalesced` took longer (issue rate, sectors per load, its stalls)."""
    from gemm_lessons.model.counting import sgemm_min_bytes

    a, b = "naive", "naive_uncoalesced"
    prof = prof or recorded([a, b], rows=LESSON_ROWS["01"])
    if prof.counters.get(a) is None:
        return "No counters of `naive` recorded: run `python -m gemm_lessons.instruments.profiler record` on a GPU."
    v = {n: {r: prof.value(n, r) for r in ("time", "l1_hit", "dram_bytes", "issue_active", "sectors_per_request",
                                            "l2_bytes", "l2_hit")}
         for n in (a, b) if prof.counters.get(n) is not None}
    ideal = sgemm_min_bytes(*prof.size)
    t, dram = v[a]["time"], v[a]["dram_bytes"]
    stalls = prof.top_stalls(a)
    top = " and ".join(f"*{r.replace('_', ' ')}* ({p:.0f}%)" for r, p in stalls[:2])
    text = (f"Two global loads per FMA is what lesson 02 cuts. What do they cost? Source of the counters: "
            f"{prof.source}. `naive`'s "
            f"L1 hit rate was {v[a]['l1_hit']:.0f}%, and DRAM moved {dram / 1e9:.1f} GB in {fmt_time(t)} "
            f"({dram / t:,.0f} GB/s), {dram / ideal:.0f} times the {ideal / 1e6:.0f} MB of a kernel that reads A "
            "and B once and writes C once.")
    if v[a]["l2_bytes"] and v[a]["l2_hit"] is not None:
        missed = v[a]["l2_bytes"] * (1 - v[a]["l2_hit"] / 100)
        if missed > 1.1 * dram:
            text += (f" Its L2 misses ({v[a]['l2_bytes'] / 1e9:.1f} GB of L2 traffic times a miss rate of "
                     f"{100 - v[a]['l2_hit']:.0f}%) come to {missed / 1e9:.1f} GB, more than DRAM moved. "
                     + l2_sources_reading(a))
    text += f" Its most frequent stall reasons: {top}."
    if stalls and stalls[0][0] in ("long_scoreboard", "lg_throttle"):
        text += " The warps waited mostly for global memory: the loads are what held this kernel back."
    else:
        text += (" The most frequent one is not a wait for global memory: warps were ready but not picked, or "
                 "waited for a busy arithmetic pipe (which pipe, these counters do not say). "
                 + issue_reading(prof, [a]))
    if b in v and v[b]["issue_active"] and v[a]["issue_active"]:
        top_b = prof.top_stalls(b, 1)[0]
        text += (f"\n\nThe uncoalesced kernel has the same code with the two thread indices swapped. Its "
                 f"schedulers issued an instruction in {v[b]['issue_active']:.2f}% of their active cycles, `naive`'s "
                 f"in {v[a]['issue_active']:.2f}%: {v[a]['issue_active'] / v[b]['issue_active']:.2f}x as often; and "
                 f"one launch of the uncoalesced kernel took {v[b]['time'] / t:.2f}x as long. With the same code to "
                 f"run, the time went with the issue rate. Its warps mostly waited with "
                 f"*{top_b[0].replace('_', ' ')}* ({top_b[1]:.0f}%). Its warp-wide loads touched "
                 f"{v[b]['sectors_per_request']:.1f} sectors on average against {v[a]['sectors_per_request']:.1f} "
                 "(the figure at the top: A's loads touch 32 each), yet L2 traffic "
                 f"({v[b]['l2_bytes'] / 1e9:.1f} GB against {v[a]['l2_bytes'] / 1e9:.1f} GB) and DRAM traffic "
                 f"({v[b]['dram_bytes'] / 1e9:.1f} GB against {dram / 1e9:.1f} GB) stayed about the same: the L1 "
                 f"served the extra sectors (hit rate {v[b]['l1_hit']:.0f}% against {v[a]['l1_hit']:.0f}%). A likely "
                 "reading: the L1 handles a load's sectors one after another, so loads that touch 32 sectors fill "
                 "its queue, and the warps wait to issue their next load.")
    return text


def shared_limit_reading(prof, a, b):
    """Why kernel ``b``'s blocks/SM names shared memory as a limit when kernel ``a``, with the same
    shared arrays, fits more blocks by shared memory: ncu counts that limit against the shared memory
    the driver set aside for the launch (SHARED_CONFIG, where recorded).  Empty when it does not."""
    limit = {n: (prof.counters.get(n) or {}).get(BLOCK_LIMITS["shared memory"]) for n in (a, b)}
    reg = (prof.counters.get(b) or {}).get(BLOCK_LIMITS["registers"])
    if None in (limit[a], limit[b], reg) or not limit[b] < limit[a] or limit[b] != reg:
        return ""
    config = {n: (prof.counters.get(n) or {}).get(SHARED_CONFIG) for n in (a, b)}
    text = (f"The table also names shared memory as a limit of `{b}`: {limit[b]:.0f} block(s) per SM against "
            f"{limit[a]:.0f} for `{a}`, whose shared arrays are the same size. ncu counts that limit against the "
            "shared memory the driver set aside on each SM for the launch (the rest of the same storage serves as "
            "L1 cache; the driver chooses the split, see the [CUDA C++ Programming Guide on the shared memory "
            "carveout](https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#shared-memory-8-x))")
    if None not in config.values():
        text += (f". It set aside {config[b] / 1024:,.0f} KiB for `{b}` against {config[a] / 1024:,.0f} KiB for "
                 f"`{a}`: " + ("less, enough for the blocks the registers allow. The registers set the limit; the "
                               "shared-memory limit follows it. " if config[b] < config[a] else
                               "not less, so the split does not explain the lower limit. "))
    else:
        text += (". A likely reading, not recorded here (the record has no `launch__shared_mem_config_size`): "
                 "the driver set aside shared memory for the one block the registers allow, so the registers set "
                 "the limit and the shared-memory limit follows it. ")
    return text


def reading_08(prof=None):
    """Lesson 08's reading of its two profiled kernels (dbuf, warptile), in words, from ``prof``
    (default: the recorded counters): how far apart their durations and rates are, whether DRAM
    was busy, and the largest stall reason with what it means."""
    prof = prof or recorded(["dbuf", "warptile"], rows=LESSON_ROWS["08"])
    names = ("dbuf", "warptile")
    if any(prof.counters.get(n) is None for n in names):
        return "No counters of both kernels recorded: run `python -m gemm_lessons.instruments.profiler record` on a GPU."
    t = {n: prof.value(n, "time") for n in names}
    ratio = t["warptile"] / t["dbuf"]
    rates = ("occupancy", "l2_hit", "dram_throughput")  # percentages
    gap = max(abs(prof.value("warptile", r) - prof.value("dbuf", r)) for r in rates)
    text = (f"Reading the table ({prof.source}): one launch of `warptile` took {ratio:.3f}x as long as one of "
            f"`dbuf` under the profiler (the table rounds both to 0.01 ms)")
    if abs(ratio - 1) < 0.02 and gap < 1:
        text += (f", and their occupancy, L2 hit rate and DRAM throughput differ by at most {gap:.1f} points: "
                 "these counters do not tell the two kernels apart. ")
    else:
        text += f"; their occupancy, L2 hit rate and DRAM throughput differ by up to {gap:.1f} points. "
    occ = {n: (prof.value(n, "occupancy"), prof.value(n, "occupancy_theoretical")) for n in names}
    text += ("Achieved occupancy: " + " and ".join(f"{occ[n][0]:.1f}% (`{n}`)" for n in names)
             + f"; their registers allow {max(o[1] for o in occ.values()):.0f}% (theoretical). ")
    dram = max(prof.value(n, "dram_throughput") for n in names)
    if dram < 20:
        text += f"DRAM was at most {dram:.1f}% busy: DRAM bandwidth was not what held them back. "
    top = {}
    for n in names:
        reason, share = prof.top_stalls(n, 1)[0]
        top[n] = (reason.replace("_", " "), share)
    reasons = {r for r, _ in top.values()}
    if reasons == {"not selected"}:
        text += (f"The largest stall reason of both is *not selected* ({top['dbuf'][1]:.0f}% and "
                 f"{top['warptile'][1]:.0f}% of active warp-cycles): a warp was ready to issue but its scheduler "
                 "issued another warp's instruction, so there were ready warps to hide latency with. "
                 + issue_reading(prof, names))
    else:
        text += "Largest stall reasons: " + ", ".join(f"{n} {r} ({v:.0f}%)" for n, (r, v) in top.items()) + "."
    return text


ISSUE_FULL = 80.0  # % of active cycles with an instruction issued that issue_reading calls full


def issue_reading(prof, names):
    """One sentence: were the schedulers' issue slots full (ISSUE_ACTIVE) for ``names``?  ISSUE_FULL %
    or more of the active cycles counts as full (at most one instruction per scheduler per cycle)."""
    busy = {n: prof.value(n, "issue_active") for n in names}
    if any(v is None for v in busy.values()):
        return ("Whether instruction issue itself was the limit, these counters do not show (the record has no "
                "issue-slot counter).")
    shown = " and ".join(f"{v:.0f}% (`{n}`)" for n, v in busy.items())
    if min(busy.values()) >= ISSUE_FULL:
        return (f"The schedulers issued an instruction in {shown} of their active cycles, close to the limit of "
                "one per cycle: issuing instructions is the likely limit (a kernel that issues fewer for the same work "
                "would tell).")
    if max(busy.values()) < ISSUE_FULL:
        return (f"The schedulers issued an instruction in {shown} of their active cycles, short of the limit of "
                "one per cycle: issue slots alone were not the limit, and these counters do not say what was.")
    return f"The schedulers issued an instruction in {shown} of their active cycles (the limit is one per cycle)."


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
