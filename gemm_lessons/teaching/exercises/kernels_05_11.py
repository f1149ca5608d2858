"""What lessons 05-11's kernel exercises share: the launch of each exercise's tile, the answer
check, a run on the access log, and the GPU path.

The student writes or changes a kernel; the check runs it on small awkward shapes against the
float64 reference, then checks the lesson's technique with the instruments: the access log
(instruments/access_log.py: shared accesses costed by the bank model, barriers, races, the
32-byte sectors of global accesses) on the simulator, the SASS on a GPU.  On a GPU the
simulator-only parts run in a child process on the kernel's own notebook cell."""
import collections
import functools
import os

import numpy as np

from gemm_lessons.measure.problems import check as check_problem
from gemm_lessons.teaching.exercises import evidence
from gemm_lessons.teaching.exercises.core import on_simulator, result_right


# (BM, BN, threads per block) of the launch each SGEMM exercise's kernel is written for
EXERCISE_TILES = {"05-transpose-a": (64, 64, 64), "06-conflict-free": (64, 64, 64),
                  "07-double-buffer": (64, 64, 64), "08-warp-tile": (32, 128, 64)}
# K and N multiples of 4 (the kernels use 16-byte loads), M, N, K not multiples of the tiles
EXERCISE_SHAPES = [(68, 72, 20, 1.0, 0.0), (36, 132, 12, 1.5, -0.5)]
KERNEL_EXERCISES_05_10 = ("05-transpose-a", "06-conflict-free", "07-double-buffer", "08-warp-tile",
                          "09-symmetrize", "10-next-step")


def _tile_launcher(exercise_id):
    BM, BN, threads = EXERCISE_TILES[exercise_id]

    def launch(A, B, C, alpha=1.0, beta=0.0, kernel=None):
        M, K = A.shape
        N = B.shape[1]
        if K % 4 or N % 4:
            raise ValueError("K and N must be multiples of 4 (16-byte loads)")
        kernel[((N + BN - 1) // BN, (M + BM - 1) // BM), threads](A, B, C, np.float32(alpha), np.float32(beta))
    launch.expression = f"kernels_05_11._tile_launcher({exercise_id!r})"  # how a child process builds it
    return launch


def _result_right(launch, kernel, shapes=EXERCISE_SHAPES):
    """(ok, message) of running ``kernel`` through ``launch`` on ``shapes`` (as _kernel_passes)."""
    run = functools.partial(launch, kernel=kernel)
    for M, N, K, alpha, beta in shapes:
        res = check_problem(run, M, N, K, alpha, beta, name="your kernel")
        if not res.passed:
            again = check_problem(run, M, N, K, alpha, beta, name="your kernel")
            changed = (again.rel_error, again.unwritten) != (res.rel_error, res.unwritten)
            said = evidence.wrong_result(res, launch, kernel, changed)
            return False, "the result is wrong: " + _ended(said)
    result_right()
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


def _staged(log, M, N, K):
    """None when the kernel read A and B from global memory only to stage them (each block reads
    its BM x K rows of A and K x BN columns of B once: at most M*K and K*N elements for the one
    block of the check's log); else a sentence on what it reads again, with the line."""
    counts = collections.Counter(e.array for e in log.events if e.kind == "global" and e.op == "ld")
    over = [(name, counts[name], limit) for name, limit in (("A", M * K), ("B", K * N)) if counts[name] > limit]
    if not over:
        return None
    name, got, limit = over[0]
    package = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    lines = collections.Counter(e.site[1] for e in log.events if e.kind == "global" and e.op == "ld"
                                and e.array == name and e.site and not e.site[0].startswith("<unrolled")
                                and not os.path.abspath(e.site[0]).startswith(package))  # a line of the student's
    where = f"; most on line {max(lines, key=lines.get)} of your code" if lines else ""
    return (f"the kernel reads {name} from global memory {got:,} times where staging it needs {limit:,} (the access "
            f"log, one block, {M}x{N}x{K}{where}): the k-step must read the staged tile in shared memory, not {name}")


def _sites(trace, pick):
    """'sAT (16 instructions, 4-byte)' for the instructions of a trace that ``pick`` selects."""
    rows = collections.OrderedDict()
    for ins in trace.instructions:
        if pick(ins):
            key = (ins.array, ins.op, ins.width)
            rows[key] = rows.get(key, 0) + 1
    return "; ".join(f"{'loads from' if op == 'ld' else 'stores into'} {arr}: {n} {w}-byte instruction(s)"
                     for (arr, op, w), n in rows.items())


def _ended(text):
    """``text`` ending a sentence: a full stop added unless it ends one already (".", "?", ".)")."""
    return text if text.endswith((".", "?", ".)")) else text + "."


def _simulator_only(exercise_id, kernel, name=None):
    """On a GPU: run this exercise's check on the simulator, in a child process that executes
    the notebook cell that defined ``kernel`` (the cell must import what it uses); the check
    gets the cell's variable ``name`` (default: the kernel's own name)."""
    try:
        ok, message = on_simulator(kernel, f"(lambda fb: [fb.ok, fb.message])(exercises.check({exercise_id!r}, kernel))",
                                   "the technique check", name=name, timeout=900)
    except LookupError:
        return None, "(the bank tracer and the access log run on the simulator; the source of your kernel's cell was not found, so they were not run)"
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
    return ok is not False, _ended("; ".join(msgs))


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
