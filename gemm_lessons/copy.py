"""Device-to-device copy: the bandwidth ceiling of the roofline (and of lesson 09)."""
import numpy as np
from numba import cuda

from .arrays import require_matrix
from .sgemm.wide import load4, store4

# lesson-cell: begin
@cuda.jit
def copy_float4(src, dst):
    # each thread moves 16 bytes per step with LDG.128 / STG.128, grid-stride over the rows
    rows, cols = src.shape
    per_row = cols // 4
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    for i in range(start, rows * per_row, stride):
        r = i // per_row
        c = (i % per_row) * 4
        v0, v1, v2, v3 = load4(src, r, c)
        store4(dst, r, c, v0, v1, v2, v3)
# lesson-cell: end


@cuda.jit
def copy_float4_flat(src, dst):
    # one float4 per thread, as many threads as float4s: no loop at all
    rows, cols = src.shape
    per_row = cols // 4
    i = cuda.grid(1)
    if i < rows * per_row:
        r = i // per_row
        c = (i % per_row) * 4
        v0, v1, v2, v3 = load4(src, r, c)
        store4(dst, r, c, v0, v1, v2, v3)


def _require_copy(src, dst):
    require_matrix(src, "src")
    require_matrix(dst, "dst")
    if tuple(src.shape) != tuple(dst.shape) or src.shape[1] % 4:
        raise ValueError("a copy needs equal shapes with a multiple of 4 columns.")


def copy_flat(src, dst):
    """dst[:] = src, one float4 per thread."""
    _require_copy(src, dst)
    n = src.shape[0] * src.shape[1] // 4
    copy_float4_flat[(n + 255) // 256, 256](src, dst)


def copy_kernel(src, dst):
    """dst[:] = src with the float4 kernel (columns a multiple of 4)."""
    _require_copy(src, dst)
    sms = 132
    try:
        sms = cuda.get_current_device().MULTIPROCESSOR_COUNT
    except Exception:
        pass
    copy_float4[sms * 8, 256](src, dst)


def copy_memcpy(src, dst):
    """dst[:] = src with cudaMemcpy device-to-device (the driver's copy engine path)."""
    dst.copy_to_device(src)


COPIES = {"copy_kernel_float4": copy_kernel, "copy_float4_flat": copy_flat, "memcpy_d2d": copy_memcpy}


def example(rows=4, cols=8):
    src = cuda.to_device(np.arange(rows * cols, dtype=np.float32).reshape(rows, cols))
    dst = cuda.device_array_like(src)
    copy_kernel(src, dst)
    return dst.copy_to_host()
