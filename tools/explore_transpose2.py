"""Exploration (not a lesson): wide transpose variants at 8192^2 and a non-square shape."""
import functools

import numpy as np
from numba import cuda

import gemm_lessons as gl
from gemm_lessons import cublas
from gemm_lessons.transpose import wide


def bench(R, C):
    src = cuda.to_device(np.random.default_rng(0).random((R, C), dtype=np.float32))
    dst = cuda.device_array((C, R), np.float32)
    ref = src.copy_to_host().T

    def run(label, fn):
        dst.copy_to_device(np.zeros((C, R), np.float32))
        t = gl.time_gpu(lambda: fn(src, dst), repeats=50)
        ok = np.array_equal(dst.copy_to_host(), ref)
        print(f"{R}x{C} {label:<34} {8 * R * C / t.median_ms / 1e6:6.0f} GB/s "
              f"(p10-p90 {8*R*C/t.p90_ms/1e6:.0f}-{8*R*C/t.p10_ms/1e6:.0f}) ok={ok}", flush=True)

    run("cublas", cublas.transpose)
    for cfg in [(64, 16, 1, False), (64, 16, 1, True), (64, 8, 1, False), (64, 8, 1, True),
                (32, 8, 1, False), (32, 8, 1, True), (32, 4, 1, True), (64, 4, 1, True)]:
        run(f"wide {cfg}", functools.partial(wide.transpose, kernel=wide.kernel_for(*cfg)))


bench(8192, 8192)
bench(8192, 4096)
