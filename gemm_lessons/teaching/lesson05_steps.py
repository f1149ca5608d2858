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

from gemm_lessons.core import backend, tables
from gemm_lessons.records import results
from gemm_lessons.records.schema import BenchRecord, Device

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

    def issue_reading(self):
        """Nothing to read: the message says why."""
        return ""

    def plot(self, ax=None):
        """Nothing to draw: the message says why."""
        return None


# --- one step, and all of them --------------------------------------------------------------

def _comparison(kernels, size, record):
    from gemm_lessons.teaching import measure_step

    if not backend.SIMULATOR:
        return measure_step.compare(kernels, size=size)
    if record is None:
        return None
    return measure_step.recorded(list(kernels) + ["cublas"], size, record)


def _tflops(row):
    return row.gflops / 1e3


@dataclass
class StepResult:
    """One step against the step before it, timed in the same run (measure_step.Comparison)."""
    name: str
    comparison: object

    def _repr_markdown_(self):
        c, before = self.comparison, previous(self.name)
        row = next((r for r in c.rows if r.kernel == self.name), None)
        if row is None:
            return f"**{self.name}**: not timed at {'x'.join(map(str, c.size))} ({c.source})."
        text = (f"**{self.name}** ({step(self.name).change}): **{_tflops(row):.2f} TFLOPS** at "
                f"{'x'.join(map(str, c.size))} (p10-p90 {row.gflops_p10 / 1e3:.2f}-{row.gflops_p90 / 1e3:.2f})")
        if before is not None and c.gflops(before):
            text += (f", **{c.speedup(self.name, before):.2f}x** the step before, `{before}` "
                     f"({c.gflops(before) / 1e3:.2f} TFLOPS, timed in the same run)")
        if row.pct_cublas is not None:
            text += f"; {row.pct_cublas:.1f}% of cuBLAS"
        return text + f". {c.source[0].upper() + c.source[1:]}."

    __repr__ = _repr_markdown_


def measure_step(name, kernels=None, size=SIZE, record=None, device=None):
    """Step ``name`` and the step before it with cuBLAS, as a sentence: on a GPU timed now
    (``kernels``: name -> callable for both, by default the package's rungs), on the simulator
    from the steps' record of ``device`` (``record``, else
    results/experiments/lesson05-steps-<device>.json), or NotRecorded."""
    from gemm_lessons.kernels import ladder

    names = [n for n in (previous(name), name) if n]
    if kernels is None or set(kernels) != set(names):
        if kernels is not None:
            raise ValueError(f"measure_step({name!r}) times {names}: pass a kernel for each, got {sorted(kernels)}")
        kernels = {n: {**ladder.SGEMM, **ladder.VARIANTS}[n] for n in names}
    if backend.SIMULATOR:
        record = record or load(device)
    c = _comparison(kernels, size, record)
    if c is None:
        return NotRecorded(f"the speed of `{name}`", record_path(device))
    return StepResult(name, c)


