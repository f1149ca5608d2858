"""Larger block tiles for large squares, against the library's 128x128 and cuBLAS, on a GPU.

    python3 tools/bigtile_probe.py [--out DIR]  -> DIR/experiments/bigtile-probe-<device>.json

Issue 14 asks for large squares at or past cuBLAS.  tools/ncu_vs_cublas.py found cuBLAS's
kernel at 16384^3 working on 256x128 block tiles with 224 registers (one block of 256 threads
per SM), where gl.sgemm works on 128x128 tiles with 128 registers (two blocks of 256 per SM).
A larger block tile loads each float of A and B from global memory for more products (the
tile's arithmetic intensity doubles along one side), at the price of fewer resident warps.
TileConfig takes such tiles as they are; this probe times three that compile without spills
for sm_90 (offline: python -m gemm_lessons.runs.arch_facts style compile, recorded below):
  * 256x128x8, warp tiles 64x64, 16x8 results per thread: 256 threads, ~219 registers;
  * 128x256x8, warp tiles 64x64, 8x16 per thread: 256 threads, ~229 registers;
  * 256x128x16, warp tiles 32x64, 8x8 per thread, one shared buffer: 512 threads, 128 registers.
Each is checked against float64 on a non-square product (every element) and at each timed
size (a sample), then timed back to back (shapes.back_to_back) with cuBLAS timed before and
after the candidates in the same run; the record keeps both cuBLAS medians, so drift shows.
"""
import argparse
import json
import os
import sys
import time
from dataclasses import replace

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import numpy as np  # noqa: E402

import gemm_lessons  # noqa: E402  (chooses the GPU before numba.cuda is imported)
from gemm_lessons.measure import cublas, provenance
from gemm_lessons.library import dispatch
from gemm_lessons.records import results  # noqa: E402
from gemm_lessons.measure.device import device_info  # noqa: E402
from gemm_lessons.library.launch import Launcher  # noqa: E402
from gemm_lessons.measure.problems import POISON  # noqa: E402
from gemm_lessons.kernels.sgemm import warptile  # noqa: E402
from gemm_lessons.runs.shapes import back_to_back, check_product, random_device_matrix  # noqa: E402
from numba import cuda  # noqa: E402
from numba.cuda import types  # noqa: E402

ARR, F32 = types.Array(types.float32, 2, "C"), types.float32
BASE = dispatch.TILES["128x128"]
CONFIGS = {
    "library 128x128": BASE,
    "256x128 thread 16x8": replace(BASE, BM=256, BN=128, BK=8, WM=64, WN=64, TM=16, TN=8, max_registers=None),
    "128x256 thread 8x16": replace(BASE, BM=128, BN=256, BK=8, WM=64, WN=64, TM=8, TN=16, max_registers=None),
    "256x128x16 512 threads": replace(BASE, BM=256, BN=128, BK=16, WM=32, WN=64, stages=1, max_registers=128),
}
SIZES = [2048, 4096, 8192, 16384]
CHECK_SHAPE = (1000, 1096, 904)  # M, N, K: not multiples of the tiles (K and N multiples of 4)


def launcher(cfg):
    """run(A, B, C): the kernel of ``cfg`` launched as gl.sgemm launches it (alpha 1, beta 0)."""
    la = Launcher(warptile.kernel_for(cfg), (ARR, ARR, ARR, F32, F32), cfg.threads)

    def run(A, B, C):
        M, N = C.shape
        la(cfg.grid(M, N), A, B, C, 1.0, 0.0)

    regs = la.kernel.get_regs_per_thread()
    run.registers = regs if isinstance(regs, int) else None
    return run


def poisoned(M, N):
    """An M x N device array of problems.POISON, which check_product reports if any is left."""
    return cuda.to_device(np.full((M, N), POISON, np.float32))


