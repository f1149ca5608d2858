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
``help(gemm_lessons.sgemm)`` states the whole contract: shapes, dtypes, layouts, alignment,
aliasing, asynchrony, errors.
"""
import numpy as np
from numba import cuda

from gemm_lessons.library import device_arrays, memory
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
    """C = alpha * A @ B + beta * C for float32 matrices, NumPy or device arrays.  Returns C: when
    C is None, a new array of A's kind (NumPy or device; a new device array comes from the CUDA
    driver's stream-ordered pool and goes back to it, in stream order, when it is dropped).

    Shapes
        A is M x K, B is K x N, C is M x N, all 2-D.  Any M, N, K >= 0; empty products follow
        BLAS: M = 0 or N = 0 returns C (empty) and launches nothing; K = 0 returns beta * C
        (alpha is ignored, beta = 0 writes zeros without reading C; with C = None, an M x N zero
        matrix).  With K > 0, alpha = 0 still computes A @ B: NaN or inf in A or B then give
        NaN, where reference BLAS would not read A and B.
    Dtypes
        float32 only (single precision), converted by nobody: another dtype is a TypeError that
        names the conversion (A.astype(np.float32)).  alpha and beta are used as float32.
    Layouts
        A, B and C all NumPy arrays, or all device arrays (numba's, or anything with
        __cuda_array_interface__: CuPy, PyTorch).  NumPy arrays may have any layout
        (transposed views such as A.T, slices): they are copied to the device C-contiguous.
        Device arrays are used in place and need contiguous rows: C-contiguous arrays and
        slices of rows or columns of one are taken; transposed (column-major, F-order) arrays
        and slices with a step are refused, and the error names a call that works
        (``gemm_lessons.library.transpose(B.T)`` makes a C-contiguous copy of a transposed B on
        the device).  numba's DeviceNDArray.T on a GPU is itself a C-contiguous copy, and is
        taken; on the simulator, and in CuPy or PyTorch, .T is a transposed view.
    Alignment
        Full speed (the ladder's last rung, 16-byte loads and stores): K and N multiples of 4,
        and for device arrays all three C-contiguous and starting on a 16-byte boundary (fresh
        allocations and NumPy input always are).  Anything else runs the any-shape kernel
        (4-byte accesses) or, for large products, the fast kernel on zero-padded copies: correct,
        slower (gemm_lessons.library.plan_of(A, B, C) says which plan a call runs).
    Aliasing
        C must not share memory with A or B, for both kinds: on the device the kernels write C
        while they read A and B, and would read values already overwritten.  The same array,
        or views whose elements overlap, are refused with a ValueError that says to pass a
        separate C (C = None allocates one).  A and B may overlap (they are only read).
    Asynchrony
        Device arrays: the call queues its kernels on the CUDA default stream and returns once
        they are launched, like cuBLAS; C holds the result when the stream has run them
        (cuda.synchronize(), or C.copy_to_host(), which waits).  Work queued before on the
        default stream is finished first; other streams are the caller's to synchronize.
        NumPy arrays: A, B (and C when beta != 0) are copied to the device, and the result is
        copied back into C (or a new array): the call returns when C holds it.
    rung
        None (the library, gemm_lessons.library.device_arrays), or one rung of
        gemm_lessons.kernels.ladder, as the lessons run them: NumPy input is zero-padded on the
        host where a rung that moves 16 bytes at a time needs it; device input must fit the
        rung (C-contiguous; its error says what to do).  Empty products never reach a rung.
    Errors
        TypeError: arrays of different kinds, something that is not an array, a dtype other
        than float32.  ValueError: not 2-D, inner dimensions or C's shape that do not fit,
        beta != 0 with C None, device arrays whose rows are not contiguous (transposed, stepped
        or reversed views), C overlapping A or B, device input a rung cannot take.  MemoryError:
        NumPy input larger than the GPU's free memory.  CUDA driver errors pass through.
    """
    if rung is None and type(A) is device_arrays._DeviceArray:  # the library call: as little Python as possible
        return device_arrays.sgemm(A, B, C, alpha, beta)
    on_device = is_device_array(A)
    if on_device != is_device_array(B) or (C is not None and on_device != is_device_array(C)):
        raise TypeError("pass A, B (and C) all as NumPy arrays or all as device arrays.")
    if C is None and beta != 0:
        raise ValueError("beta != 0 needs a C to scale: pass C, or leave beta at 0.")
    if on_device:
        if rung is None or 0 in tuple(A.shape) + tuple(B.shape):  # empty: BLAS, as the library does it
            return device_arrays.sgemm(A, B, C, alpha, beta)
        if _needs_padding(rung, A.shape[1], B.shape[1]):
            raise ValueError(
                f"rung {rung.name!r} moves 16 bytes at a time and needs K and N multiples of 4, got "
                f"K={A.shape[1]}, N={B.shape[1]}: leave out rung= (the library takes every shape on the "
                "device) or pick a rung without that constraint, e.g. ladder.SGEMM['reg2d'].")
        memory.refuse_overlap(A, B, C)
        if C is None:
            C = cuda.device_array((A.shape[0], B.shape[1]), np.float32)
        rung(A, B, C, alpha=alpha, beta=beta)
        return C

    A_in, B_in = A, B
    A, B = _as_host_matrix(A, "A"), _as_host_matrix(B, "B")
    if C is not None:
        C_host = _as_host_matrix(C, "C")
    M, K = A.shape
    if B.shape[0] != K:
        raise ValueError(f"inner dimensions differ: A is {M}x{K} but B is {B.shape[0]}x{B.shape[1]}.")
    N = B.shape[1]
    if C is not None and tuple(C.shape) != (M, N):
        raise ValueError(f"C must be {M}x{N}, got {C.shape[0]}x{C.shape[1]}.")
    if C is not None:
        for name, x in (("A", A_in), ("B", B_in)):
            if np.shares_memory(C, x):
                raise ValueError(memory.overlap_message("C", name))
    if M == 0 or N == 0:  # BLAS: nothing to compute
        return C if C is not None else np.zeros((M, N), np.float32)
    if K == 0:  # BLAS: C = beta * C, alpha ignored, C not read when beta is 0
        if C is None:
            return np.zeros((M, N), np.float32)
        if beta == 0:
            C[...] = 0
        elif beta != 1:
            C[...] = np.float32(beta) * C_host
        return C

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
