"""Device-to-device copy: the bandwidth ceiling of the roofline (and of lesson 09)."""
import numpy as np
from numba import cuda

from .arrays import require_matrix
from .sgemm.wide import load4, store4

# lesson-cell: begin
@cuda.jit
def copy_float4(src, dst):
    # src and dst are 1 x n views of the matrices: thread i moves floats 4i..4i+3 with one
    # LDG.128 and one STG.128.  (A 2-D index computed as i // cols, i % cols costs a 64-bit
    # division per thread, which measurably slowed this kernel down.)
    i = cuda.grid(1) * 4
    if i < src.shape[1]:
        v0, v1, v2, v3 = load4(src, 0, i)
        store4(dst, 0, i, v0, v1, v2, v3)
# lesson-cell: end


def copy_kernel(src, dst, threads=256):
    """dst[:] = src with the float4 kernel (the element count must be a multiple of 4)."""
    require_matrix(src, "src")
    require_matrix(dst, "dst")
    n = src.shape[0] * src.shape[1]
    if tuple(src.shape) != tuple(dst.shape) or n % 4:
        raise ValueError("a copy needs equal shapes and a multiple of 4 elements.")
    copy_float4[(n // 4 + threads - 1) // threads, threads](src.reshape(1, n), dst.reshape(1, n))


def copy_memcpy(src, dst):
    """dst[:] = src with cudaMemcpy device-to-device (the driver's copy path)."""
    dst.copy_to_device(src)


COPIES = {"copy_float4": copy_kernel, "memcpy_d2d": copy_memcpy}


def example(rows=4, cols=8):
    src = cuda.to_device(np.arange(rows * cols, dtype=np.float32).reshape(rows, cols))
    dst = cuda.device_array_like(src)
    copy_kernel(src, dst)
    return dst.copy_to_host()
