"""Exploration (not a lesson): what limits copy bandwidth from numba on this GPU?"""
import numpy as np
from numba import cuda

import gemm_lessons as gl
from gemm_lessons import cublas
from gemm_lessons.float4 import load4, store4

R = C = 8192
n = R * C
src2 = cuda.to_device(np.random.default_rng(0).random((R, C), dtype=np.float32))
dst2 = cuda.device_array((R, C), np.float32)
src1 = src2.reshape(1, n)
dst1 = dst2.reshape(1, n)


@cuda.jit
def flat1(src, dst):  # (1, n) view: no division at all
    i = cuda.grid(1) * 4
    if i < src.shape[1]:
        v0, v1, v2, v3 = load4(src, 0, i)
        store4(dst, 0, i, v0, v1, v2, v3)


@cuda.jit
def flat2(src, dst):  # two float4 per thread, loads before stores
    i = cuda.grid(1) * 4
    h = src.shape[1] // 2
    if i < h:
        a0, a1, a2, a3 = load4(src, 0, i)
        b0, b1, b2, b3 = load4(src, 0, i + h)
        store4(dst, 0, i, a0, a1, a2, a3)
        store4(dst, 0, i + h, b0, b1, b2, b3)


@cuda.jit
def scalar1(src, dst):
    i = cuda.grid(1)
    if i < src.shape[1]:
        dst[0, i] = src[0, i]


def run(label, fn):
    t = gl.time_gpu(fn, repeats=50)
    ok = np.array_equal(dst2.copy_to_host(), src2.copy_to_host())
    print(f"{label:<36} {2 * 4 * n / t.median_ms / 1e6:8.0f} GB/s  p10-p90 {2*4*n/t.p90_ms/1e6:.0f}-{2*4*n/t.p10_ms/1e6:.0f} ok={ok}", flush=True)
    dst2.copy_to_device(np.zeros((R, C), np.float32))


for tpb in (128, 256, 512, 1024):
    run(f"flat1 tpb={tpb}", lambda: flat1[(n // 4 + tpb - 1) // tpb, tpb](src1, dst1))
run("flat2 tpb=256", lambda: flat2[(n // 8 + 255) // 256, 256](src1, dst1))
run("scalar1 tpb=256", lambda: scalar1[(n + 255) // 256, 256](src1, dst1))
run("memcpy", lambda: dst2.copy_to_device(src2))
dT = cuda.device_array((C, R), np.float32)
t = gl.time_gpu(lambda: cublas.transpose(src2, dT), repeats=50)
print(f"{'cublas sgeam':<36} {2 * 4 * n / t.median_ms / 1e6:8.0f} GB/s")
