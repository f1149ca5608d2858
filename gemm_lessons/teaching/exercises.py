"""Exercise cells with an automatic, friendly check.

A teacher notebook writes the solution between ``### BEGIN SOLUTION`` and ``### END
SOLUTION`` and ends the cell with ``exercises.check("<id>", answer)``.  ``python -m
gemm_lessons.course.student`` builds the student notebooks, with each solution replaced by a skeleton.
A check never raises: a wrong answer, a missing one or a crashing kernel all come back as
feedback that says what to look at.
"""
import collections
import contextlib
import functools
import inspect
import threading
import time
import traceback
import warnings
from dataclasses import dataclass

import numpy as np

from gemm_lessons.core import backend
from gemm_lessons.model import counting
from gemm_lessons.measure.problems import SIM_SHAPES, check as check_problem
from gemm_lessons.kernels.sgemm import naive, reg1d, vec

# A student's kernel on the simulator gets this long before the check stops it.
KERNEL_TIME_LIMIT_S = 120.0


class KernelTimeout(Exception):
    """Raised inside a simulated kernel that ran past its time limit."""

_CHECKS = {}


@dataclass
class Feedback:
    exercise: str
    ok: bool
    message: str

    def __bool__(self):
        return self.ok

    def __str__(self):
        return f"{'Correct' if self.ok else 'Not yet'} [{self.exercise}]: {self.message}"

    __repr__ = __str__

    def _repr_markdown_(self):
        return ("✅ " if self.ok else "❌ ") + str(self)


def exercise(exercise_id, hint):
    """Register ``fn(answer) -> (ok, message)`` as the checker for ``exercise_id``."""
    def register(fn):
        _CHECKS[exercise_id] = (fn, hint)
        return fn
    return register


def check(exercise_id, answer, time_limit=KERNEL_TIME_LIMIT_S):
    """Check a student's answer; returns Feedback (shown as a green or red line).  On the
    simulator a kernel still running after ``time_limit`` seconds is stopped.  Nothing goes to
    stderr: numba's performance warnings about the check's tiny launches are dropped, other
    warnings raised meanwhile are quoted in the feedback (see _warnings_into_feedback)."""
    with _warnings_into_feedback() as caught:
        feedback = _check(exercise_id, answer, time_limit)
    if caught:
        feedback.message += " (Warned while checking: " + "; ".join(caught) + ")"
    return feedback


def _check(exercise_id, answer, time_limit):
    if exercise_id not in _CHECKS:
        return Feedback(exercise_id, False, f"unknown exercise; known: {', '.join(sorted(_CHECKS))}")
    fn, hint = _CHECKS[exercise_id]
    if answer is None or answer is Ellipsis:
        return Feedback(exercise_id, False, "no answer yet: replace the placeholder with your answer. Hint: " + hint)
    try:
        ok, message = _with_time_limit(lambda: fn(answer), time_limit)
    except KernelTimeout:
        return Feedback(exercise_id, False,
                        f"stopped after {time_limit:g} s on the simulator: does a loop never end (a loop "
                        "variable that never changes, a while without an exit, a guard that skips "
                        "the increment)? Hint: " + hint)
    except Exception as e:  # a broken kernel or answer must give feedback, not a traceback
        tb = traceback.extract_tb(e.__traceback__)
        where = f" (line {tb[-1].lineno} of {tb[-1].name})" if tb else ""
        return Feedback(exercise_id, False,
                        f"your answer raised {type(e).__name__}: {e}{where}. Hint: {hint}")
    if not ok:
        if not backend.SIMULATOR and "never written" in message and _still_unwritten(answer):
            message += (" Your kernel still has the `raise NotImplementedError` of the part to write: on a GPU"
                        " a raise inside a kernel does not stop it with an error, it just leaves C unwritten.")
        message += " Hint: " + hint
    return Feedback(exercise_id, ok, message)


def _written_function(kernel):
    """The Python function a student wrote: under numba's kernel and @unrolled's expansion."""
    fn = getattr(kernel, "py_func", kernel)
    return getattr(fn, "__unrolled_from__", fn)


def _still_unwritten(answer):
    """Whether a kernel's Python source still holds the skeleton's NotImplementedError."""
    try:
        return "NotImplementedError" in inspect.getsource(_written_function(answer))
    except (OSError, TypeError):
        return False


def ids():
    return sorted(_CHECKS)


def _performance_warning_classes():
    """numba's NumbaPerformanceWarning classes (numba-cuda has its own besides numba's)."""
    classes = []
    for module in ("numba.core.errors", "numba.cuda.core.errors"):
        try:
            classes.append(__import__(module, fromlist=["NumbaPerformanceWarning"]).NumbaPerformanceWarning)
        except (ImportError, AttributeError):
            pass
    return classes


@contextlib.contextmanager
def _warnings_into_feedback(limit=3):
    """Collect the warnings raised inside the block instead of printing them, and yield them as
    a list of "Category: message" lines (at most ``limit``, each once).

    A check's output must not go to stderr: in an nbgrader notebook the check runs in a graded
    cell, and nbgrader gives 0 points to a cell that wrote to stderr.  numba's performance
    warnings ("Grid size 1 will likely result in GPU under-utilization due to low occupancy",
    a host array copied to the device) are about the check's own deliberately tiny launches,
    so they are dropped; anything else (numba compiling the student's kernel, say) is worth
    reading, so it goes into the feedback.  The caller's filters still apply (``ignore`` stays
    ignored); the performance warnings are dropped even after ``warnings.resetwarnings()``
    undid the filter gemm_lessons/__init__.py installs."""
    caught = []
    with warnings.catch_warnings(record=True) as records:
        for category in _performance_warning_classes():
            warnings.simplefilter("ignore", category)
        warnings.filterwarnings("ignore", message=r".*Grid size .* will likely result in GPU under-utilization")
        try:
            yield caught
        finally:
            for w in records:
                line = f"{w.category.__name__}: {w.message}"
                if line not in caught and len(caught) < limit:
                    caught.append(line)


def _with_time_limit(fn, seconds):
    """Run fn(); on the simulator, kernel threads started meanwhile raise KernelTimeout once
    ``seconds`` have passed (checked on every line they execute outside the libraries)."""
    if not backend.SIMULATOR or not seconds:
        return fn()
    deadline = time.monotonic() + seconds

    def local(frame, event, arg):
        if time.monotonic() > deadline:
            raise KernelTimeout(f"kernel ran longer than {seconds} s")
        return local

    def global_tracer(frame, event, arg):
        name = frame.f_code.co_filename
        if "site-packages" in name or name.startswith("<frozen") or name.endswith("threading.py"):
            return None  # trace only the kernel's own code: the libraries run untraced
        return local

    threading.settrace(global_tracer)  # applies to the simulator's threads, started inside fn
    try:
        return fn()
    finally:
        threading.settrace(None)


def _close(a, b, rel=1e-6):
    return abs(a - b) <= rel * max(1.0, abs(b))


def _number(ans, expected, what):
    try:
        value = float(ans)
    except (TypeError, ValueError):
        return False, f"expected a number for {what}, got {ans!r}."
    if _close(value, expected, 1e-3):
        return True, f"{what} = {expected:,.6g}."
    return False, f"{value:,.6g} is not {what}."


def _kernel_passes(launch, answer):
    """Run a student's kernel on two awkward shapes (simulator-sized) with alpha and beta."""

    run = functools.partial(launch, kernel=answer)
    shapes = []
    for M, N, K, alpha, beta in SIM_SHAPES:
        res = check_problem(run, M, N, K, alpha, beta, name="your kernel")
        if not res.passed:
            again = check_problem(run, M, N, K, alpha, beta, name="your kernel")
            if (again.rel_error, again.unwritten) != (res.rel_error, res.unwritten):
                return False, (res.message() + ". The result changed between two runs on the same input: "
                               "a race. Is a cuda.syncthreads() missing between writing shared memory "
                               "and reading it (or before overwriting it)?")
            return False, res.message()
        shapes.append(f"{M}x{N}x{K}")
    return True, f"your kernel matches the float64 reference on {' and '.join(shapes)} (with alpha and beta)."


# ----------------------------------------------------------------------------- primer (00a)
_LAUNCH_SIZES = (1, 129, 300)


@exercise("00a-launch", "blocks = (n + threads - 1) // threads rounds up to whole blocks; inside the kernel, "
                        "i = cuda.grid(1) and `if i < out.size:` before touching any array.")