@dataclass
class Summary:
    """Every step at one size, cuBLAS for scale, and each step's share of the whole jump."""
    comparison: object  # measure_step.Comparison of every step and cuBLAS, one run
    facts: dict = None  # kernel -> compiler facts (compiler_facts.kernel_facts), where known

    def rows(self):
        """(kernel, change, TFLOPS, % of cuBLAS, x the step before, share of the jump in %)
        for every timed step; the share is the step's TFLOPS gain over the gain from the first
        step to the last (so the shares add up to 100%)."""
        c = self.comparison
        timed = [n for n in NAMES if c.gflops(n)]
        total = (c.gflops(NAMES[-1]) or 0) - (c.gflops(NAMES[0]) or 0)
        out = []
        for i, n in enumerate(timed):
            r = next(r for r in c.rows if r.kernel == n)
            before = timed[i - 1] if i else None
            factor = c.speedup(n, before) if before else None
            share = 100 * (c.gflops(n) - c.gflops(before)) / total if before and total else None
            out.append((n, step(n).change, _tflops(r), r.pct_cublas, factor, share))
        return out

    def per_slice(self, name):
        """Instructions per slice in the compiled main loop (the code, not a measurement): the
        loop around the k-step loop once plus the k-step loop BK times, and FFMA's share of
        them; None where the facts do not show a k-step loop of 64 FFMA."""
        loop = ((self.facts or {}).get(name) or {}).get("loop")
        if not loop or loop.get("outer_rest") is None or loop["inner_FFMA"] * BK != FFMA_PER_SLICE:
            return None
        n = loop["outer_rest"] + BK * loop["inner"]
        return n, 100 * FFMA_PER_SLICE / n

    def _repr_markdown_(self):
        c = self.comparison
        cub = c.gflops("cublas")
        rows = []
        for n, change, t, pct, factor, share in self.rows():
            ps = self.per_slice(n)
            rows.append([f"`{n}`", change, f"{t:.2f}", f"{pct:.1f}%" if pct is not None else "",
                         f"{factor:.2f}x" if factor else "", f"{share:+.0f}%" if share is not None else "",
                         f"{ps[0]} ({ps[1]:.0f}% FFMA)" if ps else ""])
        if cub:
            rows.append(["**cuBLAS**", "for scale", f"{cub / 1e3:.2f}", "100.0%", "", "", ""])
        first, last = c.gflops(NAMES[0]), c.gflops(NAMES[-1])
        head = (f"**Lesson 05 in steps, SGEMM {'x'.join(map(str, c.size))}**, {c.source}"
                + (f": from `{NAMES[0]}` to `{NAMES[-1]}`, {first / 1e3:.2f} to {last / 1e3:.2f} TFLOPS, "
                   f"{last / first:.2f}x in all." if first and last else "."))
        return head + "\n\n" + tables.markdown(
            ["step", "change", "TFLOPS", "% of cuBLAS", "x the step before", "share of the jump",
             "instructions per slice (compiled main loop)"], rows, "llrrrrr")

    __repr__ = _repr_markdown_

    def issue_reading(self):
        """Markdown text: each step against the ceiling issue slots alone would set (FFMA's share of
        the instructions per slice x the FP32 peak: one instruction per scheduler per cycle),
        and the steps whose speed and FFMA share moved apart (more than 2 % either way)."""
        peak = self.comparison.peak_gflops
        rows, shares = [], []
        for n, _, t, _, _, _ in self.rows():
            ps = self.per_slice(n)
            if ps and peak:
                ceiling = ps[1] / 100 * peak / 1e3
                rows.append([f"`{n}`", f"{ps[1]:.0f}%", f"{ceiling:.1f}", f"{t:.2f}", f"{100 * t / ceiling:.0f}%"])
                shares.append((n, ps[1], t, ceiling))
        if not rows:
            return ""
        apart = []
        for (a, sa, ta, _), (b, sb, tb, _) in zip(shares, shares[1:]):
            gained, rose = tb / ta - 1 > 0.02, sb / sa - 1 > 0.02
            if gained != rose:
                apart.append(f"`{b}` {100 * (tb / ta - 1):+.0f}% in speed with FFMA's share "
                             f"{'up' if rose else 'about the same'} ({sa:.0f}% to {sb:.0f}%)")
        text = ("If issue slots alone set the pace, a step could reach at most FFMA's share of the "
                f"instructions times the FP32 peak ({peak / 1e3:.1f} TFLOPS), {self.comparison.source}.\n\n"
                + tables.markdown(["step", "FFMA share", "issue ceiling (TFLOPS)", "TFLOPS", "of that ceiling"],
                                  rows, "lrrrr"))
        name, _, t, ceiling = max(shares, key=lambda s: s[2] / s[3])
        text += f"\n\nNo step reached more than {100 * t / ceiling:.0f}% of its issue ceiling (`{name}`)."
        if apart:
            text += (" Where speed and FFMA's share moved apart (one changed by more than 2 % of its value, the "
                     "other did not): " + "; ".join(apart) + ".")
        return text

    def plot(self, ax=None):
        """Bars of TFLOPS per step, cuBLAS and the FP32 peak as lines (plots.ladder)."""
        import matplotlib.pyplot as plt

        from gemm_lessons.teaching import plots

        c = self.comparison
        record = BenchRecord(device=Device(name="", peak_gflops=c.peak_gflops), date="",
                             sgemm=[r for r in c.rows if r.gflops is not None])
        if ax is None:
            _, ax = plt.subplots(figsize=(8, 4.5))
        plots.ladder(record, size=c.size, ax=ax, kernels=[n for n in NAMES if c.gflops(n)])
        ax.set_title(f"Lesson 05 in steps, SGEMM {'x'.join(map(str, c.size))}\n({c.source})", fontsize=9)
        plt.setp(ax.get_xticklabels(), ha="right", rotation_mode="anchor")
        ax.figure.tight_layout()
        return ax


def summary(size=SIZE, record=None, device=None):
    """Every step (the package's kernels) and cuBLAS at ``size``: on a GPU timed now in one
    process, on the simulator from the steps' record of ``device``, or NotRecorded.  The
    compiler facts come from the same place (the record stores them)."""
    from gemm_lessons.instruments import compiler_facts
    from gemm_lessons.kernels import ladder

    if backend.SIMULATOR:
        record = record or load(device)
        if record is None:
            return NotRecorded("every step's speed", record_path(device))
        return Summary(_comparison(NAMES, size, record), dict(record.compiler or {}))
    rungs = {**ladder.SGEMM, **ladder.VARIANTS}
    c = _comparison({n: rungs[n] for n in NAMES}, size, None)
    return Summary(c, {n: compiler_facts.kernel_facts(rungs[n].kernel) for n in NAMES})


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
