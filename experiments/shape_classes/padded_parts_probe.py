"""Where the padded plan's time goes, one run: gl.sgemm's call against its parts launched alone
(the copy of B, of A where K is not a multiple of 4, the wide kernel writing a ragged C), against
the same parts launched one after the other by hand, and against cuBLAS; and the copy kernel
against the first, one-float copy (pad_kernels.py).  (The record of commit ddaf3af compared the
one-float copy, then the library's, with the four-float candidate now in the library.)

    python3 -m experiments.shape_classes.padded_parts_probe [--out DIR]
    -> DIR/padded-parts-probe-<device>.json (kept in experiments/shape_classes/)

Every copy is checked against numpy and every product against float64 (a sample) on a poisoned
output; each timing (runs.shapes.back_to_back: CUDA events, warm-up, median of batches) is taken
with the clock and power sampled while it ran, and cuBLAS and gl.sgemm are timed first and last so
that neither always runs on the warmer GPU.
"""
import argparse
import sys
import time

import numpy as np

import gemm_lessons  # noqa: F401  (chooses the GPU before numba.cuda is imported)
from gemm_lessons.kernels.library import pad_copy
from gemm_lessons.library import device_arrays, dispatch
from gemm_lessons.measure import cublas
from gemm_lessons.runs.shapes import random_device_matrix
from numba import cuda

from experiments._shared import checked_on_nan, poisoned, record, timed_back_to_back, write_record
from . import pad_kernels  # the one-float copy, to compare

SHAPES = [(4096, 50257, 768), (2048, 32003, 4096), (4095, 4097, 4093), (999, 1001, 1003)]


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--out")
    p.add_argument("--shape", nargs=3, type=int, action="append", help="M N K instead of SHAPES (repeatable)")
    args = p.parse_args(argv)
    t0 = time.perf_counter()
    rows, failures = [], []
    for M, N, K in args.shape or SHAPES:
        N4, K4 = dispatch.padded_sides(N, K)
        rng = np.random.default_rng(M + N + K)
        A, a = random_device_matrix(M, K, rng)
        B, b = random_device_matrix(K, N, rng)
        C = poisoned(M, N)
        plan = dispatch.plan_for(M, N, K, False)
        row = {"shape": [M, N, K], "plan": str(plan), "checks": {}}
        gl_call = lambda: device_arrays.sgemm(A, B, C)  # noqa: E731
        row["checks"]["gl.sgemm"] = checked_on_nan(gl_call, C, a, b)
        failures += [] if row["checks"]["gl.sgemm"]["correct"] else [("gl.sgemm", M, N, K)]
        calls = {"cublas": lambda: cublas.sgemm(A, B, C), "gl.sgemm": gl_call}
        copies = {"B": (B, b, K4, N4)} | ({"A": (A, a, M, K4)} if K % 4 else {})
        padded = {}
        for role, (src, host, r, c) in copies.items():
            dst = cuda.device_array((r, c), np.float32)
            want = np.zeros((r, c), np.float32)
            want[:host.shape[0], :host.shape[1]] = host
            variants = {"pad_copy": lambda s=src, d=dst, r=r, c=c: pad_copy.pad_copy[pad_copy.grid(r, c), pad_copy.THREADS](s, d),
                        "pad_copy1": lambda s=src, d=dst, r=r, c=c: pad_kernels.pad_copy1[pad_kernels.grid(r, c), pad_kernels.THREADS](s, d)}
            for name, fn in variants.items():
                dst.copy_to_device(np.full((r, c), np.float32(np.nan)))
                fn()
                good = bool(np.array_equal(dst.copy_to_host(), want))
                row["checks"][f"{name} {role}"] = {"correct": good}
                failures += [] if good else [(f"{name} {role}", M, N, K)]
                calls[f"{name} {role}"] = fn
            padded[role] = dst
            row[f"copy_{role}_bytes"] = 4 * (host.size + r * c)
        Ap = padded.get("A", A)
        Bp = padded["B"]
        if plan.kernel == "padded" and plan.split == 1:
            kernel = device_arrays._launcher("wide_ragged_c", plan.tiles, "C")
            grid = plan.grid(M, N4)
            calls["kernel"] = lambda: kernel(grid, Ap, Bp, C, 1.0, 0.0)
            pad = device_arrays._launcher("pad", "", "C")
            seq = [(pad, pad_copy.grid(K4, N4), B, Bp)] + ([(pad, pad_copy.grid(M, K4), A, Ap)] if "A" in padded else [])

            def by_hand():
                for launch, g, s, d in seq:
                    launch(g, s, d)
                kernel(grid, Ap, Bp, C, 1.0, 0.0)
            calls["copies + kernel by hand"] = by_hand
            for name in ("kernel", "copies + kernel by hand"):
                row["checks"][name] = checked_on_nan(calls[name], C, a, b)
                failures += [] if row["checks"][name]["correct"] else [(name, M, N, K)]
        order = ["cublas", "gl.sgemm"] + [k for k in calls if k not in ("cublas", "gl.sgemm")] + ["gl.sgemm", "cublas"]
        row["runs"] = timed_back_to_back(calls, order, f"{M}x{N}x{K}")
        rows.append(row)
        del A, B, C, padded, Ap, Bp, calls
    rec = record("padded-parts-probe", {"rows": rows, "failures": failures}, t0)
    write_record("shape_classes", rec, args.out, kind="padded_parts")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
