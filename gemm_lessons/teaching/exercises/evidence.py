"""Diagnoses from evidence for a kernel whose result is wrong: what the access log saw it do.

A wrong result has many causes that look alike in C (unwritten elements, values that change from
run to run).  The access log (instruments/access_log.py, simulator only) tells them apart:

* ``c_mapping``: elements of C that no thread writes while others are written twice or more: the
  mapping from threads to elements gives two threads one element and none another (a mapping that
  misses columns), not a missing guard;
* ``shared_use``: a race (a word written by one thread and touched by another between the same two
  barriers), or shared memory read where no thread of the block has written it yet (an
  uninitialised tile: a skipped zero outside the matrix, a store that went elsewhere).

Each returns a sentence for the feedback, with the line of the student's code, or None."""
import collections
import os

import numpy as np


_CORE_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "core")


def _line(site):
    """' (line N of your code)', or '' where the line is not the student's: inside the package's
    intrinsics (load4 runs on the simulator as plain reads in core/float4.py) or in the code
    @unrolled wrote out (its own line numbers)."""
    if not (site and site[1]) or site[0].startswith("<unrolled") or os.path.abspath(site[0]).startswith(_CORE_DIR):
        return ""
    return f" (line {site[1]} of your code)"


def log_sgemm(launch, kernel, M, N, K, seed=5):
    """The access log of ``launch(A, B, C, kernel=kernel)`` on an M x N x K problem (beta 0)."""
    from gemm_lessons.instruments import access_log

    rng = np.random.default_rng(seed)
    arrays = dict(A=rng.uniform(-1, 1, (M, K)).astype(np.float32), B=rng.uniform(-1, 1, (K, N)).astype(np.float32),
                  C=np.zeros((M, N), np.float32))
    log, _ = access_log.log(lambda A, B, C: launch(A, B, C, kernel=kernel), arrays)
    return log


def c_mapping(log, shape):
    """A sentence when the kernel writes some elements of C (``shape``) twice and leaves others
    unwritten; else None."""
    M, N = shape
    stores = collections.Counter(e.address // 4 for e in log.events if e.kind == "global" and e.array == "C"
                                 and e.op == "st")
    site = next((e.site for e in log.events if e.kind == "global" and e.array == "C" and e.op == "st"), ())
    twice = sorted(w for w, n in stores.items() if n > 1)
    never = [w for w in range(M * N) if w not in stores]
    if not (twice and never):
        return None
    rc = lambda w: f"C[{w // N}, {w % N}]"  # noqa: E731
    return (f"the access log ({M}x{N}) sees {len(twice)} element(s) of C written by more than one thread (first "
            f"{rc(twice[0])}, {stores[twice[0]]} times) and {len(never)} written by none (first {rc(never[0])}){_line(site)}: "
            "the mapping from threads to elements of C is not one to one (it misses some columns or rows); "
            "the guards are not the problem")


def shared_use(log):
    """A sentence on the first misuse of shared memory in block 0: a race, or a read of a word no
    thread of the block has written yet; else None."""
    races = log.races()
    if races:
        arr, index, epoch, (t1, _, line1), (t2, op2, line2) = races[0]
        return (f"the access log finds a race: between barriers {epoch} and {epoch + 1}, thread {t1} writes {arr} "
                f"element {index} (line {line1}) while thread {t2} {'reads' if op2 == 'ld' else 'writes'} it "
                f"(line {line2}): is a cuda.syncthreads() missing between writing shared memory and reading it "
                "(or before overwriting it)?")
    evs = sorted((e for e in log.events if e.block == (0, 0, 0) and e.kind == "shared"),
                 key=lambda e: (e.epoch, e.op != "st", e.seq))
    last_write, fresh, stale = {}, collections.defaultdict(set), {}
    for e in evs:
        word = (e.array, e.address // 4)
        if e.op == "st":
            last_write[word] = e.epoch
            continue
        when = last_write.get(word)
        if when is None:
            return _unwritten(log, e, "that no thread of the block has written")
        key = (e.array, e.epoch)
        if when == e.epoch - 1:
            fresh[key].add(word)
        elif when < e.epoch - 1:
            stale.setdefault(key, (e, when))
    # a tile read between two barriers, mostly where the block wrote it just before, but partly where
    # nobody wrote since an earlier slice: the stores of this slice skipped those elements
    for key, (e, when) in stale.items():
        if fresh.get(key):
            return _unwritten(log, e, f"that no thread of the block has written since barrier {when + 1} (an "
                                      "earlier slice's value)")
    return None


def _unwritten(log, e, what):
    shape, itemsize, base = log.arrays[e.array]
    index = np.unravel_index((e.address - base) // itemsize, shape)
    return (f"the access log finds a read of {e.array}[{', '.join(map(str, index))}]{_line(e.site)} {what} "
            f"(block 0, between barriers {e.epoch} and {e.epoch + 1}): that element of the tile was not stored "
            "where it is read, so the value read is whatever was there. Does every element of the tile get "
            "stored (a zero where the matrix ends), and at the place it is read from?")


def diagnose(launch, kernel, shape, in_child=None):
    """The access log's diagnosis of a wrong result at ``shape`` = (M, N, K): c_mapping, else
    shared_use; None when it sees nothing amiss.  The log runs on the simulator: on a GPU (or
    with ``in_child``) in a child process (core.on_simulator) that gets ``launch`` by name
    (launch_name)."""
    from gemm_lessons.core import backend

    if in_child is None:
        in_child = not backend.SIMULATOR
    if in_child:
        return _diagnose_in_child(launch, kernel, shape)
    M, N, K = shape
    try:
        log = log_sgemm(launch, kernel, M, N, K)
    except Exception:  # noqa: BLE001 (the result's own message stands)
        return None
    return c_mapping(log, (M, N)) or shared_use(log)


def launch_name(launch):
    """An expression for ``launch`` in a child process that imports this module's package:
    its ``expression`` (a launch built by a function), else module.name; None when it has neither."""
    if getattr(launch, "expression", None):
        return launch.expression
    if "<" in getattr(launch, "__qualname__", "<"):  # a closure or a lambda: no name to import
        return None
    return f"importlib.import_module({launch.__module__!r}).{launch.__qualname__}"


def _diagnose_in_child(launch, kernel, shape):
    from gemm_lessons.teaching.exercises.core import on_simulator

    launcher = launch_name(launch)
    if launcher is None:
        return None
    try:
        return on_simulator(kernel, f"evidence.diagnose({launcher}, kernel, {tuple(shape)!r}, in_child=False)",
                            "the access log")
    except (LookupError, RuntimeError):  # the result's own message stands
        return None


def wrong_result(res, launch, kernel, changed):
    """The message for a failed measure.problems.check result ``res``: its own, with the access
    log's diagnosis where it has one (``changed``: the result differed between two runs)."""
    M, N, K = res.shape
    evidence = diagnose(launch, kernel, (M, N, K))
    message = res.message()
    if evidence and evidence.startswith("the access log (") and "never written" in message:
        message = message.replace(": check the guards and the grid size", "")
    if changed:
        return (message + ". The result changed between two runs on the same input: "
                + (evidence if evidence else "a race. Is a cuda.syncthreads() missing between writing shared memory "
                                             "and reading it (or before overwriting it)?"))
    return message + (f"; {evidence}" if evidence else "")
