"""Exploration (not a lesson): transpose and copy variants at 8192^2 on the GPU."""
import functools

import numpy as np
from numba import cuda

import gemm_lessons as gl
from gemm_lessons import cublas, inspect_kernel, ladder
from gemm_lessons.copy import COPIES
from gemm_lessons.transpose import smem_tile, wide

R = C = 8192
src = cuda.to_device(np.random.default_rng(0).random((R, C), dtype=np.float32))
dst = cuda.device_array((C, R), np.float32)
same = cuda.device_array((R, C), np.float32)
ref = src.copy_to_host().T


def run(label, fn, out, kernel=None, check=True):
    t = gl.time_gpu(lambda: fn(src, out), repeats=30)
    ok = np.array_equal(out.copy_to_host(), ref) if check else np.array_equal(out.copy_to_host(), src.copy_to_host())
    extra = f" {inspect_kernel.resources(kernel)} {inspect_kernel.sass_summary(kernel)}" if kernel is not None else ""
    print(f"{label:<32} {2 * 4 * R * C / t.median_ms / 1e6:8.0f} GB/s ok={ok}{extra}", flush=True)


run("cublas sgeam", cublas.transpose, dst)
for name, fn in COPIES.items():
    run(name, fn, same, check=False)
for name, rung in ladder.TRANSPOSE.items():
    run(name, rung, dst)
for cfg in [(32, 8, 1), (32, 16, 1), (64, 16, 1), (64, 8, 1), (32, 4, 1)]:
    k = smem_tile.kernel_for(*cfg)
    run(f"tile {cfg}", functools.partial(smem_tile.transpose, kernel=k), dst, k)
for cfg in [(64, 1), (64, 0), (32, 1)]:
    k = wide.kernel_for(*cfg)
    run(f"wide {cfg}", functools.partial(wide.transpose, kernel=k), dst, k)
