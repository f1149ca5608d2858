"""Exercise cells with an automatic, friendly check.

A teacher notebook writes the solution between ``### BEGIN SOLUTION`` and ``### END
SOLUTION`` and ends the cell with ``exercises.check("<id>", answer)``.  ``python -m
gemm_lessons.student`` builds the student notebooks, with each solution replaced by a skeleton.
A check never raises: a wrong answer, a missing one or a crashing kernel all come back as
feedback that says what to look at.
"""
import functools
import threading
import time
import traceback
from dataclasses import dataclass

from . import _backend, counting
from .instruments.bank_model import wavefronts
from .problems import SIM_SHAPES, check as check_problem
from .sgemm_kernels import naive, reg1d, vec
from .sgemm_kernels.warptile import TileConfig

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
        verdict = ("Noted" if self.exercise in PREDICTIONS else "Correct") if self.ok else "Not yet"
        return f"{verdict} [{self.exercise}]: {self.message}"

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
    simulator a kernel still running after ``time_limit`` seconds is stopped."""
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
        message += " Hint: " + hint
    return Feedback(exercise_id, ok, message)


def ids():
    return sorted(_CHECKS)


def _with_time_limit(fn, seconds):
    """Run fn(); on the simulator, kernel threads started meanwhile raise KernelTimeout once
    ``seconds`` have passed (checked on every line they execute outside the libraries)."""
    if not _backend.SIMULATOR or not seconds:
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

    from . import _backend
    from .problems import POISON

    rng = np.random.default_rng(7)
    for n in _LAUNCH_SIZES:
        x = rng.standard_normal(n).astype(np.float32)
        y = rng.standard_normal(n).astype(np.float32)
        pad = 256  # room after the output: a write past the end lands here (on a GPU nothing stops it)
        if _backend.SIMULATOR:
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
    from .inspect_kernel import blocks_per_sm

    try:
        blocks, limiter = ans
    except (TypeError, ValueError):
        return False, "answer with a pair: (blocks per SM, the resource that limits it)."
    from .hierarchy import STATIC_SHARED_BYTES_PER_BLOCK as static
    from .inspect_kernel import SM_LIMITS_CC90 as lm

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
@exercise("00-flops", "K multiplies and K-1 adds per element, then alpha*, beta* and one more add.")
def _(ans):
    return _number(ans, counting.sgemm_flops(512, 256, 128, alpha_beta=True),
                   "the FLOP count of alpha*A@B + beta*C for M=512, N=256, K=128")


@exercise("00-intensity", "FLOP = 2MNK; bytes = 4 x (MK + KN + MN) when beta == 0.")
def _(ans):
    return _number(ans, counting.sgemm_intensity(4096, 4096, 4096),
                   "the arithmetic intensity of a 4096^3 SGEMM (FLOP per byte)")


# ----------------------------------------------------------------------------- lesson 01
@exercise("01-sectors", "In the swapped mapping, neighbouring threads own neighbouring ROWS of C. "
                        "A sector is 32 bytes; count distinct sectors the 32 threads touch in A and in B.")
def _(ans):
    try:
        a, b = ans
    except (TypeError, ValueError):
        return False, "answer with a pair: (sectors of A, sectors of B)."
    if (a, b) == (32, 1):
        return True, ("A: 32 rows, K floats apart, 32 sectors; B: one float shared by the warp, 1 sector. "
                      "The coalesced mapping needs 1 + 4.")
    return False, f"{(a, b)} is not it."


# ----------------------------------------------------------------------------- lesson 02
@exercise("02-loads", "A block of BM x BN outputs reads BM*K values of A and K*BN of B.")
def _(ans):
    return _number(ans, counting.tiled_global_loads(1024, 1024, 1024, 32, 32),
                   "the global loads of a 1024^3 SGEMM with 32x32 tiles")


# ----------------------------------------------------------------------------- lesson 04
@exercise("04-ratio", "x*y products per k-step need x values of A and y of B: ratio = 2xy/(x+y).")
def _(ans):
    try:
        r88, r164 = (float(v) for v in ans)
    except (TypeError, ValueError):
        return False, "answer with a pair: (ratio for 8x8, ratio for 16x4)."
    want = (counting.compute_to_memory_ratio(8, 8), counting.compute_to_memory_ratio(16, 4))
    if _close(r88, want[0], 1e-3) and _close(r164, want[1], 1e-3):
        return True, f"8x8 gives {want[0]:g} FLOP per value read, 16x4 only {want[1]:g}: square tiles reuse best."
    return False, f"({r88:g}, {r164:g}) is not right."


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


# ----------------------------------------------------------------------------- lesson 06
@exercise("06-padding", "Row l starts at word l*(32+PAD); its bank is l*(32+PAD) % 32 = l*PAD % 32. "
                        "When are those 32 values all different?")
def _(ans):

    try:
        pad = int(ans)
    except (TypeError, ValueError):
        return False, f"expected a whole number of floats, got {ans!r}."
    cost = wavefronts([4 * (32 + pad) * l for l in range(32)]).wavefronts
    if pad == 1:
        return True, "PAD = 1: row l starts in bank l; any odd PAD works, 1 wastes the least memory."
    if cost == 1:
        return False, f"PAD = {pad} is conflict-free, but not the smallest."
    return False, f"PAD = {pad} still costs {cost} wavefronts."


# ----------------------------------------------------------------------------- lesson 07
_SHARED_CASES = [(128, 128, 8, 4, 1), (128, 128, 8, 4, 2), (128, 128, 16, 4, 2), (64, 128, 16, 0, 2),
                 (256, 128, 8, 4, 2)]


@exercise("07-shared-bytes", "Per buffer: the transposed A tile is BK rows of BM + pad_a floats, the B "
                             "tile BK rows of BN floats; 4 bytes per float; times the number of buffers.")
def _(ans):

    for BM, BN, BK, pad, stages in _SHARED_CASES:
        want = TileConfig(BM=BM, BN=BN, BK=BK, pad_a=pad, stages=stages).shared_bytes
        got = ans(BM, BN, BK, pad, stages)
        if got != want:
            return False, f"shared_bytes{(BM, BN, BK, pad, stages)} returned {got!r}, expected {want}."
    return True, ("right: two buffers of the 128x128x8 tiles take 16,640 bytes, far below the 228 KiB of "
                  "an SM; registers, not shared memory, limit this kernel to 2 blocks per SM.")


# ----------------------------------------------------------------------------- lesson 08
_LANE_CASES = [(32, 64, 8, 8), (16, 128, 8, 8), (64, 32, 8, 8), (64, 64, 8, 16), (64, 64, 8, 8),
               (32, 32, 8, 8), (32, 64, 8, 6), (48, 64, 8, 8)]


@exercise("08-lanes", "LM = WM / TM lanes down, LN = WN / TN lanes across; a warp has exactly 32 lanes, "
                      "and the thread tiles must divide the warp tile.")
def _(ans):
    for WM, WN, TM, TN in _LANE_CASES:
        ok = WM % TM == 0 and WN % TN == 0 and (WM // TM) * (WN // TN) == 32
        want = (WM // TM, WN // TN) if ok else None
        got = ans(WM, WN, TM, TN)
        got = tuple(got) if got is not None else None
        if got != want:
            return False, f"lanes{(WM, WN, TM, TN)} returned {got!r}, expected {want!r}."
    return True, "right: (4, 8) for the lesson's 32x64 warp tile; 64x64 with 8x8 per thread would need 64 lanes."


# ----------------------------------------------------------------------------- lesson 09
@exercise("09-bytes", "Every element is read once and written once; a float32 is 4 bytes.")
def _(ans):
    return _number(ans, counting.transpose_bytes(8192, 4096), "the bytes a 8192x4096 transpose moves")


# ---- lessons 01-04 kernel exercises ---------------------------------------------------------
# The student writes (part of) a kernel; the check runs it twice over.  First the answer: on
# SIM_SHAPES against the float64 reference (a failure starts "Wrong result:").  Then the
# technique, with an instrument on the CUDA simulator: sectors per warp-wide read (01), global
# reads counted element by element (02-04), shared-memory loads traced per thread (03, 04).
# A right answer without the technique starts "Right result, but ...".  On a machine with a GPU
# the answer is checked on the GPU and the instrument runs the kernel's source in a child
# process on the simulator (numba chooses GPU or simulator once per process).
import inspect  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import textwrap  # noqa: E402

import numpy as _np  # noqa: E402

from .arrays import sgemm_shapes  # noqa: E402
from .sgemm_kernels import reg2d  # noqa: E402

THREADS_1D = 256  # 01-kernel: threads per block of the one-dimensional launch
SECTOR_SHAPE_01 = (40, 64, 16)  # M, N, K where 01-kernel's sectors are counted
SECTORS_PER_KSTEP_LIMIT = 8  # coalesced: 1 (A) + 4 (B) = 5; the swapped mapping: 32 + 1 = 33


def launch_1d(A, B, C, alpha=1.0, beta=0.0, kernel=None):
    """01-kernel's launch: one thread per element of C in one dimension, THREADS_1D threads per
    block and ceil(MN / THREADS_1D) blocks."""
    M, N, K = sgemm_shapes(A, B, C)
    kernel[(M * N + THREADS_1D - 1) // THREADS_1D, THREADS_1D](A, B, C, _np.float32(alpha), _np.float32(beta))


def launch_tiled(A, B, C, alpha=1.0, beta=0.0, kernel=None):
    """02-kernel's launch: ``kernel.tile = (BM, BN, BK)``; blocks of BN x BM threads
    (threadIdx.x along the BN columns of the tile), one block per BM x BN tile of C."""
    BM, BN, BK = _tile(kernel, 3, "(BM, BN, BK)")
    M, N, K = sgemm_shapes(A, B, C)
    grid = ((N + BN - 1) // BN, (M + BM - 1) // BM)
    kernel[grid, (BN, BM)](A, B, C, _np.float32(alpha), _np.float32(beta))


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
    """What the instrument of exercise ``lesson`` ("01".."04") sees ``kernel`` do, on the
    simulator: in this process, or (``in_child``, the default on a GPU) in a child process that
    rebuilds the kernel from its source.  01: sectors per warp-wide read of A and of B at
    SECTOR_SHAPE_01.  02-04: at count_shape(kernel.tile), the elements of A and B read from
    global memory, and the shared-memory loads per thread per k-step."""
    if in_child is None:
        in_child = not _backend.SIMULATOR
    if in_child:
        spec = json.dumps(_kernel_spec(kernel))
        code = ("import json, gemm_lessons.exercises as e; "
                f"print(json.dumps(e.technique_facts({lesson!r}, e.rebuild_kernel(json.loads({spec!r})))))")
        from .instruments.simulator_process import run_on_simulator
        return run_on_simulator(code, f"the {lesson}-kernel instrument", timeout=KERNEL_TIME_LIMIT_S)
    from .instruments import global_loads, shared_tracer

    launch = functools.partial(_LAUNCHERS[lesson], kernel=kernel)
    if lesson == "01":
        return {"shape": SECTOR_SHAPE_01, **global_loads.sectors_per_read(launch, *SECTOR_SHAPE_01)}
    M, N, K = count_shape(_tile(kernel, {"02": 3, "03": 4, "04": 5}[lesson], "the tile"))
    rng = _np.random.default_rng(0)
    from .problems import random_matrix
    A, B, C = (global_loads.counting_array(random_matrix(r, c, rng)) for r, c in ((M, K), (K, N), (M, N)))
    tr = shared_tracer.trace(lambda: launch(A, B, C), merge=False)
    warp0 = [i for i in tr.instructions if i.warp == 0 and i.op == "ld"]
    return {"shape": (M, N, K), "A_reads": A.reads, "B_reads": B.reads,
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
        if isinstance(value, (bool, int, float)) and not isinstance(value, _np.generic):
            constants[name] = value
    tile = getattr(kernel, "tile", None)
    return {"source": "\n".join(lines), "name": fn.__name__, "constants": constants,
            "tile": list(tile) if tile is not None else None}


def rebuild_kernel(spec):
    """The kernel described by ``_kernel_spec``, compiled by this process's cuda.jit."""
    from numba import cuda, float32

    ns = {"cuda": cuda, "np": _np, "numpy": _np, "float32": float32, "math": math, **spec["constants"]}
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


