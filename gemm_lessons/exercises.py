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


@exercise("01-kernel", "threadIdx.x must walk the columns (the contiguous dimension) of C and B; "
                       "guard row < M and col < N; with beta == 0, do not read C.")
def _(ans):

    return _kernel_passes(naive.sgemm, ans)


# ----------------------------------------------------------------------------- lesson 02
@exercise("02-loads", "A block of BM x BN outputs reads BM*K values of A and K*BN of B.")
def _(ans):
    return _number(ans, counting.tiled_global_loads(1024, 1024, 1024, 32, 32),
                   "the global loads of a 1024^3 SGEMM with 32x32 tiles")


# ----------------------------------------------------------------------------- lesson 03
@exercise("03-kernel", "for each k: read one value of sB into a register, then update all TM "
                       "accumulators with it and the TM values of sA in that column.")
def _(ans):

    return _kernel_passes(reg1d.sgemm, ans)


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
