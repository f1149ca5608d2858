"""What writing a ragged C costs the padded plan's kernel, same run: one float at a time from each
thread's registers (warptile's ragged_c, what gl.sgemm runs) against the wide kernel on the
rounded-up problem (16-byte stores), and cuBLAS on the ragged one.  (At commit 9c23b7e it also timed
a third way, C's tile through shared memory so that a warp wrote 32 neighbouring floats of a row,
warptile's stage_c then: slower than one float at a time, removed; the record keeps its runs.)

    python3 -m experiments.shape_classes.epilogue_probe [--out DIR]
    -> DIR/epilogue-probe-<device>.json (kept in experiments/shape_classes/)

Per shape: A (K rounded up to a multiple of 4) and B padded with zeros once, outside the timing;
each kernel checked on a poisoned C against float64 (a sample), then single calls and back to
back with the clock and power while each ran; the two epilogues timed twice, alternating, so
that neither always runs on a warmer GPU.
"""
import argparse
import sys
import time
from dataclasses import replace

import numpy as np

import gemm_lessons  # noqa: F401
from gemm_lessons.kernels.sgemm import warptile
from gemm_lessons.library import dispatch
from gemm_lessons.measure import cublas
from gemm_lessons.measure.power import PowerSampler
from gemm_lessons.runs.shapes import back_to_back, check_product, single_calls
from numba import cuda

from experiments._shared import poisoned, record, write_record

SHAPES = [(4096, 50257, 768), (2048, 32003, 4096), (4095, 4097, 4093)]


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--out")
    args = p.parse_args(argv)
    t0 = time.perf_counter()
    cfg = dispatch.TILES["128x128"]
    kernels = {"scalar": warptile.kernel_for(replace(cfg, ragged_c=True)),
               "wide": warptile.kernel_for(cfg)}
    rows, failures = [], []
    one, zero = np.float32(1), np.float32(0)
    for M, N, K in SHAPES:
        N4, K4 = dispatch.padded_sides(N, K)
        rng = np.random.default_rng(M + N + K)
        a = np.zeros((M, K4), np.float32)
        a[:, :K] = rng.uniform(-1, 1, (M, K))
        b = np.zeros((K4, N4), np.float32)
        b[:K, :N] = rng.uniform(-1, 1, (K, N))
        A, B = cuda.to_device(a), cuda.to_device(b)
        a_r, b_r = cuda.to_device(np.ascontiguousarray(a[:, :K])), cuda.to_device(np.ascontiguousarray(b[:K, :N]))
        grid = ((N4 + cfg.BN - 1) // cfg.BN, (M + cfg.BM - 1) // cfg.BM)
        C, C4 = poisoned(M, N), poisoned(M, N4)
        calls = {"cublas": lambda: cublas.sgemm(a_r, b_r, C),
                 "scalar": lambda: kernels["scalar"][grid, cfg.threads](A, B, C, one, zero),
                 "wide": lambda: kernels["wide"][grid, cfg.threads](A, B, C4, one, zero)}
        row = {"shape": [M, N, K], "runs": []}
        for name in ("scalar", "wide"):
            out = C4 if name == "wide" else C
            out.copy_to_device(np.full(out.shape, np.float32(np.nan)))
            calls[name]()
            got = out.copy_to_host()[:, :N]
            ok, err, how = check_product(a[:, :K], b[:K, :N], np.ascontiguousarray(got))
            row[f"check_{name}"] = {"correct": ok, "rel_error": err, "checked": how}
            if not ok:
                failures.append((name, M, N, K))
        for name in ("cublas", "scalar", "wide", "scalar", "cublas"):
            with PowerSampler() as power:
                single = single_calls(calls[name])
                b2b = back_to_back(calls[name])
            run = {"name": name, "single_ms": single.median_ms, "back_to_back_ms": b2b.median_ms,
                   "single_p10_p90": [single.p10_ms, single.p90_ms], "back_to_back_p10_p90": [b2b.p10_ms, b2b.p90_ms],
                   "power": power.summary()}
            row["runs"].append(run)
            pw = run["power"] or {}
            print(f"{M}x{N}x{K} {name:7s} single {single.median_ms:.4f} ms  b2b {b2b.median_ms:.4f} ms  "
                  f"clock {pw.get('clock_mhz')} power {pw.get('power_w')} events {pw.get('events')}", flush=True)
        rows.append(row)
        del A, B, C, C4, a_r, b_r
    rec = record("epilogue-probe", {"rows": rows, "failures": failures}, t0)
    write_record("shape_classes", rec, args.out, kind="epilogue")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
