"""Issue 34's shape classes on a GPU: gl.sgemm's chosen plan, every candidate plan, and cuBLAS,
in one process, with the GPU's clock and power while each shape ran.

    python3 -m experiments.shape_classes.classes_probe [--out DIR] [--classes ragged_n odd_1000 ...]
    -> DIR/shape-classes-probe-<device>.json (kept in experiments/shape_classes/)

Per shape: C poisoned and the chosen plan checked against float64 (runs.shapes.check_product);
gl.sgemm and cuBLAS single calls and back to back; every candidate plan back to back; for a
ragged shape also the wide kernel (16-byte loads) on the same problem with N and K rounded up to
multiples of 4, the speed a ragged shape would have if its raggedness cost nothing.
"""
import argparse
import sys
import time

import numpy as np

import gemm_lessons  # noqa: F401  (chooses the GPU before numba.cuda is imported)
from gemm_lessons.core import backend
from gemm_lessons.core.progress import bar
from gemm_lessons.library import device_arrays, dispatch
from gemm_lessons.measure import cublas
from gemm_lessons.measure.power import PowerSampler
from gemm_lessons.runs import shapes as suite
from numba import cuda

from experiments._shared import record, write_record

CLASSES = {
    "ragged_n": ((4096, 50257, 768), (2048, 32003, 4096)),  # vocabulary projections
    "odd_1000": ((999, 1001, 1003), (1001, 999, 997), (1023, 1021, 1025)),
    "narrow_128": ((128, 32768, 4096), (32768, 128, 4096), (128, 16384, 16384)),
    "large_square": ((2048, 2048, 2048), (4096, 4096, 4096), (8192, 8192, 8192)),
}


def plan_times(M, N, K, A_d, B_d, C_d, wide):
    out = {}
    for plan in dispatch.candidates(M, N, K, wide):
        try:
            t = suite.back_to_back(lambda: device_arrays.run_plan(plan, A_d, B_d, C_d), repeats=5,
                                   warmup_s=0.05, max_s=0.5)
            out[str(plan)] = t.median_ms
        except Exception as e:  # noqa: BLE001
            out[str(plan)] = f"{type(e).__name__}: {e}"
    return out


def rounded_wide(M, N, K, repeats):
    """The wide 128x128 kernel and cuBLAS on M x N4 x K4 (sides rounded up to multiples of 4)."""
    N4, K4 = dispatch.padded_sides(N, K)
    rng = np.random.default_rng(9)
    A_d, _ = suite.random_device_matrix(M, K4, rng)
    B_d, _ = suite.random_device_matrix(K4, N4, rng)
    C_d = cuda.device_array((M, N4), np.float32)
    plan = dispatch.plan_for(M, N4, K4, True)
    row = {"shape": [M, N4, K4], "plan": str(plan)}
    row["gl_ms"] = suite.back_to_back(lambda: device_arrays.sgemm(A_d, B_d, C_d), repeats).median_ms
    row["wide_128x128_ms"] = suite.back_to_back(
        lambda: device_arrays.run_plan(dispatch.Plan("wide", "128x128"), A_d, B_d, C_d), repeats).median_ms
    row["cublas_ms"] = suite.back_to_back(lambda: cublas.sgemm(A_d, B_d, C_d), repeats).median_ms
    return row


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=None)
    p.add_argument("--classes", nargs="*", default=list(CLASSES))
    p.add_argument("--repeats", type=int, default=20)
    args = p.parse_args(argv)
    t0 = time.perf_counter()
    jobs = [(c, s) for c in args.classes for s in CLASSES[c]]
    pbar = bar(len(jobs), "shape classes", True)
    rows = []
    for cls, (M, N, K) in jobs:
        with PowerSampler() as power:
            r = suite.measure_shape(cls, (M, N, K), args.repeats, pbar, all_plans=False)
            row = r.to_dict()  # a ShapeRow: its Stats become dicts too
            if cls != "large_square" and not backend.SIMULATOR:  # the simulator times nothing
                rng = np.random.default_rng(1)
                A_d, _ = suite.random_device_matrix(M, K, rng)
                B_d, _ = suite.random_device_matrix(K, N, rng)
                C_d = cuda.device_array((M, N), np.float32)
                row["plans_ms"] = plan_times(M, N, K, A_d, B_d, C_d, not (K % 4 or N % 4))
                del A_d, B_d, C_d
            if (N % 4 or K % 4) and not backend.SIMULATOR:
                row["rounded_up"] = rounded_wide(M, N, K, args.repeats)
        row["power"] = power.summary()
        rows.append(row)
        pbar.update()
        plans = row.get("plans_ms") or {}
        timed = {k: v for k, v in plans.items() if isinstance(v, float)}
        best = min(timed, key=timed.get) if timed else None
        print(f"{cls:12s} {M}x{N}x{K}: {row.get('plan')} single {row.get('pct_cublas_single') or 0:.1f}% "
              f"b2b {row.get('pct_cublas_back_to_back') or 0:.1f}% ok {row.get('correct')}"
              + (f"  best plan {best} {timed[best]:.4f} ms" if best else "")
              + (f"  cublas b2b {row['back_to_back_cublas']['median_ms']:.4f} ms" if row.get('back_to_back_cublas') else "")
              + (f"  rounded-up {row['rounded_up']}" if "rounded_up" in row else "")
              + (f"  error {row['error']}" if row.get("error") else ""), flush=True)
    pbar.close()
    rec = record("shape-classes-probe", {"model": dispatch.model().source, "rows": rows}, t0)
    write_record("shape_classes", rec, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
