"""The global-load counter: run a kernel on the CUDA simulator with counting arrays.

``count_global_accesses(rung, M, N, K)`` runs a rung on counting stand-ins for its device
arrays and returns how many elements of A, B and C it read and wrote: the numbers the load
formulas of lessons 01 and 02 predict.  Works only on the simulator (on a GPU the same
question is answered by the profiler).
"""
import threading

import numpy as np

from gemm_lessons.core import backend
from gemm_lessons.kernels import ladder
from gemm_lessons.measure.problems import random_matrix
from gemm_lessons.instruments.simulator_process import run_on_simulator


def _require_simulator():
    if not backend.SIMULATOR:
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
    if backend.SIMULATOR:
        rungs = {**ladder.SGEMM, **ladder.VARIANTS}
        if name not in rungs:
            raise KeyError(f"unknown rung {name!r}; choose from {sorted(rungs)}")
        return count_global_accesses(rungs[name], M, N, K, alpha, beta)
    code = ("import json, gemm_lessons.instruments.global_loads as t; "
            f"print(json.dumps(t.count_rung({name!r}, {M}, {N}, {K}, {alpha}, {beta})))")
    return run_on_simulator(code, "counting")
