"""Kernel variants for ragged shapes against the wide kernel and cuBLAS, back to back, one process.

    python3 -m experiments.shape_classes.variants_probe [--out DIR] [--profile]
    -> DIR/shape-variants-probe-<device>.json (kept in experiments/shape_classes/)

Per shape (ragged ones, and 4096^3 where every kernel runs): each variant checked on a poisoned C
against float64 and timed back to back (median of runs.shapes.back_to_back), cuBLAS before and
after; the wide kernel on the problem rounded up to multiples of 4 for scale.  Variants: the
library's any-shape kernel (register cap 128, as gl.sgemm runs it), ragged_kernels.make_vec_a with
the cap and without.  ``--profile``: each variant once between cuda.profile_start/stop (for ncu).
"""
import argparse
import sys
import time

import numpy as np

import gemm_lessons  # noqa: F401
from gemm_lessons.kernels.library import sgemm_any_shape
from gemm_lessons.kernels.sgemm.warptile import TileConfig
from gemm_lessons.library import device_arrays, dispatch
from gemm_lessons.measure import cublas
from gemm_lessons.measure.power import PowerSampler
from gemm_lessons.runs.shapes import back_to_back, check_product, random_device_matrix
from numba import cuda

from experiments._shared import poisoned, record, write_record
from . import ragged_kernels  # this folder's candidates

SHAPES = [(4096, 4096, 4096), (4096, 50257, 768), (2048, 32003, 4096)]


def variants():
    return {"any_shape 128x128": sgemm_any_shape.make_kernel(TileConfig()),
            "vec_a 128x128": ragged_kernels.make_vec_a(TileConfig()),
            "vec_a 128x128 no cap": ragged_kernels.make_vec_a(TileConfig(max_registers=None))}


def _registers(kernel):
    try:
        regs = kernel.get_regs_per_thread()
        return regs if isinstance(regs, int) else max(regs.values())
    except Exception:  # noqa: BLE001 (the simulator has none)
        return None


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--out")
    p.add_argument("--profile", action="store_true")
    args = p.parse_args(argv)
    t0 = time.perf_counter()
    kernels = variants()
    rows, failures = [], []
    for M, N, K in SHAPES:
        rng = np.random.default_rng(M + N + K)
        A_d, A = random_device_matrix(M, K, rng)
        B_d, B = random_device_matrix(K, N, rng)
        one, zero = np.float32(1), np.float32(0)
        grid = ((N + 127) // 128, (M + 127) // 128, 1)
        row = {"shape": [M, N, K], "variants": {}}
        with PowerSampler() as power:
            C = cuda.device_array((M, N), np.float32)
            cub = lambda: cublas.sgemm(A_d, B_d, C)  # noqa: E731
            row["cublas_before_ms"] = back_to_back(cub).median_ms
            for name, k in kernels.items():
                C = poisoned(M, N)
                run = lambda k=k, C=C: k[grid, 256](A_d, B_d, C, one, zero, np.int64(K))  # noqa: E731
                run()
                ok, err, how = check_product(A, B, C.copy_to_host())
                if not ok:
                    failures.append((name, M, N, K))
                if args.profile:
                    cuda.profile_start(); run(); cuda.synchronize(); cuda.profile_stop()  # noqa: E702
                t = back_to_back(run)
                row["variants"][name] = {"correct": ok, "rel_error": err, "checked": how, "median_ms": t.median_ms,
                                         "p10_ms": t.p10_ms, "p90_ms": t.p90_ms,
                                         "registers": _registers(k)}
            C = cuda.device_array((M, N), np.float32)
            row["cublas_after_ms"] = back_to_back(cub).median_ms
            if args.profile:
                cuda.profile_start(); cub(); cuda.synchronize(); cuda.profile_stop()  # noqa: E702
            N4, K4 = dispatch.padded_sides(N, K)
            A4, _ = random_device_matrix(M, K4, rng)
            B4, _ = random_device_matrix(K4, N4, rng)
            C4 = cuda.device_array((M, N4), np.float32)
            wide = lambda: device_arrays.run_plan(dispatch.Plan("wide", "128x128"), A4, B4, C4)  # noqa: E731
            row["wide_rounded_up_ms"] = back_to_back(wide).median_ms
            if args.profile:
                cuda.profile_start(); wide(); cuda.synchronize(); cuda.profile_stop()  # noqa: E702
        row["power"] = power.summary()
        ref = (row["cublas_before_ms"] + row["cublas_after_ms"]) / 2
        print(f"{M}x{N}x{K}: cuBLAS {row['cublas_before_ms']:.4f}/{row['cublas_after_ms']:.4f} ms, wide rounded up "
              f"{row['wide_rounded_up_ms']:.4f} ms ({100 * ref / row['wide_rounded_up_ms']:.1f}%)", flush=True)
        for name, v in row["variants"].items():
            v["pct_cublas"] = 100 * ref / v["median_ms"]
            print(f"   {name:24s} {v['median_ms']:.4f} ms {v['pct_cublas']:5.1f}% ok {v['correct']} regs {v['registers']}", flush=True)
        rows.append(row)
    rec = record("shape-variants-probe", {"rows": rows, "failures": failures}, t0)
    write_record("shape_classes", rec, args.out, kind="variants")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
