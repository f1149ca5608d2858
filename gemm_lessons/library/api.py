"""gemm_lessons.sgemm(A, B, C=None, alpha, beta): SGEMM for any shape, NumPy or device arrays.

    import gemm_lessons as gl
    C = gl.sgemm(A, B)                     # NumPy in, NumPy out
    gl.sgemm(A_d, B_d, C_d, alpha, beta)   # device arrays, C_d updated in place (asynchronous)

By default this is the library (gemm_lessons.library.device_arrays): the ladder's last rung where it fits,
an any-shape kernel where it does not (K or N not multiples of 4, misaligned or row-strided
arrays), split-K for small outputs with a long K, chosen per shape by gemm_lessons.library.dispatch;
device arrays never go through the host.  ``rung=`` runs one rung of gemm_lessons.kernels.ladder
instead, as the lessons do: NumPy input is zero-padded on the host where a rung that moves
16 bytes at a time needs it; device input must then fit the rung (its error says what to do).
"""
import numpy as np
from numba import cuda

from gemm_lessons.library import device_arrays
from gemm_lessons.core.array_checks import is_device_array, require_fits_on_device


def _as_host_matrix(x, name):
    if x.dtype != np.float32:
        raise TypeError(f"{name} has dtype {x.dtype}; convert it explicitly with {name}.astype(np.float32).")
    if x.ndim != 2:
        raise ValueError(f"{name} must be a 2-D matrix, got shape {x.shape}.")
    return np.ascontiguousarray(x)


def _needs_padding(rung, K, N):
    return rung.wide and bool(K % 4 or N % 4)


def sgemm(A, B, C=None, alpha=1.0, beta=0.0, rung=None):
    """C = alpha * A @ B + beta * C.  Returns C: when C is None, a new array of A's kind (NumPy
    or device)."""
    if rung is None and type(A) is device_arrays._DeviceArray:  # the library call: as little Python as possible
        return device_arrays.sgemm(A, B, C, alpha, beta)
    on_device = is_device_array(A)
    if on_device != is_device_array(B) or (C is not None and on_device != is_device_array(C)):
        raise TypeError("pass A, B (and C) all as NumPy arrays or all as device arrays.")
    if C is None and beta != 0:
        raise ValueError("beta != 0 needs a C to scale: pass C, or leave beta at 0.")
    if on_device:
        if rung is None:
            return device_arrays.sgemm(A, B, C, alpha, beta)
        if _needs_padding(rung, A.shape[1], B.shape[1]):
            raise ValueError(
                f"rung {rung.name!r} moves 16 bytes at a time and needs K and N multiples of 4, got "
                f"K={A.shape[1]}, N={B.shape[1]}: leave out rung= (the library takes every shape on the "
                "device) or pick a rung without that constraint, e.g. ladder.SGEMM['reg2d'].")
        if C is None:
            C = cuda.device_array((A.shape[0], B.shape[1]), np.float32)
        rung(A, B, C, alpha=alpha, beta=beta)
        return C

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

    pad = rung is not None and _needs_padding(rung, K, N)
    Kp, Np = (-(-K // 4) * 4, -(-N // 4) * 4) if pad else (K, N)
    require_fits_on_device(4 * (M * Kp + Kp * Np + M * Np), f"a {M}x{N}x{K} SGEMM")
    if pad:  # a lesson's rung on NumPy input: zero columns and rows change nothing in A @ B
        A_p = np.zeros((M, Kp), np.float32)
        A_p[:, :K] = A
        B_p = np.zeros((Kp, Np), np.float32)
        B_p[:K, :N] = B
        A, B = A_p, B_p
    C_p = np.zeros((M, Np), np.float32)
    if beta != 0:
        C_p[:, :N] = C_host
    A_d, B_d, C_d = cuda.to_device(A), cuda.to_device(B), cuda.to_device(C_p)
    if rung is None:
        device_arrays.sgemm(A_d, B_d, C_d, alpha, beta)
    else:
        rung(A_d, B_d, C_d, alpha=alpha, beta=beta)
    result = C_d.copy_to_host()[:, :N] if pad else C_d.copy_to_host()
    if C is not None:
        C[...] = result
        return C
    return np.ascontiguousarray(result)
