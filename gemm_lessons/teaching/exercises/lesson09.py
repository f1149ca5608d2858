"""Lesson 09's exercise: dst = src + src.T through a padded shared tile (coalesced, conflict-free)."""
import collections

import numpy as np

from gemm_lessons.core import backend
from gemm_lessons.teaching.exercises.core import exercise, on_simulator, result_right
from gemm_lessons.teaching.exercises.kernels_05_11 import _on_gpu

TRANSPOSE_TILE = (32, 8)  # 09-symmetrize: 32 x 32 tiles, blocks of 32 x 8 threads


_SYM_SIZES = (67, 40, 1)


def shared_shape_expressions(kernel):
    """The shapes of ``cuda.shared.array`` calls in a kernel's source that are not constants: a
    dimension must be a number or a name not assigned inside the kernel (a global, a closure
    variable); ``(TILE, TILE + 1)`` runs on the simulator but a GPU compile rejects it.  [] when
    the source cannot be read."""
    import ast
    import inspect
    import textwrap

    fn = getattr(kernel, "py_func", kernel)
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return []
    local = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}

    def constant(node):
        return ((isinstance(node, ast.Constant) and isinstance(node.value, int))
                or (isinstance(node, ast.Name) and node.id not in local))

    found = []
    for call in ast.walk(tree):
        if (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "array"
                and isinstance(call.func.value, ast.Attribute) and call.func.value.attr == "shared"):
            shape = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "shape"), None)
            if shape is None:
                continue
            dims = shape.elts if isinstance(shape, ast.Tuple) else [shape]
            if not all(constant(d) for d in dims):
                found.append(ast.unparse(shape))
    return found


def _access_log(kernel, n=64):
    """The access log of the kernel on an n x n matrix (simulator)."""
    from gemm_lessons.instruments import access_log

    src = np.random.default_rng(8).uniform(-1, 1, (n, n)).astype(np.float32)
    log, _ = access_log.log(lambda src, dst: _launch_symmetrize(kernel, src, dst),
                            dict(src=src, dst=np.zeros((n, n), np.float32)))
    return log


def shared_misuse(kernel, log=None):
    """evidence.shared_use of the kernel's access log (a race, a read of what no thread wrote), or
    None; on the simulator."""
    from gemm_lessons.teaching.exercises import evidence

    return evidence.shared_use(log if log is not None else _access_log(kernel))


def _gpu_misuse(kernel):
    """On a GPU: shared_misuse, in a child process on the simulator; None when it cannot run."""
    try:
        return on_simulator(kernel, "lesson09.shared_misuse(kernel)", "the access log")
    except (LookupError, RuntimeError):  # the wrong result's own message stands
        return None


def _launch_symmetrize(kernel, src, dst):
    TILE, ROWS = TRANSPOSE_TILE
    n = src.shape[0]
    grid = ((n + TILE - 1) // TILE, (n + TILE - 1) // TILE)
    kernel[grid, (TILE, ROWS)](src, dst)


# the stages of 09-symmetrize's check, each with the hint (a step, from 1) its failure quotes
_COALESCE, _INDEX, _BANKS = 1, 2, 3


@exercise("09-symmetrize",
          "both the read of src and the write of dst should go along rows (threadIdx.x along a row): take the "
          "transposed element from a shared tile, not from global memory.",
          "the block that writes dst's tile at rows r0.., columns c0.. needs src's mirror tile, rows c0.., columns "
          "r0..: stage it row by row before the barrier. Follow one element: dst[r, c] with r = r0 + ty + j and "
          "c = c0 + tx needs src[c, r]. Which thread (tx, ty, j) loads src[c, r] when a warp reads along a row of "
          "src, and where in the tile does it put it? Read that tile position in the second loop.",
          "in the second loop the lanes of a warp differ in the tile's first index: they read a column, and a "
          "column of a tile 32 floats wide lies in one bank. What tile width puts row l in bank l? Write the "
          "shape with constants (numbers, or globals such as TILE): numba compiling for a GPU rejects an "
          "expression there.",
          answer="symmetrize", technique=True,
          defines="symmetrize: the @cuda.jit kernel (src, dst) writing dst = src + src.T, launched with 32 x 8 "
                  "threads per 32 x 32 tile")
def check_symmetrize_through_shared_tile(kernel):
    from numba import cuda

    from gemm_lessons.measure.problems import POISON, POISON_BITS

    shapes = shared_shape_expressions(kernel)
    if shapes:
        return False, (f"the shared array's shape {shapes[0]} has an expression: the simulator runs it, but numba "
                       "compiling for a GPU needs every dimension a constant (a number, or a global such as TILE "
                       "set outside the kernel)."), _BANKS
    log = None
    if backend.SIMULATOR:  # first: a race may or may not spoil a result
        log = _access_log(kernel)
        misuse = shared_misuse(kernel, log)
        if misuse:
            return False, f"dst = src + src.T through the shared tile: {misuse}", _INDEX
    rng = np.random.default_rng(9)
    for n in _SYM_SIZES:
        src = rng.uniform(-1, 1, (n, n)).astype(np.float32)
        dst = cuda.to_device(np.full((n, n), POISON, np.float32))
        _launch_symmetrize(kernel, cuda.to_device(src), dst)
        got = dst.copy_to_host()
        unwritten = got.view(np.uint32) == POISON_BITS
        if unwritten.any():
            r, c = np.argwhere(unwritten)[0]
            return (False, f"for n = {n}, {int(unwritten.sum())} element(s) of dst were never written (first at "
                           f"{r}, {c}).", _INDEX)
        want = src + src.T
        if not np.array_equal(got, want):
            r, c = np.argwhere(got != want)[0]
            wrong = (f"for n = {n}, dst[{r}, {c}] = {got[r, c]!r}, expected src[{r}, {c}] + src[{c}, {r}] = "
                     f"{want[r, c]!r}")
            misuse = None if backend.SIMULATOR else _gpu_misuse(kernel)
            return False, wrong + (f"; on the CUDA simulator (in a separate process), {misuse}." if misuse else "."), _INDEX
    result_right()
    right = f"dst = src + src.T is right for n = {', '.join(map(str, _SYM_SIZES))}"
    if not backend.SIMULATOR:
        return _on_gpu("09-symmetrize", kernel, right)
    n = 64
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
                       "Read src[c, r] through a shared tile instead."), _COALESCE
    trace = log.shared_trace(merge=False)
    if not trace.instructions:
        return False, right + ", but no shared memory was used.", _COALESCE
    t = trace.totals()
    if t["conflicts"]:
        worst = max(trace.instructions, key=lambda i: i.cost.degree)
        return False, (right + f", coalesced, but the shared tile has bank conflicts: {t['wavefronts']} wavefronts "
                       f"where {t['ideal']} would do (block 0; the worst, a {'load from' if worst.op == 'ld' else 'store into'} "
                       f"{worst.array} on line {worst.site[1]}, is {worst.cost.degree}-way). Pad the tile."), _BANKS
    return True, (right + f"; every warp's global access touches the fewest 32-byte sectors possible (the access "
                  f"log, {n}x{n}), and the shared tile is conflict-free ({t['instructions']} instructions, "
                  f"{t['wavefronts']} wavefronts, block 0).")


