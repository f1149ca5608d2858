"""What lessons 01-04's kernel exercises share: their launches, the answer check and the
access-log facts that judge the technique.

The student writes (part of) a kernel; the check runs it twice over.  First the answer: on
SIM_SHAPES against the float64 reference (a failure starts "Wrong result:").  Then the
technique, with the access log on the CUDA simulator: sectors per warp-wide read (01), global
reads counted element by element (02-04), shared-memory loads per thread (03, 04).
A right answer without the technique starts "Right result, but ...".  On a machine with a GPU
the answer is checked on the GPU and the instrument runs the kernel's source in a child
process on the simulator (numba chooses GPU or simulator once per process)."""
import collections
import functools
import inspect
import json
import linecache
import math
import textwrap

import numpy as np

from gemm_lessons.core import backend
from gemm_lessons.core.array_checks import sgemm_shapes
from gemm_lessons.kernels.sgemm import reg1d, reg2d
from gemm_lessons.measure.problems import SIM_SHAPES, check as check_problem
from gemm_lessons.teaching.exercises import evidence
from gemm_lessons.teaching.exercises.core import KERNEL_TIME_LIMIT_S, result_right


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
        code = ("import json; from gemm_lessons.teaching.exercises import kernels_01_04 as e; "
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
    races = log.races(limit=1)
    return {"shape": (M, N, K), "A_reads": reads["A"], "B_reads": reads["B"],
            "shared_loads_per_kstep": len(warp0) / K, "race": list(races[0]) if races else None}


def _function_spec(fn, constants, helpers):
    """(name, source without decorators) of ``fn``; its number constants go into ``constants``,
    the device functions it calls (numba dispatchers among its globals), recursively, into
    ``helpers`` (name -> source), so that the child can define them before the kernel.  The
    source starts with blank lines down to the ``def``: the child's line numbers (the access log's
    "line N of your code") are the student's."""
    source, first = inspect.getsourcelines(fn)
    lines = textwrap.dedent("".join(source)).split("\n")
    while lines and not lines[0].lstrip().startswith("def "):
        lines.pop(0)  # the decorators: the child applies cuda.jit itself
        first += 1
    lines[:0] = [""] * (first - 1)
    names = dict(zip(fn.__code__.co_freevars, (c.cell_contents for c in fn.__closure__ or ())))
    names.update({n: fn.__globals__[n] for n in fn.__code__.co_names if n in fn.__globals__})
    for name, value in names.items():
        if isinstance(value, (bool, int, float)) and not isinstance(value, np.generic):
            constants[name] = value
        elif hasattr(value, "py_func") and name not in helpers and value.py_func is not fn:
            helpers[name] = None  # taken: a recursive helper is listed once
            helpers[name] = _function_spec(value.py_func, constants, helpers)[1]
    return fn.__name__, "\n".join(lines)


def _kernel_spec(kernel):
    """The source and the number constants of a kernel (and the device functions it calls), to
    rebuild it in another process."""
    fn = getattr(kernel, "py_func", kernel)
    constants, helpers = {}, {}
    name, source = _function_spec(fn, constants, helpers)
    tile = getattr(kernel, "tile", None)
    return {"source": source, "name": name, "constants": constants, "helpers": helpers,
            "tile": list(tile) if tile is not None else None}


def rebuild_kernel(spec):
    """The kernel described by ``_kernel_spec``, compiled by this process's cuda.jit."""
    from numba import cuda, float32

    ns = {"cuda": cuda, "np": np, "numpy": np, "float32": float32, "math": math, **spec["constants"]}

    def define(source, filename):  # in linecache too: the access log reads the source (array names)
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        exec(compile(source, filename, "exec"), ns)

    for name, source in reversed(list(spec.get("helpers", {}).items())):  # callees before callers
        define(source, f"<device function {name}>")
        ns[name] = cuda.jit(device=True)(ns[name])
    define(spec["source"], f"<kernel {spec['name']}>")
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
    result_right()
    return None, " and ".join(f"{M}x{N}x{K}" for M, N, K, _, _ in SIM_SHAPES)


def _race(facts):
    """(False, message) when the access log found a race in block 0 (a result that was right by
    luck: the simulator's scheduling hid it); else (True, "")."""
    race = facts.get("race")
    if not race:
        return True, ""
    result_right(False)
    arr, index, epoch, (t1, _, line1), (t2, op2, line2) = race
    M, N, K = facts["shape"]
    return False, (f"The result came out right here, but the access log ({M}x{N}x{K}, block 0) finds a race: between "
                   f"barriers {epoch} and {epoch + 1}, thread {t1} writes {arr} element {index} (line {line1}) while "
                   f"thread {t2} {'reads' if op2 == 'ld' else 'writes'} it (line {line2}). On a GPU the result would "
                   "depend on which warp runs first: is a cuda.syncthreads() missing between writing the tiles and "
                   "reading them, or before the next slice overwrites them?")


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


def _kernel_passes(launch, answer):
    """Run a student's kernel on two awkward shapes (simulator-sized) with alpha and beta."""

    run = functools.partial(launch, kernel=answer)
    shapes = []
    for M, N, K, alpha, beta in SIM_SHAPES:
        res = check_problem(run, M, N, K, alpha, beta, name="your kernel")
        if not res.passed:
            again = check_problem(run, M, N, K, alpha, beta, name="your kernel")
            changed = (again.rel_error, again.unwritten) != (res.rel_error, res.unwritten)
            return False, evidence.wrong_result(res, launch, answer, changed)
        shapes.append(f"{M}x{N}x{K}")
    return True, f"your kernel matches the float64 reference on {' and '.join(shapes)} (with alpha and beta)."
