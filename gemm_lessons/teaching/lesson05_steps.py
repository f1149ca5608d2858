"""Lesson 05 in steps: from lesson 04's kernel to lesson 05's, one change at a time, each measured.

``STEPS`` lists the kernels in order (rungs and variants of gemm_lessons.kernels.ladder), each with the
one change it makes to the kernel before it.  ``python -m gemm_lessons.teaching.lesson05_steps`` times
them, ``EXTRA`` and cuBLAS in one process (it runs ``python -m gemm_lessons.runs.bench`` on them) and
keeps the bench record as results/experiments/lesson05-steps-<device>.json.  The lesson quotes
no number of its own: on a GPU it measures the steps itself, on the simulator it renders the
record, or says that there is none yet.
"""
import argparse
import glob
import os
import sys
import tempfile
from dataclasses import dataclass

from gemm_lessons.core import backend
from gemm_lessons.records import results
from gemm_lessons.records.schema import BenchRecord

RECORD_NAME = "lesson05-steps"  # results.path_for("experiment", device, RECORD_NAME)
SIZE = (4096, 4096, 4096)  # the size the lesson talks about
SIZES = (4096, 8192)  # what the command times (squares)


@dataclass(frozen=True)
class Step:
    kernel: str  # a rung or variant of gemm_lessons.kernels.ladder
    change: str  # what it changes in the kernel before it
    module: str  # the package file of its code (lesson_source.kernel_diff compares these)


STEPS = (
    Step("reg2d", "lesson 04's kernel: a thread's 8x8 results spread 16 rows and columns apart",
         "gemm_lessons/kernels/sgemm/reg2d.py"),
    Step("reg2d_contiguous", "a thread's 8x8 results side by side (lesson 04's variant)",
         "gemm_lessons/kernels/sgemm/reg2d.py"),
    Step("reg2d_unrolled", "loops written out at compile time: the results a register tile indexed by constants",
         "gemm_lessons/kernels/sgemm/reg2d_unrolled.py"),
    Step("transposed_a", "A tile stored transposed, so a thread's 8 values of A are neighbours; both tiles read 16 bytes at a time (LDS.128)",
         "gemm_lessons/kernels/sgemm/transposed_a.py"),
    Step("wide_loads", "16-byte global loads for staging (LDG.128)", "gemm_lessons/kernels/sgemm/wide_loads.py"),
    Step("vec", "16-byte stores of C (STG.128): lesson 05's kernel", "gemm_lessons/kernels/sgemm/vec.py"),
)
NAMES = [s.kernel for s in STEPS]
EXTRA = ("vec_unrolled_k",)  # timed in the same run: the lesson's other comparison
KERNELS = NAMES + list(EXTRA)
BK = 8  # k-steps per slice in every step kernel: the inner loop runs BK times per slice
FFMA_PER_SLICE = 8 * 8 * BK  # a thread's 8x8 results, BK k-steps


def step(name):
    """The Step of kernel ``name``."""
    for s in STEPS:
        if s.kernel == name:
            return s
    raise KeyError(f"{name!r} is not a step of lesson 05; the steps are {NAMES}")


def previous(name):
    """The kernel of the step before ``name`` (None for the first)."""
    i = NAMES.index(step(name).kernel)
    return NAMES[i - 1] if i else None


# --- the record ---------------------------------------------------------------------------

def record_path(device=None, directory=results.RESULTS_DIR):
    """The steps' record of ``device``; None: results.COURSE_DEVICE's, else REFERENCE_DEVICE's."""
    if device is None:
        return results.course_path("experiment", RECORD_NAME, directory=directory)
    return results.path_for("experiment", device, RECORD_NAME, directory=directory)


def load(device=None, directory=results.RESULTS_DIR):
    """The steps' bench record of ``device`` (as in record_path), or None when it has not been recorded."""
    path = record_path(device, directory)
    return results.read(path) if os.path.exists(path) else None


@dataclass
class NotRecorded:
    """What a cell shows on the simulator when the steps have not been timed on a GPU yet."""
    what: str
    path: str

    def _repr_markdown_(self):
        return (f"**Not recorded yet:** {self.what}: "
                f"`{os.path.relpath(self.path, os.path.dirname(results.RESULTS_DIR))}` does not exist. "
                "`python -m gemm_lessons.teaching.lesson05_steps` on a GPU writes it (every step and cuBLAS in one "
                "process); run on a GPU, this cell measures instead.")

    __repr__ = _repr_markdown_


