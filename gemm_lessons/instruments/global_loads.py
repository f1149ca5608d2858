"""The global-load counter: run a kernel on the CUDA simulator with counting arrays.

``count_global_accesses(rung, M, N, K)`` runs a rung on counting stand-ins for its device
arrays and returns how many elements of A, B and C it read and wrote: the numbers the load
formulas of lessons 01 and 02 predict.  Works only on the simulator (on a GPU the same
question is answered by the profiler).
"""
import threading

import numpy as np

from .. import _backend, ladder
from ..problems import random_matrix
from .simulator_process import run_on_simulator


def _require_simulator():
    if not _backend.SIMULATOR:
        raise RuntimeError("the counter runs kernels on the CUDA simulator; start Python with "
                           "GEMM_LESSONS_SIMULATOR=1 to use it on a machine with a GPU.")


def counting_array(host):
    """A simulator device array that counts element reads and writes."""
    _require_simulator()
    from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray  # simulator mode only

    class CountingArray(FakeCUDAArray):
        def __init__(self, ary):
            super().__init__(ary)
            self.reads = 0
            self.writes = 0
            self._lock = threading.Lock()

        def __getitem__(self, idx):
            with self._lock:
                self.reads += 1
            return super().__getitem__(idx)

        def __setitem__(self, idx, val):
            with self._lock:
                self.writes += 1
            return super().__setitem__(idx, val)

    return CountingArray(np.ascontiguousarray(host))


def count_global_accesses(rung, M, N, K, alpha=1.0, beta=0.0, seed=0):
    """Run ``rung`` once on counting arrays; returns reads and writes per matrix."""
    rng = np.random.default_rng(seed)
    A = counting_array(random_matrix(M, K, rng))
    B = counting_array(random_matrix(K, N, rng))
    C = counting_array(random_matrix(M, N, rng))
    rung(A, B, C, alpha=alpha, beta=beta)
    return {"A_reads": A.reads, "B_reads": B.reads, "C_reads": C.reads, "C_writes": C.writes,
            "global_reads": A.reads + B.reads}


def count_rung(name, M, N, K, alpha=1.0, beta=0.0):
    """count_global_accesses for a ladder rung or variant, by name.  On a machine with a GPU
    this runs in a child Python process on the simulator, so notebooks can call it anywhere."""
    if _backend.SIMULATOR:
        rungs = {**ladder.SGEMM, **ladder.VARIANTS}
        if name not in rungs:
            raise KeyError(f"unknown rung {name!r}; choose from {sorted(rungs)}")
        return count_global_accesses(rungs[name], M, N, K, alpha, beta)
    code = ("import json, gemm_lessons.instruments.global_loads as t; "
            f"print(json.dumps(t.count_rung({name!r}, {M}, {N}, {K}, {alpha}, {beta})))")
    return run_on_simulator(code, "counting")


# --- which elements a warp reads together: sectors per warp-wide read (lesson 01) ------------
SECTOR_BYTES = 32


def recording_array(host, name, log):
    """A simulator device array that appends (block, thread, name, n, flat index) to ``log`` for
    every element read: the n-th read of array ``name`` by that thread.  Reads that fail (an
    index out of bounds) raise as usual and are not recorded."""
    _require_simulator()
    from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray  # simulator mode only

    class RecordingArray(FakeCUDAArray):
        def __init__(self, ary):
            super().__init__(ary)
            self._lock = threading.Lock()
            self._seen = {}

        def __getitem__(self, idx):
            value = super().__getitem__(idx)
            t = threading.current_thread()
            where = (tuple(t.blockIdx), t.thread_id) if hasattr(t, "blockIdx") else ((0, 0, 0), 0)
            parts = idx if isinstance(idx, tuple) else (idx,)
            try:
                flat = int(np.ravel_multi_index(tuple(int(i) % n for i, n in zip(parts, self.shape)),
                                                self.shape))
            except (TypeError, ValueError):  # a slice: not an element read a GPU kernel could make
                return value
            with self._lock:
                n = self._seen[where] = self._seen.get(where, 0) + 1
                log.append((where[0], where[1], name, n, flat))
            return value

    return RecordingArray(np.ascontiguousarray(host))


def sectors_per_read(rung, M, N, K, alpha=1.0, beta=0.0, seed=0, itemsize=4):
    """Run ``rung(A, B, C, alpha=, beta=)`` once on recording arrays and count, for A and for B,
    the warp-wide reads and the 32-byte sectors they touch.

    A warp is 32 threads of consecutive linear thread index (threadIdx.x varying fastest); the
    n-th read of a matrix by each lane of a warp makes one warp-wide read (the shared tracer
    pairs shared-memory accesses the same way).  Each array is taken to start on a 256-byte
    boundary (as cudaMalloc's are), so element e lies in sector e * itemsize // 32.
    Returns {"A": {"reads": warp-wide reads, "sectors": sectors summed over them,
    "per_read": their ratio}, "B": {...}}."""
    rng = np.random.default_rng(seed)
    log = []
    A = recording_array(random_matrix(M, K, rng), "A", log)
    B = recording_array(random_matrix(K, N, rng), "B", log)
    C = counting_array(random_matrix(M, N, rng))
    rung(A, B, C, alpha=alpha, beta=beta)
    requests = {}
    for block, tid, name, n, flat in log:
        requests.setdefault((name, block, tid // 32, n), set()).add(flat * itemsize // SECTOR_BYTES)
    out = {}
    for name in ("A", "B"):
        sizes = [len(s) for key, s in requests.items() if key[0] == name]
        out[name] = {"reads": len(sizes), "sectors": sum(sizes),
                     "per_read": sum(sizes) / len(sizes) if sizes else 0.0}
    return out
