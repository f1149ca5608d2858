"""Lesson 00a's exercises (the primer): a guarded launch, and blocks per SM."""
import contextlib

import numpy as np

from gemm_lessons.teaching.exercises.core import exercise, result_right


_LAUNCH_SIZES = (1, 129, 300)
_THREADS = 128  # threads per block the task asks for


@contextlib.contextmanager
def launches(watch=None):
    """Every kernel launch made inside the ``with`` block: a list that fills with (grid, block),
    each as numba normalises them (three ints).  It wraps the ``kernel[grid, block]`` of numba's
    kernels (the simulator's or the GPU's) for the duration; the launches run as before.
    ``watch(stage)``, if given, is called with "before" and "after" around each launch.  Kernels
    of numba's own (a device array's ``out[:] = values`` launches one on a GPU) are not counted."""
    from gemm_lessons.core import backend

    if backend.SIMULATOR:
        from numba.cuda.simulator.kernel import FakeCUDAKernel as cls
    else:
        from numba.cuda.dispatcher import CUDADispatcher as cls
    from numba.cuda.errors import normalize_kernel_dimensions

    seen = []
    original = cls.__getitem__

    def getitem(self, config):
        if getattr(getattr(self, "py_func", None), "__module__", "").startswith("numba"):
            return original(self, config)
        seen.append(tuple(tuple(d) for d in normalize_kernel_dimensions(*config[:2])))
        launcher = original(self, config)
        if watch is None:
            return launcher

        def launch(*args, **kwargs):
            watch("before")
            try:
                return launcher(*args, **kwargs)
            finally:
                watch("after")
        return launch

    cls.__getitem__ = getitem
    try:
        yield seen
    finally:
        cls.__getitem__ = original


@exercise("00a-launch",
          "three things are checked: the kernel is launched with 128 threads per block, every element of out is "
          "written, and nothing is written past its end (the sizes are not multiples of 128).",
          "the number of blocks must round up, not down; the last block then has threads without an element: each "
          "thread tests its index before it reads or writes.",
          "blocks = (n + threads - 1) // threads rounds up to whole blocks; inside the kernel, "
          "i = cuda.grid(1) and `if i < out.size:` before touching any array.",
          answer="launch", technique=True,
          defines="launch(x, y, out): launches, 128 threads per block, a @cuda.jit kernel with out = 2*x - y")