# Predict, then measure (lessons 02-04): the student writes a speedup before the Measure cells;
# compare_prediction(id, prediction, table) then sets it against the table the lesson measured
# (on a GPU) or read from results/ (on the simulator), whose source line says which.
PREDICTIONS = {  # id -> (kernel, baseline) as named in the lesson's measure.compare table
    "02-predict": ("smem_tile", "naive"),
    "03-predict": ("reg1d", "smem_tile"),
    "04-predict": ("reg2d", "reg1d"),
}


def _prediction_checker(exercise_id, kernel, baseline):
    @exercise(exercise_id, f"one positive number: how many times faster {kernel} runs than {baseline} "
                           "(2 means twice as fast, 0.5 half as fast).")
    def _(ans):
        if isinstance(ans, bool):
            return False, f"expected a number, got {ans!r}."
        try:
            value = float(ans)
        except (TypeError, ValueError):
            return False, f"expected one number (a speedup), got {ans!r}."
        if not math.isfinite(value) or value <= 0:
            return False, f"{value!r} cannot be a speedup: it is a ratio of two speeds, a positive number."
        return True, (f"you predict {kernel} {value:.3g}x as fast as {baseline}. The Measure section below "
                      "sets your prediction against the measurement.")


for _id, (_kernel, _baseline) in PREDICTIONS.items():
    _prediction_checker(_id, _kernel, _baseline)