def _(ans):
    import numpy as np

    from gemm_lessons.core import backend
    from gemm_lessons.measure.problems import POISON

    rng = np.random.default_rng(7)
    for n in _LAUNCH_SIZES:
        x = rng.standard_normal(n).astype(np.float32)
        y = rng.standard_normal(n).astype(np.float32)
        pad = 256  # room after the output: a write past the end lands here (on a GPU nothing stops it)
        if backend.SIMULATOR:
            out = np.full(n + pad, POISON, np.float32)
            ans(x, y, out[:n])
            got = out
        else:
            from numba import cuda

            out = cuda.to_device(np.full(n + pad, POISON, np.float32))
            ans(cuda.to_device(x), cuda.to_device(y), out[:n])
            got = out.copy_to_host()
        past = int(np.count_nonzero(got[n:].view(np.uint32) != np.float32(POISON).view(np.uint32)))
        if past:
            return False, f"for n = {n}, {past} value(s) were written past the end of out: is the guard missing?"
        unwritten = int(np.count_nonzero(got[:n].view(np.uint32) == np.float32(POISON).view(np.uint32)))
        if unwritten:
            return False, f"for n = {n}, {unwritten} element(s) of out were never written: does the grid cover n?"
        want = 2.0 * x.astype(np.float64) - y.astype(np.float64)
        tol = 4 * np.finfo(np.float32).eps * (2 * np.abs(x) + np.abs(y)).astype(np.float64)
        bad = np.abs(got[:n] - want) > tol
        if bad.any():
            i = int(np.argmax(bad))
            return False, f"for n = {n}, out[{i}] = {got[i]!r}, expected 2*x[{i}] - y[{i}] = {want[i]!r}."
    return True, (f"out = 2x - y is right for n = {', '.join(map(str, _LAUNCH_SIZES))}, every element written "
                  "and nothing written past the end.")


@exercise("00a-occupancy", "Registers: a warp needs registers x 32, rounded up to a multiple of 256; "
                           "shared memory: each block also reserves 1 KB (1,024 bytes) besides its own; "
                           "threads: 2,048 per SM; blocks: 32 per SM. The smallest of the four counts wins.")
def _(ans):
    from gemm_lessons.instruments.compiler_facts import blocks_per_sm

    try:
        blocks, limiter = ans
    except (TypeError, ValueError):
        return False, "answer with a pair: (blocks per SM, the resource that limits it)."
    from gemm_lessons.teaching.hierarchy import STATIC_SHARED_BYTES_PER_BLOCK as static
    from gemm_lessons.instruments.compiler_facts import SM_LIMITS_CC90 as lm

    want = blocks_per_sm(40, 57 * 1024, 128)
    unreserved = blocks_per_sm(40, 57 * 1024, 128, limits=dict(lm, shared_reserved_per_block=0))[0]
    if (blocks, str(limiter).strip().lower()) == (want[0], want[1]):
        reserved = lm["shared_reserved_per_block"] // 1024
        return True, (f"{want[0]} blocks per SM, limited by {want[1]}: each block takes 57 KiB + {reserved} KiB "
                      f"reserved, and {lm['shared_bytes'] // 1024} KiB hold {want[0]} of those (without the reserved "
                      f"KiB it would be {unreserved}). 57 KiB is more than a block may declare with "
                      f"`cuda.shared.array` ({static // 1024} KiB); it needs dynamic shared memory, with the opt-in.")
    if blocks == want[0]:
        return False, f"{blocks} is right, but the limiting resource is not {limiter!r}."
    return False, f"{(blocks, limiter)} is not it."


# ----------------------------------------------------------------------------- lesson 00
FLOPS_00 = (300, 200, 100)  # M, N, K of 00-flops: a shape the lesson's table does not print
INTENSITY_00 = (4096, 4096, 512)  # M, N, K of 00-intensity (beta = 0): not square, not in the table


@exercise("00-flops", "K multiplies and K-1 adds per element, then alpha*, beta* and one more add.")
def _(ans):
    M, N, K = FLOPS_00
    return _number(ans, counting.sgemm_flops(M, N, K, alpha_beta=True),
                   f"the FLOP count of alpha*A@B + beta*C for M={M}, N={N}, K={K}")


@exercise("00-intensity", "FLOP = 2MNK; bytes = 4 x (MK + KN + MN) when beta == 0.")
def _(ans):
    M, N, K = INTENSITY_00
    return _number(ans, counting.sgemm_intensity(M, N, K),
                   f"the arithmetic intensity of a {M}x{N}x{K} SGEMM with beta = 0 (FLOP per byte)")


# ----------------------------------------------------------------------------- lesson 01
SECTORS_BLOCK_X = 16  # 01-sectors: blocks 16 threads wide (16 x 16), the coalesced mapping, K = N = 4096


@exercise("01-sectors", "A warp is 32 consecutive thread numbers, threadIdx.x fastest: with blocks 16 wide "
                        "it holds two rows of 16 threads. A sector is 32 bytes; count the distinct sectors "
                        "the 32 threads touch in A and in B.")
def _(ans):
    from gemm_lessons.teaching.figures import naive_warp_addresses, sectors

    try:
        a, b = ans
    except (TypeError, ValueError):
        return False, "answer with a pair: (sectors of A, sectors of B)."
    addr_a, addr_b = naive_warp_addresses(True, K=4096, N=4096, block_x=SECTORS_BLOCK_X)
    want = (sectors(addr_a), sectors(addr_b))
    if (a, b) == want:
        return True, (f"A: the warp's threads sit on {len(set(addr_a))} rows of C, so they read "
                      f"{len(set(addr_a))} floats of A, 4 x 4096 bytes apart: {want[0]} sectors; B: "
                      f"{len(set(addr_b))} neighbouring floats (64 bytes), read by both rows: {want[1]} sectors. "
                      f"{sum(want)} in all, against 1 + 4 with blocks 32 wide.")
    if (a, b) == (1, 4):
        return False, "(1, 4) is the warp of a block 32 threads wide; here a warp spans two rows of C."
    return False, f"{(a, b)} is not it."


# ----------------------------------------------------------------------------- lesson 02
LOADS_02 = (1024, 2048, 512, 64, 32)  # 02-loads: M, N, K and a BM x BN tile the lesson does not count


@exercise("02-loads", "A block of BM x BN outputs reads BM*K values of A and K*BN of B; there are "
                      "(M/BM)(N/BN) blocks.")
def _(ans):
    M, N, K, BM, BN = LOADS_02
    return _number(ans, counting.tiled_global_loads(M, N, K, BM, BN),
                   f"the global loads of a {M}x{N}x{K} SGEMM with {BM}x{BN} tiles")


# ----------------------------------------------------------------------------- lesson 04
RATIO_04 = ((8, 4), (32, 1))  # 04-ratio: two patches of 32 results, not in the lesson's printed table


@exercise("04-ratio", "x*y products per k-step need x values of A and y of B: ratio = 2xy/(x+y).")
def _(ans):
    (x1, y1), (x2, y2) = RATIO_04
    try:
        got = tuple(float(v) for v in ans)
        assert len(got) == 2
    except (TypeError, ValueError, AssertionError):
        return False, f"answer with a pair: (ratio for {x1}x{y1}, ratio for {x2}x{y2})."
    want = (counting.compute_to_memory_ratio(x1, y1), counting.compute_to_memory_ratio(x2, y2))
    if _close(got[0], want[0], 1e-3) and _close(got[1], want[1], 1e-3):
        return True, (f"{x1}x{y1} gives {want[0]:.3g} FLOP per value read, {x2}x{y2} only {want[1]:.3g}: for the "
                      "same number of results, the squarer patch reuses more.")
    return False, f"({got[0]:g}, {got[1]:g}) is not right."


# ----------------------------------------------------------------------------- lesson 05
@exercise("05-stage-a", "256 threads, a 128 x 8 tile: 2 float4 per row. "
                        "Return (row, first column) of the float4 that thread tid stages.")