def time_squares(runs, sizes, rng, failures):
    """Rows of the record: for each n in ``sizes``, cuBLAS timed back to back, then each of ``runs``
    (name -> run(A, B, C)) checked on a poisoned C against float64 (a sample) and timed back to
    back, then cuBLAS again; % of cuBLAS against the mean of its two medians.  Wrong results are
    appended to ``failures``."""
    from numba import cuda

    rows = []
    for n in sizes:
        A_d, A = random_device_matrix(n, n, rng)
        B_d, B = random_device_matrix(n, n, rng)
        row = {"shape": [n, n, n], "kernels": {}}
        C = cuda.device_array((n, n), np.float32)
        row["cublas_before"] = back_to_back(lambda: cublas.sgemm(A_d, B_d, C)).__dict__
        for name, run in runs.items():
            C = poisoned(n, n)
            run(A_d, B_d, C)
            ok, err, how = check_product(A, B, C.copy_to_host())
            if not ok:
                failures.append((name, n))
            t = back_to_back(lambda run=run, C=C: run(A_d, B_d, C)).__dict__
            row["kernels"][name] = dict(correct=ok, rel_error=err, checked=how, back_to_back=t)
        row["cublas_after"] = back_to_back(lambda: cublas.sgemm(A_d, B_d, C)).__dict__
        ref = (row["cublas_before"]["median_ms"] + row["cublas_after"]["median_ms"]) / 2
        print(f"{n}^3  cuBLAS {row['cublas_before']['median_ms']:.4f} / {row['cublas_after']['median_ms']:.4f} ms",
              flush=True)
        for name, k in row["kernels"].items():
            k["pct_cublas"] = 100 * ref / k["back_to_back"]["median_ms"]
            print(f"   {name:26s} {k['back_to_back']['median_ms']:.4f} ms  {k['pct_cublas']:5.1f}%  ok {k['correct']}",
                  flush=True)
        rows.append(row)
        del A_d, B_d, C
    return rows


def write_record(kind, fields, t_start, out):
    """The probe's record (device, date, versions, commit and ``fields``), written to
    results.path_for(kind) under ``out`` when given."""
    info = device_info()
    record = {"kind": kind, "device": info.name, "date": provenance.now(), "versions": provenance.versions(),
              "git_commit": provenance.git_commit(), "pct_of": "mean of the cuBLAS medians before and after",
              **fields, "seconds": round(time.perf_counter() - t_start, 1)}
    if out:
        path = results.path_for(kind, info.name, directory=out)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as fh:
            json.dump(record, fh, indent=1)
        print("wrote", path)
    return record


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out", default=None)
    p.add_argument("--sizes", type=int, nargs="+", default=SIZES)
    args = p.parse_args()
    if gemm_lessons.SIMULATOR:
        sys.exit("the big-tile probe times kernels: run it on a GPU")
    t_start = time.perf_counter()
    rng = np.random.default_rng(17)
    runs, compiled, failures = {}, {}, []
    for name, cfg in CONFIGS.items():
        cfg.validate()
        t = time.perf_counter()
        runs[name] = launcher(cfg)
        compiled[name] = {"config": cfg.short(), "threads": cfg.threads, "shared_bytes": cfg.shared_bytes,
                          "registers": runs[name].registers, "compile_s": round(time.perf_counter() - t, 1)}
        M, N, K = CHECK_SHAPE
        A_d, A = random_device_matrix(M, K, rng)
        B_d, B = random_device_matrix(K, N, rng)
        C = poisoned(M, N)
        runs[name](A_d, B_d, C)
        ok, err, how = check_product(A, B, C.copy_to_host())
        compiled[name].update(check_shape=list(CHECK_SHAPE), correct=ok, rel_error=err, checked=how)
        if not ok:
            failures.append((name, CHECK_SHAPE))
        print(f"{name:26s} {cfg.short()}  regs {runs[name].registers}  ok {ok} {err:.2e}", flush=True)
    rows = time_squares(runs, args.sizes, rng, failures)
    write_record("bigtile-probe", {"command": "python3 tools/bigtile_probe.py", "compiled": compiled, "rows": rows,
                                   "failures": failures}, t_start, args.out)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
