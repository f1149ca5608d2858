"""Input checks shared by every rung: clear errors that say what to do."""
import numpy as np
from numba import cuda

from gemm_lessons.core import backend


def is_device_array(x):
    """True for a numba device array (or the simulator's stand-in for one)."""
    if isinstance(x, np.ndarray):
        return False
    if backend.SIMULATOR:  # the simulator's array class exists only in simulator mode
        from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray

        return isinstance(x, FakeCUDAArray)
    return hasattr(x, "__cuda_array_interface__")


def _is_c_contiguous(x):
    if hasattr(x, "is_c_contiguous"):
        return x.is_c_contiguous()
    return x.__cuda_array_interface__.get("strides") is None  # None means C-contiguous


def require_matrix(x, name):
    """A float32, 2-D, C-contiguous, non-empty device array, or a clear error."""
    if isinstance(x, np.ndarray):
        raise TypeError(
            f"{name} is a NumPy array in host memory; kernels need a device array: "
            f"{name}_d = cuda.to_device(np.ascontiguousarray({name}, dtype=np.float32)) "
            "(or call gemm_lessons.sgemm, which takes NumPy arrays)."
        )
    if not is_device_array(x):
        raise TypeError(f"{name} must be a numba device array, got {type(x).__name__}.")
    if np.dtype(x.dtype) != np.float32:
        raise TypeError(
            f"{name} has dtype {np.dtype(x.dtype)}; these are single-precision (SGEMM) kernels: "
            f"convert on the host with {name}.astype(np.float32) before cuda.to_device."
        )
    if len(x.shape) != 2:
        raise ValueError(f"{name} must be a 2-D matrix, got {len(x.shape)}-D with shape {tuple(x.shape)}.")
    if 0 in x.shape:
        raise ValueError(f"{name} has shape {tuple(x.shape)}: every dimension must be at least 1.")
    if not _is_c_contiguous(x):
        raise ValueError(
            f"{name} is not C-contiguous (row-major), e.g. a transposed or sliced view or an "
            f"F-order array: copy it with np.ascontiguousarray({name}) on the host first."
        )
    return x


def sgemm_shapes(A, B, C):
    """Check the three operands of C = alpha*A@B + beta*C and return (M, N, K)."""
    require_matrix(A, "A")
    require_matrix(B, "B")
    require_matrix(C, "C")
    M, K = A.shape
    K2, N = B.shape
    if K2 != K:
        raise ValueError(f"inner dimensions differ: A is {M}x{K} but B is {K2}x{N} (need A.shape[1] == B.shape[0]).")
    if tuple(C.shape) != (M, N):
        raise ValueError(f"C must be {M}x{N} (rows of A x columns of B), got {C.shape[0]}x{C.shape[1]}.")
    return M, N, K


def transpose_shapes(src, dst):
    """Check dst = src.T operands and return (rows, cols) of src."""
    require_matrix(src, "src")
    require_matrix(dst, "dst")
    rows, cols = src.shape
    if tuple(dst.shape) != (cols, rows):
        raise ValueError(f"dst must be {cols}x{rows} (the transpose of a {rows}x{cols} src), got {dst.shape[0]}x{dst.shape[1]}.")
    return rows, cols


def require_fits_on_device(nbytes, what="these matrices"):
    """Refuse, before allocating, a problem that cannot fit in the GPU's free memory."""
    if backend.SIMULATOR:
        return
    free, total = cuda.current_context().get_memory_info()
    if nbytes > free:
        raise MemoryError(
            f"{what} need {nbytes / 2**30:.2f} GiB but the GPU has {free / 2**30:.2f} GiB free "
            f"of {total / 2**30:.2f} GiB: choose smaller sizes."
        )