def _(ans):

    for tid in range(vec.THREADS):
        want = (tid // (vec.BK // 4), (tid % (vec.BK // 4)) * 4)
        got = tuple(ans(tid))
        if got != want:
            return False, f"for tid={tid} you return {got}, expected {want}."
    covered = {tuple(ans(t)) for t in range(vec.THREADS)}
    if len(covered) != vec.BM * vec.BK // 4:
        return False, "some float4 of the tile are staged twice and others never."
    return True, "every float4 of the 128x8 A tile is staged exactly once, each by one 16-byte load."


# ---- lessons 01-04 kernel exercises ---------------------------------------------------------
# The student writes (part of) a kernel; the check runs it twice over.  First the answer: on
# SIM_SHAPES against the float64 reference (a failure starts "Wrong result:").  Then the
# technique, with the access log on the CUDA simulator: sectors per warp-wide read (01), global
# reads counted element by element (02-04), shared-memory loads per thread (03, 04).
# A right answer without the technique starts "Right result, but ...".  On a machine with a GPU
# the answer is checked on the GPU and the instrument runs the kernel's source in a child
# process on the simulator (numba chooses GPU or simulator once per process).
import json  # noqa: E402
import math  # noqa: E402
import textwrap  # noqa: E402

from gemm_lessons.core.array_checks import sgemm_shapes  # noqa: E402
from gemm_lessons.kernels.sgemm import reg2d  # noqa: E402

THREADS_1D = 256  # 01-kernel: threads per block of the one-dimensional launch
SECTOR_SHAPE_01 = (40, 64, 16)  # M, N, K where 01-kernel's sectors are counted
SECTORS_PER_KSTEP_LIMIT = 8  # coalesced: 1 (A) + 4 (B) = 5; the swapped mapping: 32 + 1 = 33


def launch_1d(A, B, C, alpha=1.0, beta=0.0, kernel=None):
    """01-kernel's launch: one thread per element of C in one dimension, THREADS_1D threads per
    block and ceil(MN / THREADS_1D) blocks."""
    M, N, K = sgemm_shapes(A, B, C)
    kernel[(M * N + THREADS_1D - 1) // THREADS_1D, THREADS_1D](A, B, C, np.float32(alpha), np.float32(beta))


def launch_tiled(A, B, C, alpha=1.0, beta=0.0, kernel=None):
    """02-kernel's launch: ``kernel.tile = (BM, BN, BK)``; blocks of BN x BM threads
    (threadIdx.x along the BN columns of the tile), one block per BM x BN tile of C."""
    BM, BN, BK = _tile(kernel, 3, "(BM, BN, BK)")
    M, N, K = sgemm_shapes(A, B, C)
    grid = ((N + BN - 1) // BN, (M + BM - 1) // BM)
    kernel[grid, (BN, BM)](A, B, C, np.float32(alpha), np.float32(beta))


def launch_reg1d(A, B, C, alpha=1.0, beta=0.0, kernel=None):
    """03-kernel's launch: ``kernel.tile = (BM, BN, BK, TN)``; BM*BN/TN threads per block."""
    _tile(kernel, 4, "(BM, BN, BK, TN)")
    reg1d.sgemm(A, B, C, alpha, beta, kernel=kernel)


def launch_reg2d(A, B, C, alpha=1.0, beta=0.0, kernel=None):
    """04-kernel's launch: ``kernel.tile = (BM, BN, BK, TM, TN)``; (BM/TM)(BN/TN) threads."""
    _tile(kernel, 5, "(BM, BN, BK, TM, TN)")
    reg2d.sgemm(A, B, C, alpha, beta, kernel=kernel)


_LAUNCHERS = {"01": launch_1d, "02": launch_tiled, "03": launch_reg1d, "04": launch_reg2d}


def _tile(kernel, n, names):
    tile = getattr(kernel, "tile", None)
    if tile is None or len(tile) != n:
        raise ValueError(f"the kernel needs its tile shape as an attribute: kernel.tile = {names} "
                         "(the exercise cell sets it; the launch reads it)")
    return tuple(int(v) for v in tile)


def count_shape(tile):
    """Where 02-04 count: two tiles in every direction, (2BM, 2BN, 2BK), so the tiles divide
    M, N and K and the load formula is exact."""
    BM, BN, BK = tile[:3]
    return 2 * BM, 2 * BN, 2 * BK


def technique_facts(lesson, kernel, in_child=None):
    """What the access log (instruments/access_log.py) sees ``kernel`` do in exercise ``lesson``
    ("01".."04"), on the simulator: in this process, or (``in_child``, the default on a GPU) in
    a child process that rebuilds the kernel from its source.  01: the 32-byte sectors per
    warp-wide read of A and of B at SECTOR_SHAPE_01.  02-04: at count_shape(kernel.tile), the
    elements of A and B read from global memory, and the shared-memory loads a thread of warp 0
    of block 0 makes per k-step."""
    if in_child is None:
        in_child = not backend.SIMULATOR
    if in_child:
        spec = json.dumps(_kernel_spec(kernel))
        code = ("import json, gemm_lessons.teaching.exercises as e; "
                f"print(json.dumps(e.technique_facts({lesson!r}, e.rebuild_kernel(json.loads({spec!r})))))")
        from gemm_lessons.instruments.simulator_process import run_on_simulator
        return run_on_simulator(code, f"the {lesson}-kernel instrument", timeout=KERNEL_TIME_LIMIT_S)
    from gemm_lessons.instruments import access_log
    from gemm_lessons.measure.problems import random_matrix

    launch = _LAUNCHERS[lesson]
    M, N, K = SECTOR_SHAPE_01 if lesson == "01" else count_shape(
        _tile(kernel, {"02": 3, "03": 4, "04": 5}[lesson], "the tile"))
    rng = np.random.default_rng(0)
    arrays = dict(A=random_matrix(M, K, rng), B=random_matrix(K, N, rng), C=np.zeros((M, N), np.float32))
    log, _ = access_log.log(lambda A, B, C: launch(A, B, C, kernel=kernel), arrays)
    if lesson == "01":
        facts = {"shape": (M, N, K)}
        for name in ("A", "B"):
            sizes = [i.sectors for i in log.global_instructions(name) if i.op == "ld"]
            facts[name] = {"reads": len(sizes), "sectors": sum(sizes),
                           "per_read": sum(sizes) / len(sizes) if sizes else 0.0}
        return facts
    reads = collections.Counter(e.array for e in log.events if e.kind == "global" and e.op == "ld")
    warp0 = [i for i in log.shared_trace(merge=False).instructions if i.warp == 0 and i.op == "ld"]
    return {"shape": (M, N, K), "A_reads": reads["A"], "B_reads": reads["B"],
            "shared_loads_per_kstep": len(warp0) / K}


def _kernel_spec(kernel):
    """The source and the number constants of a kernel, to rebuild it in another process."""
    fn = getattr(kernel, "py_func", kernel)
    lines = textwrap.dedent(inspect.getsource(fn)).split("\n")
    while lines and not lines[0].lstrip().startswith("def "):
        lines.pop(0)  # the decorators: the child applies cuda.jit itself
    constants = {}
    names = dict(zip(fn.__code__.co_freevars, (c.cell_contents for c in fn.__closure__ or ())))
    names.update({n: fn.__globals__[n] for n in fn.__code__.co_names if n in fn.__globals__})
    for name, value in names.items():
        if isinstance(value, (bool, int, float)) and not isinstance(value, np.generic):
            constants[name] = value
    tile = getattr(kernel, "tile", None)
    return {"source": "\n".join(lines), "name": fn.__name__, "constants": constants,
            "tile": list(tile) if tile is not None else None}


def rebuild_kernel(spec):
    """The kernel described by ``_kernel_spec``, compiled by this process's cuda.jit."""
    from numba import cuda, float32

    ns = {"cuda": cuda, "np": np, "numpy": np, "float32": float32, "math": math, **spec["constants"]}
    exec(compile(spec["source"], f"<kernel {spec['name']}>", "exec"), ns)
    kernel = cuda.jit(ns[spec["name"]])
    if spec["tile"] is not None:
        kernel.tile = tuple(spec["tile"])
    return kernel


def _answer_first(lesson, kernel):
    """(None, "the shapes it was right on") when ``kernel`` computes the right result; else
    (False, message)."""
    ok, message = _kernel_passes(_LAUNCHERS[lesson], kernel)
    if not ok:
        return False, "Wrong result: " + message
    return None, " and ".join(f"{M}x{N}x{K}" for M, N, K, _, _ in SIM_SHAPES)


def _global_reads_ok(facts, tile, staged):
    """Compare the counted global reads with a tiled kernel's: each of the N/BN block columns
    reads all of A once, each of the M/BM block rows all of B."""
    M, N, K = facts["shape"]
    BM, BN = tile[:2]
    want_a, want_b = M * K * (N // BN), K * N * (M // BM)
    if facts["A_reads"] <= want_a and facts["B_reads"] <= want_b:
        return True, (f"{facts['A_reads'] + facts['B_reads']:,} global reads at {M}x{N}x{K} "
                      f"(MNK(1/{BM} + 1/{BN}) = {want_a + want_b:,})")
    over = " and ".join(f"{name} {got:,} times (a tiled kernel: {want:,})"
                        for name, got, want in (("A", facts["A_reads"], want_a), ("B", facts["B_reads"], want_b))
                        if got > want)
    return False, (f"Right result, but {staged}: at {M}x{N}x{K} (counted on the simulator) your kernel reads {over}. "
                   f"Staged through shared-memory tiles, a kernel reads MNK(1/{BM} + 1/{BN}) = {want_a + want_b:,} "
                   "elements: each block copies its tiles of A and B from global memory once, then computes "
                   "from shared memory only.")


@exercise("01-kernel", "a warp is 32 consecutive values of i = cuda.grid(1): make consecutive i walk along a "
                       "row of C (the contiguous dimension of C and of B), and guard i < M * N.")
def _(ans):
    ok, shapes = _answer_first("01", ans)
    if ok is False:
        return ok, shapes
    f = technique_facts("01", ans)
    M, N, K = f["shape"]
    a, b = f["A"]["per_read"], f["B"]["per_read"]
    if a + b > SECTORS_PER_KSTEP_LIMIT:
        return False, (f"Right result, but not coalesced: at {M}x{N}x{K} (traced on the simulator) a warp's "
                       f"read of A touches {a:.3g} sectors on average and its read of B {b:.3g}: {a + b:.3g} "
                       "sectors per k-step, where a coalesced mapping needs 5 (1 for the float of A the warp "
                       "shares, 4 for 32 neighbouring floats of B). Which elements do 32 consecutive i get?")
    return True, (f"right result on {shapes}, and coalesced: at {M}x{N}x{K} a warp touches "
                  f"{a:.3g} sector of A and {b:.3g} of B per k-step ({a + b:.3g} of the 32-byte sectors; "
                  "the swapped mapping needs 33).")


@exercise("02-kernel", "per slice: each thread copies one value of A (sA[ty, tx]) and BK/BM values of B "
                       "(rows ty, ty + BM, ...) from global into shared memory, zeros outside the matrices; "
                       "cuda.syncthreads(); the BK products from sA and sB; cuda.syncthreads().")
def _(ans):
    ok, shapes = _answer_first("02", ans)
    if ok is False:
        return ok, shapes
    tile = _tile(ans, 3, "(BM, BN, BK)")
    ok, message = _global_reads_ok(technique_facts("02", ans), tile, "the tiles are not staged in shared memory")
    if not ok:
        return ok, message
    return True, (f"right result on {shapes}; staged in shared memory: {message}, counted element by "
                  "element on the simulator.")


@exercise("03-kernel", "for each k of the slice, one of the two factors is the same for all TN results of the "
                       "thread (which?): read it from shared memory once, into a register, and update the TN "
                       "accumulators from it and the TN values of the other factor.")
def _(ans):
    ok, shapes = _answer_first("03", ans)
    if ok is False:
        return ok, shapes
    tile = _tile(ans, 4, "(BM, BN, BK, TN)")
    TN = tile[3]
    f = technique_facts("03", ans)
    ok, reads = _global_reads_ok(f, tile, "it reads global memory where it should read shared memory")
    if not ok:
        return ok, reads
    loads = f["shared_loads_per_kstep"]
    if loads > 1 + TN:
        return False, (f"Right result, but the register reuse is missing: per k-step each thread makes {loads:g} "
                       f"shared-memory loads for its {TN} FMAs ({loads / TN:.3g} per FMA, traced on the simulator). "
                       f"Read the value of sA once into a register and use it for all {TN} products: "
                       f"1 + {TN} = {1 + TN} loads, {(1 + TN) / TN:.3g} per FMA.")
    return True, (f"right result on {shapes}; {reads}; {loads:g} shared-memory loads per k-step for {TN} FMAs "
                  f"({loads / TN:.3g} per FMA), traced on the simulator.")


@exercise("04-kernel", "for each k: TM values of sA (column k, this thread's rows) into a_reg, TN values of "
                       "sB (row k, this thread's columns) into b_reg, then acc[i, j] += a_reg[i] * b_reg[j] "
                       "for all TM x TN pairs.")
def _(ans):
    ok, shapes = _answer_first("04", ans)
    if ok is False:
        return ok, shapes
    tile = _tile(ans, 5, "(BM, BN, BK, TM, TN)")
    TM, TN = tile[3:]
    f = technique_facts("04", ans)
    ok, reads = _global_reads_ok(f, tile, "it reads global memory where it should read shared memory")
    if not ok:
        return ok, reads
    loads = f["shared_loads_per_kstep"]
    if loads > TM + TN:
        return False, (f"Right result, but no 2-D register tile (outer product): per k-step each thread makes "
                       f"{loads:g} shared-memory loads for its {TM * TN} FMAs ({loads / (TM * TN):.3g} per FMA, "
                       f"traced on the simulator). Load the {TM} values of sA and the {TN} of sB into registers "
                       f"once, then form all {TM * TN} products from registers: {TM + TN} loads, "
                       f"{(TM + TN) / (TM * TN):.3g} per FMA.")
    return True, (f"right result on {shapes}; {reads}; {loads:g} shared-memory loads per k-step for {TM * TN} FMAs "
                  f"({loads / (TM * TN):.3g} per FMA), traced on the simulator.")


# ---- lessons 05-10 kernel exercises ----------------------------------------------------------
# The student writes or changes a kernel; the check runs it on small awkward shapes against the
# float64 reference, then checks the lesson's technique with the instruments: the access log
# (instruments/access_log.py: shared accesses costed by the bank model, barriers, races, the
# 32-byte sectors of global accesses) on the simulator, the SASS on a GPU.  On a GPU the
# simulator-only parts run in a child process on the kernel's own notebook cell.

# (BM, BN, threads per block) of the launch each SGEMM exercise's kernel is written for
EXERCISE_TILES = {"05-transpose-a": (64, 64, 64), "06-conflict-free": (64, 64, 64),
                  "07-double-buffer": (64, 64, 64), "08-warp-tile": (32, 128, 64)}
# K and N multiples of 4 (the kernels use 16-byte loads), M, N, K not multiples of the tiles
EXERCISE_SHAPES = [(68, 72, 20, 1.0, 0.0), (36, 132, 12, 1.5, -0.5)]
KERNEL_EXERCISES_05_10 = ("05-transpose-a", "06-conflict-free", "07-double-buffer", "08-warp-tile",
                          "09-symmetrize", "10-next-step")
TRANSPOSE_TILE = (32, 8)  # 09-symmetrize: 32 x 32 tiles, blocks of 32 x 8 threads


def _tile_launcher(exercise_id):
    BM, BN, threads = EXERCISE_TILES[exercise_id]

    def launch(A, B, C, alpha=1.0, beta=0.0, kernel=None):
        M, K = A.shape
        N = B.shape[1]
        if K % 4 or N % 4:
            raise ValueError("K and N must be multiples of 4 (16-byte loads)")
        kernel[((N + BN - 1) // BN, (M + BM - 1) // BM), threads](A, B, C, np.float32(alpha), np.float32(beta))
    return launch


def _result_right(launch, kernel, shapes=EXERCISE_SHAPES):
    """(ok, message) of running ``kernel`` through ``launch`` on ``shapes`` (as _kernel_passes)."""
    run = functools.partial(launch, kernel=kernel)
    for M, N, K, alpha, beta in shapes:
        res = check_problem(run, M, N, K, alpha, beta, name="your kernel")
        if not res.passed:
            again = check_problem(run, M, N, K, alpha, beta, name="your kernel")
            if (again.rel_error, again.unwritten) != (res.rel_error, res.unwritten):
                return False, (res.message() + ". The result changed between two runs on the same input: a race.")
            return False, "the result is wrong: " + res.message() + "."
    return True, (f"the result matches the float64 reference on "
                  f"{' and '.join(f'{M}x{N}x{K}' for M, N, K, _, _ in shapes)} (with alpha and beta)")


def _log_sgemm(exercise_id, kernel, M, N, K, seed=3):
    """Run the kernel once on the access log with an M x N x K problem."""
    from gemm_lessons.instruments import access_log

    rng = np.random.default_rng(seed)
    launch = _tile_launcher(exercise_id)
    arrays = dict(A=rng.uniform(-1, 1, (M, K)).astype(np.float32), B=rng.uniform(-1, 1, (K, N)).astype(np.float32),
                  C=np.zeros((M, N), np.float32))
    log, _ = access_log.log(lambda A, B, C: launch(A, B, C, kernel=kernel), arrays)
    return log


def _sites(trace, pick):
    """'sAT (16 instructions, 4-byte)' for the instructions of a trace that ``pick`` selects."""
    rows = collections.OrderedDict()
    for ins in trace.instructions:
        if pick(ins):
            key = (ins.array, ins.op, ins.width)
            rows[key] = rows.get(key, 0) + 1
    return "; ".join(f"{'loads from' if op == 'ld' else 'stores into'} {arr}: {n} {w}-byte instruction(s)"
                     for (arr, op, w), n in rows.items())


def _simulator_only(exercise_id, kernel, name=None):
    """On a GPU: run this exercise's check on the simulator, in a child process that executes
    the notebook cell that defined ``kernel`` (the cell must import what it uses); the check
    gets the cell's variable ``name`` (default: the kernel's own name)."""
    import json
    import linecache

    from gemm_lessons.instruments.simulator_process import run_on_simulator

    fn = _written_function(kernel)
    filename = fn.__code__.co_filename
    text = "".join(linecache.getlines(filename))
    if not text:
        return None, "(the bank tracer and the access log run on the simulator; the source of your kernel's cell was not found, so they were not run)"
    text = "\n".join(line for line in text.splitlines() if not line.startswith("exercises.check("))
    code = ("import json, linecache\nfrom gemm_lessons.teaching import exercises\n"
            f"text = {text!r}\nlinecache.cache[{filename!r}] = (len(text), None, text.splitlines(True), {filename!r})\n"
            f"ns = {{}}\nexec(compile(text, {filename!r}, 'exec'), ns)\n"
            f"fb = exercises.check({exercise_id!r}, ns[{(name or fn.__name__)!r}])\n"
            "print(json.dumps([fb.ok, fb.message]))")
    try:
        ok, message = run_on_simulator(code, "the technique check")
    except Exception as e:  # noqa: BLE001 (the GPU part has already been checked)
        return None, f"(the simulator part could not run in a child process: {str(e)[-300:]})"
    return ok, "on the CUDA simulator (in a separate process): " + message.rstrip(".")


def _on_gpu(exercise_id, kernel, right_msg, sass_part=None):
    """The GPU path of a kernel exercise: SASS facts (if any) here, the rest on the simulator."""
    msgs = [right_msg + " on this GPU"]
    if sass_part is not None:
        ok, m = sass_part(kernel)
        if not ok:
            return False, "; ".join(msgs) + ", but " + m
        msgs.append(m)
    ok, m = _simulator_only(exercise_id, kernel)
    msgs.append(m)
    return ok is not False, "; ".join(msgs) + "."


def _lds_widths(kernel):
    from gemm_lessons.instruments.compiler_facts import sass_opcodes

    ops = sass_opcodes(kernel) or {}
    wide = sum(n for op, n in ops.items() if op.startswith("LDS") and "128" in op)
    narrow = sum(n for op, n in ops.items() if op.startswith("LDS") and "128" not in op and "64" not in op)
    return wide, narrow


def _sass_lds_report(kernel):
    """The shared-load widths in the SASS, reported, not judged: whether NVVM merges a layout's
    four neighbouring loads into one LDS.128 also depends on what it can prove about the
    indices (lesson 07); the layout itself is judged by the tracer."""
    wide, narrow = _lds_widths(kernel)
    return True, (f"the SASS has {wide} LDS.128 and {narrow} 4-byte LDS (whether the compiler merges "
                  "four loads into one is its choice: the tracer judges the layout)")


# ----------------------------------------------------------------------------- lesson 05
@exercise("05-transpose-a", "x_d is element (m, a_c + d) of the A tile, with m = a_r + p * A_STEP: transposed, it "
                            "goes to row a_c + d, column m of sAT. In the k-step a thread's 8 values of A are "
                            "then 8 neighbouring columns of row k of sAT.")
def _(kernel):
    ok, right = _result_right(_tile_launcher("05-transpose-a"), kernel)
    if not ok:
        return False, right
    if not backend.SIMULATOR:
        return _on_gpu("05-transpose-a", kernel, right, _sass_lds_report)
    trace = _log_sgemm("05-transpose-a", kernel, 64, 64, 8).shared_trace(merge=("ld",))
    narrow = [i for i in trace.instructions if i.op == "ld" and i.width != 16]
    if narrow:
        return False, (right + ", but the technique is missing: not every shared load can be a 16-byte LDS.128 "
                       f"(the tracer, one block: {_sites(trace, lambda i: i.op == 'ld')}). A thread's 8 values "
                       "of A must be neighbours in shared memory, starting at a multiple of 4 floats: the "
                       "transposed tile.")
    return True, (right + "; every shared load of the k-step is a 16-byte access (the tracer, one block: "
                  f"{_sites(trace, lambda i: i.op == 'ld')}): the transposed A tile works. (The tracer judges the "
                  "layout; on a GPU this check also reports how many LDS.128 the compiler made of it.)")


# ----------------------------------------------------------------------------- lesson 06
@exercise("06-conflict-free", "two changes: (1) PAD: row k of sAT starts at word k * (64 + PAD); the 4-byte "
                              "stores of lanes 2t and 2t+1 go to rows d and d+4: pick PAD so they fall in different "
                              "banks, keeping rows 16-byte aligned (PAD a multiple of 4); (2) col_of: with 8 threads "
                              "across, let each thread own 4 columns in each half of the tile (4*tc.., 32 + 4*tc..).")
def _(kernel):
    ok, right = _result_right(_tile_launcher("06-conflict-free"), kernel)
    if not ok:
        return False, right
    if not backend.SIMULATOR:
        return _on_gpu("06-conflict-free", kernel, right, _sass_lds_report)
    trace = _log_sgemm("06-conflict-free", kernel, 64, 64, 8).shared_trace(merge=("ld", "st"))
    narrow = [i for i in trace.instructions if i.op == "ld" and i.width != 16]
    if narrow:
        return False, (right + ", but some shared loads are no longer 16-byte accesses "
                       f"({_sites(trace, lambda i: i.op == 'ld' and i.width != 16)}): is every row of the A tile "
                       "still 16-byte aligned (PAD a multiple of 4), and does each thread read 4 neighbouring "
                       "columns at a time?")
    problems = []
    for op, what in (("st", "stores"), ("ld", "loads")):
        bad = collections.OrderedDict()
        for i in trace.instructions:
            if i.op == op and i.cost.conflicts:
                w = bad.setdefault(i.array, [0, 0, 0])
                w[0] += i.cost.wavefronts
                w[1] += i.cost.ideal
                w[2] = max(w[2], i.cost.degree)
        problems += [f"{what} {'into' if op == 'st' else 'from'} {arr}: {wf} wavefronts where {ideal} would do "
                     f"({deg}-way conflicts)" for arr, (wf, ideal, deg) in bad.items()]
    if problems:
        return False, right + ", but the bank tracer (one block) still sees conflicts: " + "; ".join(problems) + "."
    t = trace.totals()
    return True, (right + f"; the tracer (one block) finds no bank conflicts: {t['instructions']} shared "
                  f"instructions, {t['wavefronts']} wavefronts, the ideal, with every load 16 bytes wide.")


# ----------------------------------------------------------------------------- lesson 07
@exercise("07-double-buffer", "prologue: stage slice 0 into buffer 0, one barrier. Then per slice: start the "
                              "next slice's global loads (load_slice), compute from the current buffer, store the "
                              "loaded slice into the OTHER buffer, one barrier; swap the buffers' roles.")
def _(kernel):
    if not backend.SIMULATOR:
        ok, right = _result_right(_tile_launcher("07-double-buffer"), kernel)
        if not ok:
            return False, right

        def barriers(k):
            from gemm_lessons.instruments.compiler_facts import sass_opcodes
            bars = sum(n for op, n in (sass_opcodes(k) or {}).items() if op.startswith("BAR"))
            return True, f"the SASS has {bars} barrier instruction(s)"
        return _on_gpu("07-double-buffer", kernel, right, barriers)
    K = 32
    slices = K // 8
    log = _log_sgemm("07-double-buffer", kernel, 64, 64, K)  # first: a race may or may not spoil a result
    races = log.races()
    ok, right = _result_right(_tile_launcher("07-double-buffer"), kernel)
    if races:
        arr, index, epoch, (t1, op1, line1), (t2, op2, line2) = races[0]
        right = ("the result happens to be right here" if ok else right.rstrip("."))
        return False, (right + f"; the access log finds a race: between barriers {epoch} and {epoch + 1}, thread {t1} "
                       f"writes {arr} element {index} (flat index) while thread {t2} {'reads' if op2 == 'ld' else 'writes'} it "
                       f"({len(races)}{'+' if len(races) >= 5 else ''} such word(s) found by the access log). A "
                       "buffer may be refilled only after a barrier that follows the last read of it: store the "
                       "next slice into the buffer nobody computes from.")
    if not ok:
        return False, right
    bars = max(log.barriers().values())
    if bars > slices + 1:
        return False, (right + f", race-free, but with {bars} barriers for {slices} slices (K = {K}): "
                       f"{bars / slices:.1f} per slice. With two buffers one barrier per slice is enough (plus "
                       "one after the prologue): the store into the other buffer needs no barrier before it.")
    thread0 = log.threads()[0]
    late = []
    for epoch in range(bars + 1):
        evs = [e for e in thread0 if e.epoch == epoch and e.kind != "sync"]
        first_ld = next((n for n, e in enumerate(evs) if e.kind == "shared" and e.op == "ld"), None)
        if first_ld is None:
            continue
        has_global = any(e.kind == "global" and e.array in ("A", "B") for e in evs)
        if has_global and not any(e.kind == "global" and e.array in ("A", "B") for e in evs[:first_ld]):
            late.append(epoch)
    if late:
        return False, (right + ", race-free, one barrier per slice, but the next slice's global loads come "
                       f"after the compute (between barriers {late[0]} and {late[0] + 1}, thread 0): start them "
                       "before the k-steps, so that they are in flight while the FMAs run.")
    return True, (right + f"; the access log (one block, K = {K}, {slices} slices) finds no race, {bars} barriers "
                  "(one per slice plus the prologue's), and the next slice's global loads issued before each "
                  "slice's k-steps.")


# ----------------------------------------------------------------------------- lesson 08
@exercise("08-warp-tile", "warp w owns columns (w % (BN // WN)) * WN .. + WN of the block tile and rows "
                          "(w // (BN // WN)) * WM .. + WM; inside it, lane l sits at row l // LN, column l % LN "
                          "of the LM x LN grid, and its 4x4 pieces repeat LM * 4 rows and LN * 4 columns apart.")
def _(kernel):
    ok, right = _result_right(_tile_launcher("08-warp-tile"), kernel)
    if not ok:
        return False, right
    if not backend.SIMULATOR:
        return _on_gpu("08-warp-tile", kernel, right)  # the technique: the tracer, in a child process
    BK, WM, WN = 8, 32, 64
    log = _log_sgemm("08-warp-tile", kernel, 32, 128, BK)
    trace = log.shared_trace(merge=("ld", "st"))
    footprints = {}
    for ins in trace.instructions:
        if ins.op == "ld":
            shape, itemsize, base = trace.arrays[ins.array]
            words = footprints.setdefault(ins.warp, set())
            words.update((ins.array, (a - base) // 4 + d) for a in ins.addresses if a is not None
                         for d in range(ins.width // 4))
    per_step = {w: len(s) / BK for w, s in footprints.items()}
    if any(v != WM + WN for v in per_step.values()):
        got = ", ".join(f"warp {w}: {v:g}" for w, v in sorted(per_step.items()))
        return False, (right + f", but the warps are not {WM}x{WN} warp tiles: per k-step a warp should read "
                       f"{WM} values of A and {WN} of B, {WM + WN} distinct floats of shared memory; the tracer "
                       f"counts {got}. (Lesson 07's 2 x 16 lanes read 16 + 128 = 144.)")
    conflicts = trace.totals("ld")["conflicts"]
    if conflicts:
        return False, (right + f", the warp tiles are right, but the shared loads have {conflicts} extra "
                       "wavefronts from bank conflicts: are a thread's 4x4 pieces LN * 4 columns apart, so "
                       "that 8 neighbouring lanes read 128 contiguous bytes?")
    return True, (right + f"; the tracer sees each warp read {WM + WN} distinct floats of shared memory per "
                  f"k-step ({WM} of A, {WN} of B: a {WM}x{WN} warp tile, against 144 for 2 x 16 lanes), "
                  "with no bank conflicts.")


# ----------------------------------------------------------------------------- lesson 09
_SYM_SIZES = (67, 40, 1)


def _launch_symmetrize(kernel, src, dst):
    TILE, ROWS = TRANSPOSE_TILE
    n = src.shape[0]
    grid = ((n + TILE - 1) // TILE, (n + TILE - 1) // TILE)
    kernel[grid, (TILE, ROWS)](src, dst)


@exercise("09-symmetrize", "stage the MIRROR tile, src[c0 + ty + j, r0 + tx] (a row of src per warp: coalesced), "
                           "into tile[ty + j, tx] after the barrier read it by column, tile[tx, ty + j]; pad "
                           "the tile by one float per row so that the column is conflict-free.")
def _(kernel):
    from numba import cuda

    from gemm_lessons.measure.problems import POISON, POISON_BITS

    rng = np.random.default_rng(9)
    for n in _SYM_SIZES:
        src = rng.uniform(-1, 1, (n, n)).astype(np.float32)
        dst = cuda.to_device(np.full((n, n), POISON, np.float32))
        _launch_symmetrize(kernel, cuda.to_device(src), dst)
        got = dst.copy_to_host()
        unwritten = got.view(np.uint32) == POISON_BITS
        if unwritten.any():
            r, c = np.argwhere(unwritten)[0]
            return False, f"for n = {n}, {int(unwritten.sum())} element(s) of dst were never written (first at {r}, {c})."
        want = src + src.T
        if not np.array_equal(got, want):
            r, c = np.argwhere(got != want)[0]
            return False, f"for n = {n}, dst[{r}, {c}] = {got[r, c]!r}, expected src[{r}, {c}] + src[{c}, {r}] = {want[r, c]!r}."
    right = f"dst = src + src.T is right for n = {', '.join(map(str, _SYM_SIZES))}"
    if not backend.SIMULATOR:
        return _on_gpu("09-symmetrize", kernel, right)
    from gemm_lessons.instruments import access_log

    n = 64
    src = rng.uniform(-1, 1, (n, n)).astype(np.float32)
    log, _ = access_log.log(lambda src, dst: _launch_symmetrize(kernel, src, dst),
                            dict(src=src, dst=np.zeros((n, n), np.float32)))
    slow = collections.OrderedDict()
    for ins in log.global_instructions():
        if ins.sectors > ins.ideal_sectors:
            key = (ins.array, ins.op, ins.site[1])
            s = slow.setdefault(key, [0, ins.sectors, ins.ideal_sectors])
            s[0] += 1
    if slow:
        (arr, op, line), (count, sectors, ideal) = next(iter(slow.items()))
        return False, (right + f", but not coalesced: the {'read of' if op == 'ld' else 'write to'} {arr} on line "
                       f"{line} of your cell touches {sectors} sectors of 32 bytes per warp where {ideal} would "
                       f"do ({count} such warp accesses for a {n}x{n} matrix): a warp should read and write rows. "
                       "Read src[c, r] through a shared tile instead.")
    trace = log.shared_trace(merge=False)
    if not trace.instructions:
        return False, right + ", but no shared memory was used."
    t = trace.totals()
    if t["conflicts"]:
        worst = max(trace.instructions, key=lambda i: i.cost.degree)
        return False, (right + f", coalesced, but the shared tile has bank conflicts: {t['wavefronts']} wavefronts "
                       f"where {t['ideal']} would do (block 0; the worst, a {'load from' if worst.op == 'ld' else 'store into'} "
                       f"{worst.array} on line {worst.site[1]}, is {worst.cost.degree}-way). Pad the tile.")
    return True, (right + f"; every warp's global access touches the fewest 32-byte sectors possible (the access "
                  f"log, {n}x{n}), and the shared tile is conflict-free ({t['instructions']} instructions, "
                  f"{t['wavefronts']} wavefronts, block 0).")


# ----------------------------------------------------------------------------- lesson 10
def next_step_answer(record, kernel, size):
    """The technique row (from leaderboard.TECHNIQUES) worth taking next from ``kernel`` at
    ``size``: the largest measured gain above 2 % among the rows that start from ``kernel``,
    as (kernel with it, gain in %), or None."""
    from gemm_lessons.teaching import leaderboard

    rows = [(after, pct) for _, _, before, after, _, _, pct in leaderboard.technique_effects(record, size)
            if before == kernel and pct > 2]
    return max(rows, key=lambda r: r[1]) if rows else None


def next_step_cases(record):
    """(kernel, size) pairs the 10-next-step check asks about: every 'without' kernel of the
    technique table at every recorded size where both sides were timed, except where a kernel of
    one of its rows was host-bound (such a pair compares launch costs, not techniques)."""
    from gemm_lessons.teaching import leaderboard
    from gemm_lessons.records.results import sgemm_rows

    def host_bound(kernel, size):
        return any(r.host_bound for r in sgemm_rows(record, kernel, size))

    cases = []
    for size in sorted({r.size for r in record.sgemm}):
        effects = leaderboard.technique_effects(record, size)
        for before in sorted({b for _, _, b, _, _, _, _ in effects}):
            pairs = [(b, a) for _, _, b, a, _, _, _ in effects if b == before]
            if not any(host_bound(k, size) for pair in pairs for k in pair):
                cases.append((before, size))
    return cases


def next_step_example(record, cases):
    """The case the feedback quotes: one with a gain, at the largest size, from the latest rung,
    or None. ``cases`` come from next_step_cases, which already leaves out host-bound pairs."""
    from gemm_lessons.kernels import ladder

    order = list(ladder.SGEMM) + list(ladder.VARIANTS)

    def latest_first(case):
        kernel, size = case
        return size, order.index(kernel) if kernel in order else -1

    return next((case for case in sorted(cases, key=latest_first, reverse=True)
                 if next_step_answer(record, *case)), None)


@exercise("10-next-step", "leaderboard.technique_effects(record, size) lists (technique, lesson, without, with, "
                          "TFLOPS without, TFLOPS with, change in %); keep the rows whose 'without' is the kernel "
                          "and whose change is above 2 %, and return (with, change) of the largest, or None.")
def _(fn):
    from gemm_lessons.records import results

    record = results.load()
    cases = next_step_cases(record)
    for kernel, size in cases:
        want = next_step_answer(record, kernel, size)
        got = fn(kernel, size)
        if want is None:
            if got is not None:
                return False, (f"next_step({kernel!r}, {size}) returned {got!r}, but no technique from {kernel} "
                               "gained more than 2 % at that size: expected None.")
            continue
        try:
            name, pct = got
            pct = float(pct)
        except (TypeError, ValueError):
            return False, f"next_step({kernel!r}, {size}) returned {got!r}; expected a pair (kernel, change in %)."
        if name != want[0]:
            return False, f"next_step({kernel!r}, {size}) returned {name!r}; the largest measured gain from {kernel} is elsewhere."
        if not _close(pct, want[1], 1e-3):
            return False, f"next_step({kernel!r}, {size}): {name!r} is right, but its change is not {pct:g} %."
    example = next_step_example(record, cases)
    text = ""
    if example:
        name, pct = next_step_answer(record, *example)
        text = f" For example from {example[0]} at {example[1][0]}x{example[1][1]}x{example[1][2]}: {name}, {pct:+.1f} %."
    return True, (f"right for all {len(cases)} (kernel, size) pairs of {results.label(record)}.{text} A measured "
                  "gain on one GPU is a reason to try a technique first, not a promise for another GPU or shape.")


# ----------------------------------------------------------------------------- lesson 11
# 11-split-k: the student writes both halves of split-K on lesson 01's one-thread-per-element
# kernel (so that the split is all there is to read), with the workspace as a 3-D array
# W[part, row, col] (the library keeps its parts stacked in a 2-D one): the part of the sum over
# k that the blocks with blockIdx.z == z compute, written to W[z], and the reduction that adds the
# parts into C.  The check: the answer (C against float64); then the technique: every part of W
# holds the sum over its own chunk of k (a kernel that lets one part do all of K and the others
# write zeros gets C right and fails here); on the simulator also the access log: each part reads
# only its chunk of A and B, and the reduction reads every partial sum once, does not read C when
# beta == 0, and reads and writes in coalesced warp-wide accesses (what the model's cost of the
# reduction assumes).
KERNEL_EXERCISES_11 = ("11-split-k",)
SPLITK_THREADS = (16, 16)  # both kernels' blocks: 16 x 16 threads, x along the columns of C
# M, N, K, alpha, beta, splits: K not a multiple of splits (a shorter last part)
SPLITK_SHAPES = [(19, 37, 50, 1.0, 0.0, 3), (9, 20, 64, 1.5, -0.5, 4)]
SPLITK_LOG_SHAPE = (8, 16, 24, 3)  # M, N, K, splits for the access log


def split_k_chunk(K, splits):
    """k per part: each part sums ceil(K / splits) values of k, the last one what is left."""
    return -(-K // splits)


def launch_split_k(A, B, C, alpha=1.0, beta=0.0, kernels=None, splits=2):
    """11-split-k's launch: ``kernels = (partial, reduce)``; W is a splits x M x N workspace
    (poisoned first, so that unwritten parts show).  partial[(ceil(N/16), ceil(M/16), splits),
    (16, 16)](A, B, W) (the kernel works out its chunk of k from K and gridDim.z), then
    reduce[(ceil(N/16), ceil(M/16)), (16, 16)](W, C, alpha, beta).  Returns W (a device array)."""
    from numba import cuda

    from gemm_lessons.measure.problems import POISON

    partial, reduce = _split_k_pair(kernels)
    M, K = A.shape
    N = B.shape[1]
    W = cuda.to_device(np.full((splits, M, N), POISON, np.float32))
    tx, ty = SPLITK_THREADS
    grid = ((N + tx - 1) // tx, (M + ty - 1) // ty)
    partial[grid + (splits,), (tx, ty)](A, B, W)
    reduce[grid, (tx, ty)](W, C, np.float32(alpha), np.float32(beta))
    return W


def _split_k_pair(answer):
    try:
        partial, reduce = answer
    except (TypeError, ValueError):
        raise TypeError("answer with the pair of kernels: split_k = (sgemm_partial, splitk_reduce)") from None
    return partial, reduce


def _split_k_parts(A, B, W):
    """(ok, message) of the workspace: part z must hold A[:, chunk z] @ B[chunk z, :]."""
    from gemm_lessons.measure.problems import POISON_BITS, tolerance

    splits = W.shape[0]
    K = A.shape[1]
    chunk = split_k_chunk(K, splits)
    full = A.astype(np.float64) @ B.astype(np.float64)
    for z in range(splits):
        if (W[z].view(np.uint32) == POISON_BITS).any():
            return False, (f"part {z} of the workspace, W[{z}], was not written (all of it, or some elements): "
                           f"each part writes its own M x N partial sums")
    for z in range(splits):
        lo, hi = z * chunk, min(K, (z + 1) * chunk)
        got = W[z]
        want = A[:, lo:hi].astype(np.float64) @ B[lo:hi].astype(np.float64)
        with np.errstate(invalid="ignore", over="ignore"):
            err = np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-30)
        if np.isfinite(err) and err <= tolerance(hi - lo):
            continue
        if np.linalg.norm(got - full) <= tolerance(K) * np.linalg.norm(full):
            what = f"the whole product (every k from 0 to {K - 1})"
        elif not got.any():
            what = "zeros"
        else:
            what = "something else"
        return False, (f"the work is not split: part {z} of the workspace, W[{z}], should hold the sum over its "
                       f"own chunk, k = {lo}..{hi - 1}, but holds {what}")
    return True, f"each of the {splits} parts of the workspace holds the sum over its own chunk of {chunk} k"


def _split_k_answer(answer):
    """(ok, message): C right on SPLITK_SHAPES, then each part of W right."""
    from gemm_lessons.measure.problems import SgemmProblem, compare

    failed, done = None, None
    for M, N, K, alpha, beta, splits in SPLITK_SHAPES:
        p = SgemmProblem(M, N, K, alpha, beta, seed=M + N + K)
        W = launch_split_k(p.A_d, p.B_d, p.reset_output(), alpha, beta, answer, splits)
        res = compare("your split-K", p.C_d.copy_to_host(), p.reference, alpha, beta, K)
        ok, done = _split_k_parts(p.A, p.B, W.copy_to_host())
        if not res.passed:
            return False, (f"the result is wrong: {res.message()}" + ("" if ok else f"; and {done}") + ".")
        failed = failed or (None if ok else done)
    shapes = " and ".join(f"{M}x{N}x{K} in {s} parts" for M, N, K, _, _, s in SPLITK_SHAPES)
    right = f"the result matches the float64 reference on {shapes} (with alpha and beta)"
    if failed:
        return False, right + ", but " + failed + "."
    return True, right + "; " + done


def split_k_facts(answer):
    """What the access log sees the two kernels of ``answer`` do at SPLITK_LOG_SHAPE (simulator):
    the k of A and of B each part's blocks read, the rows of W they write, and the reduction's
    reads of W and of C, its writes of C and its warp-wide accesses that touch more 32-byte
    sectors than needed (beta == 0)."""
    from gemm_lessons.instruments import access_log

    partial, reduce = _split_k_pair(answer)
    M, N, K, splits = SPLITK_LOG_SHAPE
    chunk = split_k_chunk(K, splits)
    rng = np.random.default_rng(11)
    A = rng.uniform(-1, 1, (M, K)).astype(np.float32)
    B = rng.uniform(-1, 1, (K, N)).astype(np.float32)
    tx, ty = SPLITK_THREADS
    grid = ((N + tx - 1) // tx, (M + ty - 1) // ty)

    def run_partial(A, B, W):
        partial[grid + (splits,), (tx, ty)](A, B, W)

    log, out = access_log.log(run_partial, dict(A=A, B=B, W=np.zeros((splits, M, N), np.float32)))
    k_read = {z: {"A": set(), "B": set()} for z in range(splits)}
    parts_written = {z: set() for z in range(splits)}
    for e in log.events:
        if e.kind != "global":
            continue
        word, z = e.address // 4, e.block[2]
        if e.array == "A" and e.op == "ld":
            k_read[z]["A"].add(word % K)
        elif e.array == "B" and e.op == "ld":
            k_read[z]["B"].add(word // N)
        elif e.array == "W" and e.op == "st":
            parts_written[z].add(word // (M * N))

    def run_reduce(W, C):
        reduce[grid, (tx, ty)](W, C, np.float32(1.0), np.float32(0.0))

    log2, _ = access_log.log(run_reduce, dict(W=out["W"], C=np.zeros((M, N), np.float32)))
    counts = collections.Counter((e.array, e.op, e.address) for e in log2.events if e.kind == "global")
    uncoalesced = [(i.array, i.op, i.sectors, i.ideal_sectors, i.site[1] if i.site else None)
                   for i in log2.global_instructions() if i.sectors > i.ideal_sectors]
    return {"shape": (M, N, K, splits), "chunk": chunk,
            "k_read": {z: {a: sorted(v) for a, v in d.items()} for z, d in k_read.items()},
            "parts_written": {z: sorted(v) for z, v in parts_written.items()},
            "W_reads": [n for (arr, op, _), n in counts.items() if arr == "W" and op == "ld"],
            "C_reads": sum(n for (arr, op, _), n in counts.items() if arr == "C" and op == "ld"),
            "C_writes": [n for (arr, op, _), n in counts.items() if arr == "C" and op == "st"],
            "uncoalesced": uncoalesced}


def _span(ks):
    return f"k = {ks[0]}..{ks[-1]}" if ks else "no k"


@exercise("11-split-k", "partial kernel: with parts = cuda.gridDim.z and k_chunk = ceil(K / parts), the blocks "
                        "with blockIdx.z == z sum k from z * k_chunk up to min(K, (z + 1) * k_chunk) - 1 and "
                        "write W[z, row, col]. Reduction: the same mapping "
                        "(threadIdx.x along the columns); total = W[0, row, col] + W[1, row, col] + ... over "
                        "W.shape[0] parts, then C = alpha * total, + beta * C only when beta != 0.")
def _(answer):
    ok, right = _split_k_answer(answer)
    if not ok:
        return False, right
    if not backend.SIMULATOR:
        partial, _ = _split_k_pair(answer)
        sim_ok, m = _simulator_only("11-split-k", partial, name=_answer_name(answer))
        return sim_ok is not False, right + " on this GPU; " + m + "."
    f = split_k_facts(answer)
    M, N, K, splits = f["shape"]
    chunk = f["chunk"]
    where = f"(the access log, {M}x{N}x{K} in {splits} parts)"
    for z in range(splits):
        lo, hi = z * chunk, min(K, (z + 1) * chunk) - 1
        for name in ("A", "B"):
            ks = f["k_read"][z][name]
            if any(k < lo or k > hi for k in ks):
                return False, (right + f", but the blocks of part {z} read {name} at {_span(ks)} {where}: a part "
                               f"must read only its own chunk, k = {lo}..{hi}, or the parts do the same work over "
                               "again.")
        if f["parts_written"][z] not in ([], [z]):
            return False, (right + f", but the blocks of part {z} write W[{f['parts_written'][z]}] {where}: part z "
                           f"owns W[z] only.")
    W_reads, C_writes = f["W_reads"], f["C_writes"]
    if len(W_reads) != splits * M * N or max(W_reads) != 1:
        return False, (right + f", but the reduction reads the workspace's {splits * M * N} partial sums "
                       f"{sum(W_reads)} times in all ({len(W_reads)} different ones, up to {max(W_reads, default=0)} "
                       f"times each) {where}: each partial sum should be read exactly once.")
    if f["C_reads"]:
        return False, (right + f", but with beta == 0 the reduction still reads C ({f['C_reads']} reads {where}): "
                       "BLAS does not read C then (it may hold anything, NaN included), and each read is traffic "
                       "the reduction does not need.")
    if len(C_writes) != M * N or max(C_writes) != 1:
        return False, right + f", but the reduction does not write each element of C exactly once {where}."
    if f["uncoalesced"]:
        arr, op, sectors, ideal, line = f["uncoalesced"][0]
        return False, (right + f", but the reduction's accesses are not coalesced: a warp's "
                       f"{'read of' if op == 'ld' else 'write to'} {arr} (line {line} of your cell) touches {sectors} "
                       f"sectors of 32 bytes where {ideal} would do ({len(f['uncoalesced'])} such warp accesses "
                       f"{where}): let consecutive threads (threadIdx.x) take consecutive columns.")
    return True, (right + f"; the access log ({M}x{N}x{K} in {splits} parts of {chunk} k) sees each part read only "
                  f"its own chunk of A and B, and the reduction read each of the {splits * M * N} partial sums once "
                  f"and write each element of C once, without reading C when beta == 0: (splits + 1) x M x N = "
                  f"{(splits + 1) * M * N} floats, in coalesced warp-wide accesses.")


def _answer_name(answer):
    """The name of the notebook variable holding ``answer`` in the cell that defined its kernels."""
    partial, _ = _split_k_pair(answer)
    fn = _written_function(partial)
    for name, value in fn.__globals__.items():
        if value is answer and not name.startswith("_"):
            return name
    return "split_k"


# ----------------------------------------------------------------------------- predict, then measure
def _shown(x):
    """3 significant digits, zeros kept (1.00, not 1), whole numbers with thousands separators."""
    if float(x).is_integer():
        return f"{int(x):,}"
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:#.3g}"


@dataclass
class Prediction:
    what: str
    predicted: object
    measured: float
    source: str

    def _text(self):
        if self.predicted is None or self.predicted is Ellipsis:
            return f"no prediction written yet; {self.what}: {_shown(self.measured)} ({self.source})."
        try:
            p = float(self.predicted)
        except (TypeError, ValueError):
            return f"your prediction {self.predicted!r} is not a number; {self.what}: {_shown(self.measured)} ({self.source})."
        if self.measured != self.measured:
            return f"you predicted {_shown(p)}; {self.what} has no measurement here ({self.source})."
        off = 100 * (p / self.measured - 1) if self.measured else float("inf")
        return (f"you predicted {_shown(p)}; {self.what}: {_shown(self.measured)} ({self.source}). "
                f"Your prediction is {abs(off):.0f}% {'above' if off > 0 else 'below'} it.")

    def __repr__(self):
        return self._text()

    def _repr_markdown_(self):
        return "**Predicted vs measured.** " + self._text()


def compare_prediction(predicted, measured, what, source):
    """Show a student's prediction next to the measurement (``source`` says where it was measured:
    on this GPU now, or recorded on which device and when)."""
    return Prediction(what, predicted, float(measured), source)
