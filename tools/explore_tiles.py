"""Exploration (not a lesson): time reg1d / reg2d configurations at 4096^3 on the GPU."""
import functools
import sys

import numpy as np
import gemm_lessons as gl
from numba import cuda
from gemm_lessons import cublas, inspect_kernel
from gemm_lessons.sgemm_kernels import reg1d, reg2d, smem_tile
from gemm_lessons.problems import random_matrix

S = 4096
rng = np.random.default_rng(0)
A = cuda.to_device(random_matrix(S, S, rng)); B = cuda.to_device(random_matrix(S, S, rng))
C = cuda.device_array((S, S), np.float32)
ref = cuda.device_array((S, S), np.float32); cublas.sgemm(A, B, ref); ref = ref.copy_to_host()


def run(label, fn, kernel=None):
    t = gl.time_gpu(lambda: fn(A, B, C), repeats=10)
    err = np.linalg.norm(C.copy_to_host() - ref) / np.linalg.norm(ref)
    extra = ""
    if kernel is not None:
        extra = f" {inspect_kernel.resources(kernel)} {inspect_kernel.sass_summary(kernel)}"
    print(f"{label:<40} {2 * S**3 / t.median_ms / 1e9:7.2f} TFLOPS  err {err:.1e}{extra}", flush=True)


run("cublas", cublas.sgemm)
from gemm_lessons.sgemm_kernels import vec
for unroll in (True, False):
    k = vec.make_sgemm_vec(unroll)
    run(f"vec unroll_k={unroll}", functools.partial(vec.sgemm, kernel=k), k)
if "--all" not in sys.argv:
    sys.exit(0)
for cfg in [(128, 128, 8, 8, 8, True, 128), (128, 128, 8, 8, 8, False, 128), (128, 128, 8, 8, 8, True, 96),
            (128, 128, 8, 8, 8, True, 168), (128, 128, 8, 8, 8, False, 168)]:
    k = reg2d.kernel_for(*cfg)
    run(f"reg2d {cfg}", functools.partial(reg2d.sgemm, kernel=k), k)
