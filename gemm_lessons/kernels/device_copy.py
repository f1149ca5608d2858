"""Device-to-device copy: the bandwidth ceiling of the roofline (and of lesson 09)."""
import numpy as np
from numba import cuda

from gemm_lessons.core.array_checks import require_matrix
from gemm_lessons.core.float4 import load4, store4

# lesson-cell: begin
@cuda.jit
def copy_float4(src, dst):
    # each thread copies 4 neighbouring floats (16 bytes: one wide load, one wide store) of
    # each row it visits: row blockIdx.y, then every gridDim.y-th row after it.
    rows, cols = src.shape
    c = (cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x) * 4
    if c < cols:
        for r in range(cuda.blockIdx.y, rows, cuda.gridDim.y):
            v0, v1, v2, v3 = load4(src, r, c)
            store4(dst, r, c, v0, v1, v2, v3)
# lesson-cell: end


def copy_kernel(src, dst, threads=256):
    """dst[:] = src with the float4 kernel (columns a multiple of 4)."""
    require_matrix(src, "src")
    require_matrix(dst, "dst")
    rows, cols = src.shape
    if tuple(src.shape) != tuple(dst.shape) or cols % 4:
        raise ValueError("a copy needs equal shapes and a multiple of 4 columns.")
    copy_float4[((cols // 4 + threads - 1) // threads, min(rows, 65535)), threads](src, dst)


def copy_memcpy(src, dst):
    """dst[:] = src with cudaMemcpy device-to-device (the driver's copy path)."""
    dst.copy_to_device(src)


COPIES = {"copy_float4": copy_kernel, "memcpy_d2d": copy_memcpy}


def example(rows=4, cols=8):
    src = cuda.to_device(np.arange(rows * cols, dtype=np.float32).reshape(rows, cols))
    dst = cuda.device_array_like(src)
    copy_kernel(src, dst)
    return dst.copy_to_host()
