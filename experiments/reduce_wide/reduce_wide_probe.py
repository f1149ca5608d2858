"""Split-K's two reductions and the calls around them at 1000^3 and 1024^3, one call at a time and back to back.

    python3 tools/reduce_wide_probe.py    (on a GPU; prints one line per call; about 70 s)

Each line: median (p10-p90) ms of gl.sgemm(A, B, C), of the wide kernel split 4 followed by the
one-float reduction (splitk_reduce.py) or by the 16-byte one (splitk_reduce_wide.py, what
gl.sgemm runs), of the product kernel alone, and of cuBLAS; the shapes in the order 1000, 1024,
1024, 1000, so that an outlier of one shape in one pass shows against the other pass.  Output
kept in results/experiments/reduce-wide-probe-<device>.txt.
"""
import sys, os
sys.path.insert(0, os.getcwd())
import numpy as np
import gemm_lessons
from gemm_lessons.library import device_arrays, dispatch
from gemm_lessons.measure import cublas
from gemm_lessons.kernels.library import splitk_reduce, splitk_reduce_wide
from gemm_lessons.runs.shapes import single_calls, back_to_back, random_device_matrix
from numba import cuda
rng = np.random.default_rng(1)
for n in (1000, 1024, 1024, 1000):
    A, _ = random_device_matrix(n, n, rng); B, _ = random_device_matrix(n, n, rng)
    C = cuda.device_array((n, n), np.float32)
    plan = dispatch.plan_for(n, n, n, True)
    main = device_arrays._launcher("wide_split", plan.tiles, "C"); grid = plan.grid(n, n)
    W = device_arrays._workspace("W", plan.split * n, n)
    red, redw = device_arrays._launcher("reduce", "", "C"), device_arrays._launcher("reduce_wide", "", "C")
    fns = {"gl.sgemm": lambda: device_arrays.sgemm(A, B, C),
           "main+reduce": lambda: (main(grid, A, B, W, 1.0, 0.0), red(splitk_reduce.grid(n, n), W, C, 1.0, 0.0)),
           "main+reduce_wide": lambda: (main(grid, A, B, W, 1.0, 0.0), redw(splitk_reduce_wide.grid(n, n), W, C, 1.0, 0.0)),
           "main alone": lambda: main(grid, A, B, W, 1.0, 0.0),
           "cublas": lambda: cublas.sgemm(A, B, C)}
    for name, fn in fns.items():
        s = single_calls(fn); b = back_to_back(fn)
        print(f"{n} {plan} {name:18s} single {s.median_ms:.4f} ({s.p10_ms:.4f}-{s.p90_ms:.4f})  b2b {b.median_ms:.4f} ({b.p10_ms:.4f}-{b.p90_ms:.4f})", flush=True)
