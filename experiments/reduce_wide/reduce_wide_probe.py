"""Split-K's two reductions and the calls around them at 1000^3 and 1024^3, one call at a time and back to back.

    python3 -m experiments.reduce_wide.reduce_wide_probe [--out DIR]   -> DIR/reduce-wide-probe-<device>.json
    (from the repository root, on a GPU; prints one line per call; about 70 s; the record is kept
    in experiments/reduce_wide/)

For each call: median (p10-p90) ms of gl.sgemm(A, B, C), of the wide kernel split 4 followed by
the one-float reduction (splitk_reduce.py) or by the 16-byte one (splitk_reduce_wide.py, what
gl.sgemm runs), of the product kernel alone, and of cuBLAS; the shapes in the order 1000, 1024,
1024, 1000, so that an outlier of one shape in one pass shows against the other pass (``pass``
1 or 2 in the record).
"""
import argparse
import sys

import numpy as np

import gemm_lessons  # noqa: F401  (chooses the GPU before numba.cuda is imported)
from gemm_lessons.library import device_arrays, dispatch
from gemm_lessons.measure import cublas
from gemm_lessons.kernels.library import splitk_reduce, splitk_reduce_wide
from gemm_lessons.runs.shapes import single_calls, back_to_back, random_device_matrix
from numba import cuda

from experiments._shared import record, write_record

SIZES = (1000, 1024, 1024, 1000)


def timing(t):
    return {"median_ms": t.median_ms, "p10_ms": t.p10_ms, "p90_ms": t.p90_ms}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out", default=None, help="write the record into this directory")
    args = p.parse_args()
    if gemm_lessons.SIMULATOR:
        sys.exit("the reduce probe times kernels: run it on a GPU")
    rng = np.random.default_rng(1)
    rows, seen = [], {}
    for n in SIZES:
        A, _ = random_device_matrix(n, n, rng)
        B, _ = random_device_matrix(n, n, rng)
        C = cuda.device_array((n, n), np.float32)
        plan = dispatch.plan_for(n, n, n, True)
        main_ = device_arrays._launcher("wide_split", plan.tiles, "C")
        grid = plan.grid(n, n)
        W = device_arrays._workspace("W", plan.split * n, n)
        red, redw = device_arrays._launcher("reduce", "", "C"), device_arrays._launcher("reduce_wide", "", "C")
        fns = {"gl.sgemm": lambda: device_arrays.sgemm(A, B, C),
               "main+reduce": lambda: (main_(grid, A, B, W, 1.0, 0.0), red(splitk_reduce.grid(n, n), W, C, 1.0, 0.0)),
               "main+reduce_wide": lambda: (main_(grid, A, B, W, 1.0, 0.0),
                                            redw(splitk_reduce_wide.grid(n, n), W, C, 1.0, 0.0)),
               "main alone": lambda: main_(grid, A, B, W, 1.0, 0.0),
               "cublas": lambda: cublas.sgemm(A, B, C)}
        for name, fn in fns.items():
            s, b = single_calls(fn), back_to_back(fn)
            seen[n, name] = seen.get((n, name), 0) + 1
            rows.append({"size": n, "plan": str(plan), "split": plan.split, "call": name, "pass": seen[n, name],
                         "single": timing(s), "back_to_back": timing(b)})
            print(f"{n} {plan} {name:18s} single {s.median_ms:.4f} ({s.p10_ms:.4f}-{s.p90_ms:.4f})  "
                  f"b2b {b.median_ms:.4f} ({b.p10_ms:.4f}-{b.p90_ms:.4f})", flush=True)
    write_record("reduce_wide", record("reduce-wide-probe", {
        "command": "python3 -m experiments.reduce_wide.reduce_wide_probe",
        "units": "ms; single: one call at a time, back_to_back: batches between CUDA events; median, p10, p90",
        "rows": rows}), args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