@dataclass
class PredictionReport:
    exercise: str
    prediction: object
    kernel: str
    baseline: str
    measured: float
    source: str
    size: tuple

    def message(self):
        what = f"{self.kernel} vs {self.baseline} at {'x'.join(map(str, self.size))}"
        if not (self.measured > 0):
            return f"no measurement of {what} in this table ({self.source})."
        measured = f"measured {self.measured:.3g}x ({what}, {self.source})"
        try:
            p = float(self.prediction)
        except (TypeError, ValueError):
            p = float("nan")
        if isinstance(self.prediction, bool) or not (p > 0 and math.isfinite(p)):
            return f"no prediction yet (write it in the {self.exercise} cell above); {measured}."
        ratio = self.measured / p
        if abs(ratio - 1) <= 0.2:
            how = "within 20% of your prediction"
        elif ratio > 1:
            how = f"{ratio:.3g} times your prediction (the kernel did better than you predicted)"
        else:
            how = f"{1 / ratio:.3g} times below your prediction"
        return f"you predicted {p:.3g}x; {measured}: the measurement is {how}."

    def __str__(self):
        return f"Prediction [{self.exercise}]: {self.message()}"

    __repr__ = __str__

    def _repr_markdown_(self):
        return "🔎 " + str(self)


def compare_prediction(exercise_id, prediction, table):
    """Set a predicted speedup against a measure.compare table (measured, or recorded)."""
    kernel, baseline = PREDICTIONS[exercise_id]
    return PredictionReport(exercise_id, prediction, kernel, baseline, table.speedup(kernel, baseline),
                            table.source, tuple(table.size))
