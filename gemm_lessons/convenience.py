"""gemm_lessons.sgemm(A, B, C=None, alpha, beta): the ladder's last rung for any shape,
NumPy or numba arrays.

    import gemm_lessons as gl
    C = gl.sgemm(A, B)                     # NumPy in, NumPy out
    gl.sgemm(A_d, B_d, C_d, alpha, beta)   # device arrays, C_d updated in place

The kernel is the last rung of gemm_lessons.ladder.SGEMM (or ``rung=``).  Rungs that move 16
bytes at a time need K and N to be multiples of 4; other shapes are zero-padded (on the
host for NumPy input, through a host round trip for device input: convenient, not fast).
"""
import numpy as np
from numba import cuda

from . import ladder
from .arrays import is_device_array, require_fits_on_device


def _as_host_matrix(x, name):
    if x.dtype != np.float32:
        raise TypeError(f"{name} has dtype {x.dtype}; convert it explicitly with {name}.astype(np.float32).")
    if x.ndim != 2:
        raise ValueError(f"{name} must be a 2-D matrix, got shape {x.shape}.")
    return np.ascontiguousarray(x)


def _needs_padding(rung, K, N):
    return rung.wide and bool(K % 4 or N % 4)


def sgemm(A, B, C=None, alpha=1.0, beta=0.0, rung=None):
    """C = alpha * A @ B + beta * C.  Returns C (a new NumPy array when A is one and C is None)."""
    rung = rung or ladder.SGEMM[list(ladder.SGEMM)[-1]]
    on_device = is_device_array(A)
    if on_device != is_device_array(B) or (C is not None and on_device != is_device_array(C)):
        raise TypeError("pass A, B (and C) all as NumPy arrays or all as numba device arrays.")
    if C is None and beta != 0:
        raise ValueError("beta != 0 needs a C to scale: pass C, or leave beta at 0.")
    if not on_device:
        A, B = _as_host_matrix(A, "A"), _as_host_matrix(B, "B")
        if C is not None:
            C_host = _as_host_matrix(C, "C")
    M, K = A.shape
    if B.shape[0] != K:
        raise ValueError(f"inner dimensions differ: A is {M}x{K} but B is {B.shape[0]}x{B.shape[1]}.")
    N = B.shape[1]
    if C is not None and tuple(C.shape) != (M, N):
        raise ValueError(f"C must be {M}x{N}, got {C.shape[0]}x{C.shape[1]}.")
    if 0 in (M, N, K):
        raise ValueError(f"every dimension must be at least 1, got M={M}, N={N}, K={K}.")

    if on_device and not _needs_padding(rung, K, N):
        if C is None:
            C = cuda.device_array((M, N), np.float32)
        rung(A, B, C, alpha=alpha, beta=beta)
        return C

    # host path (or padding needed): stage padded copies on the device
    Kp, Np = (-(-K // 4) * 4, -(-N // 4) * 4) if _needs_padding(rung, K, N) else (K, N)
    require_fits_on_device(4 * (M * Kp + Kp * Np + M * Np), f"a {M}x{N}x{K} SGEMM")
    A_h = A.copy_to_host() if on_device else A
    B_h = B.copy_to_host() if on_device else B
    A_p = np.zeros((M, Kp), np.float32)
    A_p[:, :K] = A_h
    B_p = np.zeros((Kp, Np), np.float32)
    B_p[:K, :N] = B_h
    C_p = np.zeros((M, Np), np.float32)
    if beta != 0:
        C_p[:, :N] = C.copy_to_host() if on_device else C_host
    C_d = cuda.to_device(C_p)
    rung(cuda.to_device(A_p), cuda.to_device(B_p), C_d, alpha=alpha, beta=beta)
    result = np.ascontiguousarray(C_d.copy_to_host()[:, :N])
    if on_device:
        C = C if C is not None else cuda.device_array((M, N), np.float32)
        C.copy_to_device(result)
        return C
    if C is not None:
        C[...] = result
        return C
    return result
