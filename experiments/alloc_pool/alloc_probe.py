"""What allocating C costs a gl.sgemm call, on a GPU: the driver's stream-ordered pool
(gemm_lessons.library.allocate, the library's default) against numba's allocator, in one process.

    python3 -m experiments.alloc_pool.alloc_probe [--out DIR]   -> DIR/alloc-pool-probe-<device>.json
    (from the repository root, on a GPU; kept in experiments/alloc_pool/)

Per call, at 128^2 to 1024^2 (square, K = N = M):
  * issue: host time per call, 10 batches of 20 calls back to back (as runs.shapes measures it);
  * sync: one call then cuda.synchronize(), host time, 50 calls;
for gl.sgemm(A, B, C), gl.sgemm(A, B) with each allocator, and torch's A @ B for scale (when
torch is there).  Checked first: the pooled C's product against float64, its alignment, and
that 2,000 pooled allocations of 4 MiB dropped one by one leave the free memory where it was.
"""
import argparse
import sys
import time

import numpy as np

import gemm_lessons  # noqa: F401  (chooses the GPU before numba.cuda is imported)
from gemm_lessons.library import allocate, device_arrays
from gemm_lessons.measure import provenance
from gemm_lessons.measure.device import device_info
from gemm_lessons.runs.shapes import check_product, random_device_matrix
from numba import cuda

from experiments._shared import batch_issue_us, write_record

SIZES = (128, 256, 512, 1024)


def issue_us(fn, batches=10, calls=20):
    return _stats(batch_issue_us(fn, calls, batches))


def sync_us(fn, calls=50):
    for _ in range(5):
        fn()
    cuda.synchronize()
    per = []
    for _ in range(calls):
        t0 = time.perf_counter()
        fn()
        cuda.synchronize()
        per.append((time.perf_counter() - t0) * 1e6)
    return _stats(per)


def _stats(values):
    p10, p50, p90 = np.percentile(values, [10, 50, 90])
    return {"median_us": float(p50), "p10_us": float(p10), "p90_us": float(p90)}


def numba_allocator(on):
    """Make the library allocate with numba's cuda.device_array (on) or the driver's pool (off)."""
    allocate._STATE.clear()
    if on:
        allocate._STATE["driver"] = None


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out", default=None)
    args = p.parse_args()
    if gemm_lessons.SIMULATOR:
        sys.exit("the allocation probe times allocations: run it on a GPU")
    record = {"device": device_info().name, "date": provenance.now(), "versions": provenance.versions(),
              "git_commit": provenance.git_commit(), "pool_keep_bytes": allocate.POOL_KEEP, "checks": [],
              "timings": {}}
    numba_allocator(False)
    if allocate._driver() is None:
        sys.exit("the driver's pool is not available here (cuda.bindings, or a driver without memory pools)")
    rng = np.random.default_rng(5)
    A, a = random_device_matrix(300, 200, rng)
    B, b = random_device_matrix(200, 260, rng)
    C = device_arrays.sgemm(A, B)
    ok, err, _ = check_product(a, b, C.copy_to_host())
    pointer = C.device_ctypes_pointer.value
    record["checks"].append({"what": "gl.sgemm(A, B), pooled C, 300x200x260", "correct": bool(ok),
                             "rel_err": float(err), "aligned_256": pointer % 256 == 0})
    free0 = cuda.current_context().get_memory_info().free
    for _ in range(2000):
        allocate.empty(1024, 1024)
    cuda.synchronize()
    free1 = cuda.current_context().get_memory_info().free
    record["checks"].append({"what": "2,000 pooled 4 MiB arrays dropped one by one", "free_before": free0,
                             "free_after": free1, "kept_mib": (free0 - free1) / 2**20})
    print(record["checks"])
    try:
        import torch
    except ImportError:
        torch = None
    for n in SIZES:
        A, _ = random_device_matrix(n, n, rng)
        B, _ = random_device_matrix(n, n, rng)
        C = cuda.device_array((n, n), np.float32)
        callers = {"gl.sgemm(A, B, C)": lambda: device_arrays.sgemm(A, B, C),
                   "gl.sgemm(A, B), driver's pool": lambda: device_arrays.sgemm(A, B),
                   "gl.sgemm(A, B), numba's allocator": lambda: device_arrays.sgemm(A, B)}
        if torch is not None:
            ta, tb = torch.rand(n, n, device="cuda"), torch.rand(n, n, device="cuda")
            callers["torch A @ B"] = lambda: ta @ tb
        for name, fn in callers.items():
            numba_allocator("numba" in name)
            row = {"issue": issue_us(fn), "sync": sync_us(fn)}
            record["timings"][f"{name} {n}^2"] = row
            print(f"{name:36s} {n:5d}^2  issue {row['issue']['median_us']:7.1f} us  sync {row['sync']['median_us']:7.1f} us",
                  flush=True)
        numba_allocator(False)
    write_record("alloc_pool", record, args.out)


if __name__ == "__main__":
    main()