IN_FLIGHT_THREADS = 2048  # 09-in-flight: threads resident per SM (8 blocks of 32 x 8), as the question gives


def in_flight_answer(machine=None):
    """(bytes each thread of 09-symmetrize loads before the barrier, the limiter model's share of the
    copy rate for them at IN_FLIGHT_THREADS per SM) on the limiter record's machine."""
    from gemm_lessons.model import limiter
    from gemm_lessons.teaching import limiter_table

    machine = machine or limiter_table.machine()
    tile, rows = TRANSPOSE_TILE
    per_thread = 4 * (tile // rows)  # the staging loop: tile / rows loads of one float32, none waiting for another
    share = min(1.0, limiter.LATENCY_DUTY * per_thread * IN_FLIGHT_THREADS / machine.in_flight_needed_per_sm)
    return per_thread, share


@exercise("09-in-flight",
          "count the loads one thread issues before cuda.syncthreads(): each is one float32, 4 bytes, and none of "
          "them waits for another.",
          "the staging loop runs TILE / ROWS times. Bytes in flight per SM = bytes per thread x the threads on the "
          "SM; the model has them in flight half the time (LATENCY_DUTY).",
          "share = min(1, LATENCY_DUTY x bytes per thread x threads per SM / (B x L per SM)), with B x L per SM the "
          "lesson's `need` (limiter_table.machine().in_flight_needed_per_sm). The min matters.",
          answer="my_in_flight",
          defines="my_in_flight: a pair, (bytes each thread of symmetrize loads before the barrier, the model's share "
                  "of the copy rate at 2,048 threads per SM)")
def check_symmetrize_bytes_in_flight(ans):
    try:
        got = tuple(float(v) for v in ans)
        assert len(got) == 2
    except (TypeError, ValueError, AssertionError):
        return False, "answer with a pair: (bytes per thread before the barrier, the model's share of the copy rate)."
    per_thread, share = in_flight_answer()
    if got[0] != per_thread:
        return False, (f"{got[0]:g} bytes is not what one thread of symmetrize loads before the barrier"
                       + (": that is one load, and the staging loop issues more." if got[0] == 4 else "."))
    if got[1] > 1 + 1e-9:
        return False, (f"{per_thread} bytes per thread is right; a share of {got[1]:.3g} is more than the copy rate "
                       "itself: Little's law only caps the rate, so the share is at most 1."), 3
    if abs(got[1] - share) > 0.02 * share:
        return False, f"{per_thread} bytes per thread is right; {got[1]:.3g} is not the model's share.", 3
    loaded = IN_FLIGHT_THREADS * per_thread
    return True, (f"{per_thread} bytes a thread, {loaded:,} per SM: "
                  + ("enough for the whole copy rate" if share >= 1 else f"{share:.0%} of the copy rate")
                  + ", as for smem_padded_32x8, whose staging loop is the same.")