# --- the compiler's facts of each step -------------------------------------------------------

def compiler_facts(kernels, record=None, device=None):
    """compiler_facts.compiler_facts of ``kernels`` (name -> numba kernel) with the main-loop
    columns: from the compiler on a GPU, from the steps' record on the simulator, or NotRecorded."""
    from gemm_lessons.instruments import compiler_facts

    threads = {name: 256 for name in kernels}
    if backend.SIMULATOR:
        record = record or load(device)
        if record is None:
            return NotRecorded("what the GPU's compiler made of " + ", ".join(f"`{n}`" for n in kernels),
                               record_path(device))
    return compiler_facts.compiler_facts(kernels, threads, record=record, loops=True)


# --- the shared-memory wavefronts of each step ------------------------------------------------

def traced_loads(names=NAMES, shape=(128, 128, BK), narrow=()):
    """name -> {"wavefronts": shared-memory wavefronts of one block over one slice (``shape`` =
    (BM, BN, BK)), "load_bytes": the widest shared load the code asks for (4 or 16)}, as the bank
    tracer counts them for the widths the code asks for (merge=False): loads by the paired-load
    rule (lesson 06; it matches the profiler's count for reg2d and vec), stores by the documented
    rules.  The steps in ``narrow`` have their 16-byte shared loads counted as four 4-byte loads
    each (what a compiler that split them would issue: a record whose facts show no LDS.128).  On
    a GPU the tracing runs in one child process on the simulator."""
    from gemm_lessons.instruments import shared_tracer
    from gemm_lessons.instruments.simulator_process import run_on_simulator

    if not backend.SIMULATOR:
        code = ("import json; from gemm_lessons.teaching import lesson05_steps as s; "
                f"print(json.dumps(s.traced_loads({list(names)!r}, {tuple(shape)!r}, {list(narrow)!r})))")
        return run_on_simulator(code, "tracing lesson 05's steps")
    out = {}
    for name in names:
        t = shared_tracer.trace_rung(name, tuple(shape), merge=False)
        loads = [i for i in t.instructions if i.op == "ld"]
        widest = max((i.width for i in loads), default=4)
        if name in narrow:
            loads = [shared_tracer.Instruction(i.warp, i.op, i.array, i.site,
                                               [None if a is None else a + 4 * d for a in i.addresses], 4, i.source)
                     for i in loads for d in range(i.width // 4)]
        stores = [i for i in t.instructions if i.op == "st"]
        out[name] = {"wavefronts": sum(i.measured_cost.wavefronts for i in loads) + sum(i.cost.wavefronts for i in stores),
                     "load_bytes": widest}
    return out


# --- the command ----------------------------------------------------------------------------

def main(argv=None):
    p = argparse.ArgumentParser(description="time lesson 05's steps and cuBLAS in one process "
                                            "(python -m gemm_lessons.runs.bench) into results/experiments/")
    p.add_argument("--sizes", type=int, nargs="*", default=list(SIZES))
    p.add_argument("--out", default=results.RESULTS_DIR, help="results directory (default: the repo's results/)")
    p.add_argument("--no-progress", action="store_true")
    args = p.parse_args(argv)
    from gemm_lessons.runs import bench

    bench_args = ["--kernels", *KERNELS, "--sizes", *map(str, args.sizes), "--shapes",
                  "--variant-limit", str(max(args.sizes))] + (["--no-progress"] if args.no_progress else [])
    with tempfile.TemporaryDirectory() as tmp:
        rc = bench.main(bench_args + ["--out", tmp])
        (path,) = glob.glob(os.path.join(tmp, "*.json"))  # bench writes one record: <device>.json
        record = BenchRecord.read(path)
    record.command = ("python -m gemm_lessons.teaching.lesson05_steps " + " ".join(argv if argv is not None else sys.argv[1:])
                      + " (= python -m gemm_lessons.runs.bench " + " ".join(bench_args) + ")").replace("  ", " ")
    dest = record_path(record.device.name, args.out)
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    print("wrote", record.write(dest))
    return rc


if __name__ == "__main__":
    sys.exit(main())