def check_launch_and_guard(ans):
    watcher = _Watcher()
    with launches(watcher) as seen:
        result = _check_launch(ans, watcher)
    blocks = sorted({b[0] * b[1] * b[2] for _, b in seen})
    if not seen:
        return False, "launch(x, y, out) launched no kernel: it must launch a @cuda.jit kernel with kernel[blocks, threads]."
    if not result[0]:
        return result
    if blocks != [_THREADS]:
        return False, (f"the kernel was launched with {' and '.join(map(str, blocks))} threads per block; the task asks "
                       f"for {_THREADS}.")
    grids = [g[0] * g[1] * g[2] for g, _ in seen]
    want = [-(-n // _THREADS) for n in _LAUNCH_SIZES]
    if len(grids) == len(want) and grids != want:  # one launch per call: its grid must be the one asked for
        n, got, need = next((n, g, w) for n, g, w in zip(_LAUNCH_SIZES, grids, want) if g != w)
        return False, (f"for n = {n} the kernel was launched with {got} block(s) of {_THREADS} threads; the task asks "
                       f"for the fewest that cover n, {need}: "
                       + ("the extra blocks' threads only test the guard." if got > need else "some elements have no thread."))
    return result


class _Watcher:
    """Snapshots of the output buffer around each kernel launch (``launches(watch=...)``): to tell
    values a kernel wrote from values the host wrote before or after the kernels ran."""

    def __init__(self):
        self.read = None  # () -> the whole output buffer as a host array (set per size)
        self.first_before = self.last_after = None

    def start(self, read):
        self.read, self.first_before, self.last_after = read, None, None

    def __call__(self, stage):
        if self.read is None:
            return
        if stage == "before" and self.first_before is None:
            self.first_before = self.read().copy()
        elif stage == "after":
            self.last_after = self.read().copy()

    def host_writes(self, n, final):
        """What the host, not a kernel, did to out[:n]: a message, or None."""
        from gemm_lessons.measure.problems import POISON

        poison = np.float32(POISON).view(np.uint32)
        if self.first_before is None:
            return None  # no launch: reported by the caller
        before = int(np.count_nonzero(self.first_before[:n].view(np.uint32) != poison))
        if before:
            return (f"for n = {n}, {before} element(s) of out were written before any kernel ran: the result must "
                    "be computed by the kernel, each thread writing its own element, not by host code.")
        after = int(np.count_nonzero(final[:n].view(np.uint32) != self.last_after[:n].view(np.uint32)))
        if after:
            return (f"for n = {n}, {after} element(s) of out were changed after the last kernel had finished: the "
                    "result must be written by the kernel, not by host code after the launch.")
        return None


def _check_launch(ans, watcher=None):
    """(ok, message) on what ``ans`` wrote into out, for each of _LAUNCH_SIZES; with a _Watcher
    (the launches watched), also whether the kernels wrote it rather than the host."""
    import numpy as np

    from gemm_lessons.core import backend
    from gemm_lessons.measure.problems import POISON

    rng = np.random.default_rng(7)
    host = None  # the first sign that the host, not a kernel, wrote out
    for n in _LAUNCH_SIZES:
        x = rng.standard_normal(n).astype(np.float32)
        y = rng.standard_normal(n).astype(np.float32)
        pad = 256  # room after the output: a write past the end lands here (on a GPU nothing stops it)
        if backend.SIMULATOR:
            out = np.full(n + pad, POISON, np.float32)
            if watcher is not None:
                watcher.start(lambda: out)
            ans(x, y, out[:n])
            got = out
        else:
            from numba import cuda

            out = cuda.to_device(np.full(n + pad, POISON, np.float32))
            if watcher is not None:
                watcher.start(out.copy_to_host)
            ans(cuda.to_device(x), cuda.to_device(y), out[:n])
            got = out.copy_to_host()
        if watcher is not None:
            watcher.read = None
            host = host or watcher.host_writes(n, got)
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
    result_right()  # the values: right, whoever wrote them
    if host:
        return False, host
    return True, (f"out = 2x - y is right for n = {', '.join(map(str, _LAUNCH_SIZES))}, every element written "
                  f"and nothing written past the end, {_THREADS} threads per block.")


# how students name the four resources (spelling, case, short names): each to the name blocks_per_sm uses
_RESOURCES = {"registers": ("registers", "register", "regs", "reg", "register file", "rf"),
              "shared memory": ("shared memory", "shared", "smem", "shmem", "shared mem", "shared-memory",
                                "shared_memory", "sharedmemory", "shared memory per sm", "l1/shared"),
              "threads": ("threads", "thread", "threads per sm", "warps", "warp"),
              "blocks": ("blocks", "block", "blocks per sm", "max blocks", "ctas", "cta")}


def resource(name):
    """The resource ``name`` means ("registers", "shared memory", "threads" or "blocks"), however it
    is spelt (case, spaces, underscores, common short names); None when it is none of them."""
    key = " ".join(str(name).strip().lower().replace("_", " ").split())
    return next((r for r, names in _RESOURCES.items() if key in names or key.replace(" ", "") in
                 {n.replace(" ", "") for n in names}), None)


@exercise("00a-occupancy",
          "work out how many blocks each resource allows on one SM (registers, shared memory, threads, blocks): the "
          "smallest count is the answer, and its resource the limiter.",
          "the limits table of part 4 has the SM's totals; mind how they are handed out: registers per warp, shared "
          "memory per block, with something reserved.",
          "Registers: a warp needs registers x 32, rounded up to a multiple of 256; "
          "shared memory: CUDA also reserves 1 KiB (1,024 bytes) for each block besides its own; "
          "threads: 2,048 per SM; blocks: 32 per SM. The smallest of the four counts wins.",
          answer="answer",
          defines='answer: a pair (blocks per SM, the limiting resource), e.g. (2, "threads")')
def check_blocks_per_sm(ans):
    from gemm_lessons.instruments.compiler_facts import blocks_per_sm

    try:
        blocks, limiter = ans
    except (TypeError, ValueError):
        return False, "answer with a pair: (blocks per SM, the resource that limits it)."
    from gemm_lessons.instruments.compiler_facts import SM_LIMITS_CC90 as lm

    want = blocks_per_sm(40, 57 * 1024, 128)
    unreserved = blocks_per_sm(40, 57 * 1024, 128, limits=dict(lm, shared_reserved_per_block=0))[0]
    named = resource(limiter)
    if named is None:
        return False, (f"{limiter!r} is not one of the four resources: registers, shared memory, threads or blocks "
                       "(per SM). Name the one whose count is the smallest.")
    try:
        blocks = int(blocks) if float(blocks) == int(float(blocks)) else float(blocks)
    except (TypeError, ValueError):
        return False, f"the blocks per SM should be a number, not {blocks!r}."
    limiter = named
    if (blocks, limiter) == (want[0], want[1]):
        reserved = lm["shared_reserved_per_block"] // 1024
        return True, (f"{want[0]} blocks per SM, limited by {want[1]}: each block takes 57 KiB + {reserved} KiB "
                      f"reserved, and {lm['shared_bytes'] // 1024} KiB hold {want[0]} of those (without the reserved "
                      f"KiB, {unreserved}).")
    if (blocks, limiter) == (unreserved, want[1]):
        return False, (f"{blocks} blocks of 57 KiB would fit if shared memory held nothing else: what more does "
                       "each block take from the SM's shared memory?")
    if blocks == want[0]:
        return False, f"{blocks} is right, but the limiting resource is not {limiter!r}."
    return False, f"{(blocks, limiter)} is not it."
