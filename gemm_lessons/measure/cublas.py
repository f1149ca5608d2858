"""cuBLAS on numba device arrays, row-major, through nvmath-python's raw bindings (no CuPy).

cuBLAS is column-major.  A row-major MxN matrix is, byte for byte, a column-major NxM matrix:
its transpose.  So row-major C = A@B is column-major C^T = B^T A^T, which is one sgemm call
with the operands swapped and no transposes.
"""
import numpy as np

from gemm_lessons.core import backend
from gemm_lessons.core.array_checks import sgemm_shapes, transpose_shapes


class CublasUnavailable(RuntimeError):
    """Raised instead of crashing when there is no GPU or no cuBLAS."""


_STATE = {}


def _bindings():
    if backend.SIMULATOR:
        raise CublasUnavailable(
            "cuBLAS needs a GPU; this session runs on the CUDA simulator. "
            "The notebooks show recorded cuBLAS results instead.")
    if "cublas" not in _STATE:
        try:
            from nvmath.bindings import cublas
        except ImportError as e:
            raise CublasUnavailable(
                f"nvmath-python is not installed ({e}): pip install 'nvmath-python[cu12]' "
                "(or [cu13] to match your CUDA driver).") from e
        try:
            _STATE["handle"] = cublas.create()
        except Exception as e:  # library not found, driver too old, ...
            raise CublasUnavailable(f"cuBLAS could not be started: {e}") from e
        _STATE["cublas"] = cublas
    return _STATE["cublas"], _STATE["handle"]


def available():
    try:
        _bindings()
        return True
    except CublasUnavailable:
        return False


def _ptr(a):
    return a.__cuda_array_interface__["data"][0]


def _host_scalar(x):
    # cuBLAS's default pointer mode reads alpha and beta from host memory, by address: the
    # caller keeps the returned array alive until the cuBLAS call has returned.
    arr = np.array([x], dtype=np.float32)
    return arr, arr.ctypes.data


def sgemm(A, B, C, alpha=1.0, beta=0.0):
    """C = alpha * A @ B + beta * C on row-major float32 device arrays (cublasSgemm)."""
    M, N, K = sgemm_shapes(A, B, C)
    cublas, handle = _bindings()
    a_keep, a_ptr = _host_scalar(alpha)
    b_keep, b_ptr = _host_scalar(beta)
    N_OP = cublas.Operation.N
    # column-major view: C^T (NxM, ld N) = B^T (NxK, ld N) @ A^T (KxM, ld K)
    cublas.sgemm(handle, N_OP, N_OP, N, M, K, a_ptr, _ptr(B), N, _ptr(A), K, b_ptr, _ptr(C), N)
    del a_keep, b_keep


def transpose(src, dst):
    """dst = src.T on row-major float32 device arrays (cublasSgeam with beta = 0)."""
    rows, cols = transpose_shapes(src, dst)
    cublas, handle = _bindings()
    a_keep, a_ptr = _host_scalar(1.0)
    b_keep, b_ptr = _host_scalar(0.0)
    # column-major: src is cols x rows (ld cols), dst is rows x cols (ld rows); dst = op(src)^T.
    # B is not read when beta == 0, but must be a valid rows x cols description: pass dst.
    cublas.sgeam(handle, cublas.Operation.T, cublas.Operation.N, rows, cols,
                 a_ptr, _ptr(src), cols, b_ptr, _ptr(dst), rows, _ptr(dst), rows)
    del a_keep, b_keep


def version():
    try:
        cublas, handle = _bindings()
        return cublas.get_version(handle)
    except Exception:
        return None
