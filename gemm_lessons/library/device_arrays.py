"""gl.sgemm on device arrays: every shape on the device, a plan per shape, a cheap call.

    C = library.sgemm(A, B)                  # numba device arrays in, a new device array out
    library.sgemm(A, B, C, alpha, beta)      # C = alpha * A @ B + beta * C, in place

What it adds to the ladder's last rung, and where each part lives:
  * any shape, any alignment, row-strided views (a slice of a larger matrix): the wide kernel
    (warptile.py, 16-byte accesses) when K and N are multiples of 4 and every array is
    C-contiguous and 16-byte aligned; otherwise the any-shape kernel
    (sgemm_kernels/sgemm_any_shape.py), or for large products the wide kernel on zero-padded copies
    (sgemm_kernels/pad_copy.py).  Nothing goes through the host.
  * a plan per shape (gemm_lessons.library.dispatch.choose): kernel, tile size, and split-K for small
    M x N with a long K (sgemm_kernels/splitk_reduce.py adds the partial sums, or
    splitk_reduce_wide.py, 16 bytes at a time, after the wide kernel).  Workspaces
    (partial sums, padded copies) are allocated once per shape and reused.
  * little Python per call: the checks are a few attribute reads and comparisons, the plan is
    remembered per shape, and kernels are launched through gemm_lessons.library.launch.Launcher
    (compiled once for explicit types, no per-call typing or launch-configuration objects).
    Anything unexpected falls through to slower checks whose only job is a clear error.

Calls are asynchronous, like cuBLAS: they queue work on the default stream and return.

    T = library.transpose(X)                 # dst = src.T, any shape, on the device
    library.transpose(X, T)                  # into a given C-contiguous cols x rows array

is the same idea for lesson 09's transpose: 16-byte loads and stores where every row of both
arrays allows them (transpose/sgemm_any_shape.py in its wide form), lesson 09's 4-byte padded-tile
kernel elsewhere.
"""
from dataclasses import replace

import numpy as np
from numba import cuda
from numba.cuda import types

from gemm_lessons.core import backend
from gemm_lessons.library import dispatch
from gemm_lessons.core.array_checks import is_device_array
from gemm_lessons.library.launch import Launcher
from gemm_lessons.kernels.library import sgemm_any_shape, pad_copy, splitk_reduce, splitk_reduce_wide
from gemm_lessons.kernels.sgemm import warptile
from gemm_lessons.kernels.library import transpose_aligned_stores as transpose_flat, transpose_any_shape as transpose_any
from gemm_lessons.kernels.transpose import smem_tile as transpose_tile
from gemm_lessons.kernels.library.transpose_any_wide import staging_width

_F32 = np.dtype(np.float32)
if backend.SIMULATOR:
    from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray as _DeviceArray

    def _pointer(x):
        return x._ary.ctypes.data  # the host memory standing in for device memory
else:
    from numba.cuda.cudadrv.devicearray import DeviceNDArray as _DeviceArray

    def _pointer(x):
        return x.device_ctypes_pointer.value or 0

_ARRAY = {"C": types.Array(types.float32, 2, "C"), "A": types.Array(types.float32, 2, "A")}
_LAUNCHERS = {}


def kernel_spec(kind, tiles, layout):
    """(numba kernel, argument types, threads per block) of one kernel the library launches:
    ``kind`` "wide", "wide_split" (the wide kernel with split_k), "any_shape", "reduce", "reduce_wide"
    (16-byte accesses, the wide plans') or "pad",
    ``tiles`` a key of dispatch.TILES ("" for the reduction and the padding copy), ``layout``
    "C" or "A" (strided rows).  The wide kernels take C-contiguous arrays only."""
    arr, f32 = _ARRAY[layout], types.float32
    if kind in ("wide", "wide_split"):
        cfg = dispatch.TILES[tiles]
        kernel = warptile.kernel_for(replace(cfg, split_k=True) if kind == "wide_split" else cfg)
        return kernel, (arr, arr, arr, f32, f32), cfg.threads
    if kind == "pad":  # src (any layout) into a fresh, C-contiguous workspace
        return pad_copy.pad_copy, (arr, _ARRAY["C"]), pad_copy.THREADS
    if kind == "any_shape":
        cfg = dispatch.TILES[tiles]
        kernel = _ANY_SHAPE.get(cfg) or _ANY_SHAPE.setdefault(cfg, sgemm_any_shape.make_kernel(cfg))
        return kernel, (arr, arr, arr, f32, f32, types.int64), cfg.threads
    if kind == "reduce_wide":  # the wide plans' reduction: 16-byte accesses, C-contiguous aligned C
        return splitk_reduce_wide.sgemm_splitk_reduce_wide, (_ARRAY["C"], _ARRAY["C"], f32, f32), splitk_reduce_wide.THREADS
    # the split-K reduction: workspace (always C-contiguous) into C
    return splitk_reduce.sgemm_splitk_reduce, (_ARRAY["C"], arr, f32, f32), splitk_reduce.THREADS


# every (kind, tiles, layout) that _runner can launch: what gemm_lessons.runs.arch_facts compiles
KERNEL_KEYS = ([(kind, t, "C") for kind in ("wide", "wide_split") for t in dispatch.TILES]
               + [("any_shape", t, layout) for t in dispatch.TILES for layout in ("C", "A")]
               + [(kind, "", layout) for kind in ("reduce", "pad") for layout in ("C", "A")]
               + [("reduce_wide", "", "C")])


def _launcher(kind, tiles, layout):
    """The Launcher of one kernel for one tile size and array layout ("C" or "A"), made once."""
    key = (kind, tiles, layout)
    launcher = _LAUNCHERS.get(key)
    if launcher is None:
        launcher = _LAUNCHERS[key] = Launcher(*kernel_spec(kind, tiles, layout))
    return launcher


_ANY_SHAPE = {}
_WORKSPACE = {}
WORKSPACE_LIMIT = 2 * 2**30  # bytes of workspaces kept between calls


def _workspace(role, rows, cols):
    """A rows x cols float32 device array for one ``role`` (split-K's partial sums "W", the
    padded copies "A" and "B"), reused between calls of the same shape (allocating one per call
    would cost more than the launch).  C-contiguous and 16-byte aligned, as the wide kernel needs."""
    key = (role, rows, cols)
    w = _WORKSPACE.get(key)
    if w is None:
        if sum(x.size for x in _WORKSPACE.values()) * 4 + rows * cols * 4 > WORKSPACE_LIMIT:
            _WORKSPACE.clear()
        w = _WORKSPACE[key] = cuda.device_array((rows, cols), np.float32)
    return w


def sgemm(A, B, C=None, alpha=1.0, beta=0.0):
    """C = alpha * A @ B + beta * C on float32 numba device arrays; returns C (a new device array
    when C is None).  Any M, N, K >= 1; each array's rows must be contiguous (C-contiguous
    arrays and slices of rows or columns of one are; a transposed view is not)."""
    try:
        M, K = A.shape
        K2, N = B.shape
        ok = (type(A) is _DeviceArray and type(B) is _DeviceArray and K2 == K and M > 0 and N > 0 and K > 0
              and A.dtype == _F32 and B.dtype == _F32)
        if C is None:
            ok = ok and beta == 0
        else:
            ok = ok and type(C) is _DeviceArray and C.shape == (M, N) and C.dtype == _F32
    except (AttributeError, TypeError, ValueError):
        ok = False
    if not ok:
        return _checked_call(A, B, C, alpha, beta)
    if C is None:
        C = cuda.device_array((M, N), np.float32)
    layout = _layout(A, B, C, M, N, K)
    if layout is None:
        return _checked_call(A, B, C, alpha, beta)
    wide, contiguous = layout
    key = (M, N, K, wide, contiguous)
    run = _RUNS.get(key)
    if run is None:  # first call at this shape: the plan (dispatch) and its launchers
        if len(_RUNS) > 4096:
            _RUNS.clear()
        run = _RUNS[key] = _runner(dispatch.plan_for(M, N, K, wide), M, N, K, contiguous)
    run(A, B, C, alpha, beta)
    return C


def _layout(A, B, C, M, N, K):
    """(wide, contiguous) for arrays whose rows are contiguous, else None.  contiguous: all three
    C-contiguous (strides (4 * columns, 4)), not rows of a larger array; wide: also K and N
    multiples of 4 and every array on a 16-byte boundary, so the 16-byte loads may be used.
    C None stands for the fresh C-contiguous allocation sgemm would make (aligned)."""
    a0, a1 = A.strides
    b0, b1 = B.strides
    c0, c1 = C.strides if C is not None else (4 * N, 4)
    if not ((a1 == 4 or K == 1) and (b1 == 4 or N == 1) and (c1 == 4 or N == 1) and a0 > 0 and b0 > 0 and c0 > 0):
        return None
    contiguous = (a0 == 4 * K or M == 1) and (b0 == 4 * N or K == 1) and (c0 == 4 * N or M == 1)
    wide = (contiguous and not (K & 3 or N & 3)
            and not ((_pointer(A) | _pointer(B) | (_pointer(C) if C is not None else 0)) & 15))
    return wide, contiguous


def plan_of(A, B, C=None):
    """The dispatch.Plan that ``sgemm(A, B, C)`` runs for these arrays (their shape, layout and
    alignment decide it), without running it."""
    for name, x in (("A", A), ("B", B), ("C", C)):
        if x is not None and not (is_device_array(x) and len(x.shape) == 2):
            raise TypeError(f"{name} must be a 2-D numba device array (cuda.to_device), got {type(x).__name__}")
    M, K = A.shape
    N = B.shape[1]
    if B.shape[0] != K or (C is not None and tuple(C.shape) != (M, N)):
        raise ValueError(f"shapes do not fit: A {tuple(A.shape)}, B {tuple(B.shape)}"
                         + (f", C {tuple(C.shape)}" if C is not None else "") + " (need A: MxK, B: KxN, C: MxN)")
    layout = _layout(A, B, C, M, N, K)
    if layout is None:
        raise ValueError("an array's rows are not contiguous (a transposed view, a slice with a step): "
                         "gl.sgemm refuses it; pass a C-contiguous copy")
    return dispatch.plan_for(M, N, K, layout[0])


def run_plan(plan, A, B, C, alpha=1.0, beta=0.0, contiguous=True):
    """Launch ``plan`` (a dispatch.Plan) on checked arrays: what sgemm does once it has chosen,
    and what the shape benchmark calls to time every plan.  ``contiguous``: all three arrays
    C-contiguous (else the any-shape kernel is compiled for strided arrays)."""
    M, K = A.shape
    _runner(plan, M, B.shape[1], K, contiguous)(A, B, C, alpha, beta)


def _runner(plan, M, N, K, contiguous):
    """run(A, B, C, alpha, beta) for ``plan`` at M x N x K: launchers and grids looked up once."""
    layout = "C" if contiguous else "A"
    gx, gy, split = plan.grid(M, N)
    if plan.kernel == "padded":
        return _padded_runner(plan, M, N, K, layout)
    grid = (gx, gy, split)
    if plan.kernel == "wide":
        main = _launcher("wide_split" if split > 1 else "wide", plan.tiles, "C")
        extra = ()  # the wide kernel's block z finds its chunk of k from the grid
    else:
        main = _launcher("any_shape", plan.tiles, layout)
        extra = (plan.k_chunk(K),)
    if split == 1:
        return lambda A, B, C, alpha, beta: main(grid, A, B, C, alpha, beta, *extra)
    if plan.kernel == "wide":  # C-contiguous, aligned, N a multiple of 4: the 16-byte reduction
        reduce, reduce_grid = _launcher("reduce_wide", "", "C"), splitk_reduce_wide.grid(M, N)
    else:
        reduce, reduce_grid = _launcher("reduce", "", layout), splitk_reduce.grid(M, N)

    def run_split_k(A, B, C, alpha, beta):
        W = _workspace("W", split * M, N)  # looked up per call: the cache may have been cleared
        main(grid, A, B, W, 1.0, 0.0, *extra)
        reduce(reduce_grid, W, C, alpha, beta)

    return run_split_k


def _padded_runner(plan, M, N, K, layout):
    """The padded plan: A and B copied into zero-padded workspaces (sides multiples of 4), the
    wide kernel into an M x N4 workspace, its M x N part into C with alpha and beta (the
    reduction of one part)."""
    N4, K4 = dispatch.padded_sides(N, K)
    pad, wide = _launcher("pad", "", layout), _launcher("wide", plan.tiles, "C")
    reduce = _launcher("reduce", "", layout)
    grid, grid_a, grid_b = plan.grid(M, N4)[:2], pad_copy.grid(M, K4), pad_copy.grid(K4, N4)
    reduce_grid = splitk_reduce.grid(M, N)

    def run_padded(A, B, C, alpha, beta):
        Ap, Bp, W = _workspace("A", M, K4), _workspace("B", K4, N4), _workspace("W", M, N4)
        pad(grid_a, A, Ap)
        pad(grid_b, B, Bp)
        wide(grid, Ap, Bp, W, 1.0, 0.0)
        reduce(reduce_grid, W, C, alpha, beta)

    return run_padded


_RUNS = {}
dispatch.forget_on_new_model(lambda: _RUNS.clear())


def launcher_for(plan, contiguous=True):
    """The Launcher of ``plan``'s main kernel (compiled on first use): its ``fast`` flag, its
    compiled kernel's occupancy (``blocks_per_sm``)."""
    if plan.kernel == "any_shape":
        return _launcher("any_shape", plan.tiles, "C" if contiguous else "A")
    return _launcher("wide_split" if plan.split > 1 else "wide", plan.tiles, "C")


def _checked_call(A, B, C, alpha, beta):
    """The slow path: foreign device arrays (CuPy, PyTorch: anything with
    __cuda_array_interface__) are wrapped as numba arrays without a copy and the call is
    retried; anything else gets an error that says what is wrong and what to do."""
    named = [("A", A), ("B", B)] + ([("C", C)] if C is not None else [])
    for name, x in named:
        if isinstance(x, np.ndarray):
            raise TypeError(f"{name} is a NumPy array in host memory: pass device arrays "
                            f"({name}_d = cuda.to_device({name})), or call gemm_lessons.sgemm, which "
                            "takes NumPy arrays and returns one.")
        if not is_device_array(x):
            raise TypeError(f"{name} must be a device array (numba's, or anything with "
                            f"__cuda_array_interface__), got {type(x).__name__}.")
    if not backend.SIMULATOR and any(type(x) is not _DeviceArray for _, x in named):
        A, B = cuda.as_cuda_array(A), cuda.as_cuda_array(B)
        return sgemm(A, B, None if C is None else cuda.as_cuda_array(C), alpha, beta)
    for name, x in named:
        if np.dtype(x.dtype) != _F32:
            raise TypeError(f"{name} has dtype {np.dtype(x.dtype)}; this is single precision (SGEMM): "
                            f"convert it first, e.g. on the host with {name}.astype(np.float32).")
        if len(x.shape) != 2:
            raise ValueError(f"{name} must be a 2-D matrix, got {len(x.shape)}-D with shape {tuple(x.shape)}.")
    M, K = A.shape
    K2, N = B.shape
    if K2 != K:
        raise ValueError(f"inner dimensions differ: A is {M}x{K} but B is {K2}x{N} "
                         "(need A.shape[1] == B.shape[0]).")
    if 0 in (M, N, K):
        raise ValueError(f"every dimension must be at least 1, got M={M}, N={N}, K={K}.")
    if C is None and beta != 0:
        raise ValueError("beta != 0 needs a C to scale: pass C, or leave beta at 0.")
    if C is not None and tuple(C.shape) != (M, N):
        raise ValueError(f"C must be {M}x{N} (rows of A x columns of B), got {C.shape[0]}x{C.shape[1]}.")
    for name, x in named:
        s0, s1 = x.strides
        if not (s1 == 4 or x.shape[1] == 1) or s0 <= 0:
            raise ValueError(
                f"{name} has strides {tuple(x.strides)} (bytes): its rows are not contiguous in memory "
                "(a transposed view, a slice with a step, or reversed rows). gl.sgemm reads and writes "
                "whole rows; pass a C-contiguous array, e.g. a copy made with np.ascontiguousarray on "
                "the host, or for a transposed operand use (A.T @ B).T = B.T @ A with the original arrays.")
    raise AssertionError(f"gl.sgemm refused arrays it should take: {[(n, type(x), x.shape) for n, x in named]}")


# ----------------------------------------------------------------------------- transpose
# Measured on an H100 (tools/transpose_suite.py, results/transpose-suite-*.json): where both
# sides can move 16 bytes at a time, lesson 09's wide layout (64 x 64 tiles, 16 x 16 threads)
# through transpose/sgemm_any_shape.py; where a side cannot but both arrays start on 16-byte
# boundaries, transpose/aligned_stores.py (16-byte accesses on the arrays seen flat; on the five
# large such shapes of the suite 101-111% of sgeam, the 4-byte kernel 77-84%, any_wide.py 89-102%);
# elsewhere (a view starting mid-float4) lesson 09's smem_padded_32x8 kernel (4-byte accesses).
_WIDE_TILE, _WIDE_ROWS = 64, 16
_SCALAR_TILE, _SCALAR_ROWS = 32, 8
_MAX_GRID_Y = 65535


def _transpose_launcher(kind, width=None):
    """kind: "wide", "flat" (aligned_stores with ``width`` floats per staging row) or "scalar"."""
    key = ("transpose", kind, width)
    launcher = _LAUNCHERS.get(key)
    if launcher is None:
        kernel = {"wide": lambda: transpose_any.kernel_for(_WIDE_TILE, _WIDE_ROWS, 1, True, True),
                  "flat": lambda: transpose_flat.kernel_for(_WIDE_TILE, _WIDE_ROWS, width),
                  "scalar": lambda: transpose_tile.kernel_for(_SCALAR_TILE, _SCALAR_ROWS, 1)}[kind]()
        launcher = _LAUNCHERS[key] = Launcher(kernel, (_ARRAY["C"], _ARRAY["C"]), kernel.block)
    return launcher


def transpose(src, dst=None):
    """dst = src.T for a float32 numba device array ``src`` (rows x cols, C-contiguous); returns
    dst, a new C-contiguous cols x rows device array when None.  Any rows, cols >= 1 (rows up to
    65535 x 32)."""
    try:
        rows, cols = src.shape
        ok = (type(src) is _DeviceArray and src.dtype == _F32 and rows > 0 and cols > 0
              and src.strides == (4 * cols, 4))
        if dst is not None:
            ok = ok and type(dst) is _DeviceArray and dst.dtype == _F32 and dst.shape == (cols, rows) \
                and dst.strides == (4 * rows, 4)
    except (AttributeError, TypeError, ValueError):
        ok = False
    if not ok:
        return _checked_transpose(src, dst)
    if dst is None:
        dst = cuda.device_array((cols, rows), np.float32)
    # row by row, 16-byte accesses need every row of both arrays to start on a 16-byte boundary;
    # seen flat, only the two arrays' starts
    aligned = not (_pointer(src) | _pointer(dst)) & 15
    if aligned and not (cols & 3 or rows & 3):
        T, launcher = _WIDE_TILE, _transpose_launcher("wide")
    elif aligned:
        T, launcher = _WIDE_TILE, _transpose_launcher("flat", staging_width(_WIDE_TILE, rows, cols))
    else:
        T, launcher = _SCALAR_TILE, _transpose_launcher("scalar")
    grid = ((cols + T - 1) // T, (rows + T - 1) // T)
    if grid[1] > _MAX_GRID_Y:
        return _checked_transpose(src, dst)
    launcher(grid, src, dst)
    return dst


def _checked_transpose(src, dst):
    """The slow path of transpose: foreign device arrays wrapped without a copy, or a clear error."""
    named = [("src", src)] + ([("dst", dst)] if dst is not None else [])
    for name, x in named:
        if isinstance(x, np.ndarray):
            raise TypeError(f"{name} is a NumPy array in host memory: pass a device array "
                            f"(cuda.to_device({name})); on the host, NumPy's {name}.T.copy() does the same.")
        if not is_device_array(x):
            raise TypeError(f"{name} must be a device array (numba's, or anything with "
                            f"__cuda_array_interface__), got {type(x).__name__}.")
    if not backend.SIMULATOR and any(type(x) is not _DeviceArray for _, x in named):
        return transpose(cuda.as_cuda_array(src), None if dst is None else cuda.as_cuda_array(dst))
    for name, x in named:
        if np.dtype(x.dtype) != _F32:
            raise TypeError(f"{name} has dtype {np.dtype(x.dtype)}; this transpose is for float32 matrices.")
        if len(x.shape) != 2:
            raise ValueError(f"{name} must be a 2-D matrix, got {len(x.shape)}-D with shape {tuple(x.shape)}.")
    rows, cols = src.shape
    if 0 in (rows, cols):
        raise ValueError(f"src must have at least one row and one column, got {rows}x{cols}.")
    if dst is not None and tuple(dst.shape) != (cols, rows):
        raise ValueError(f"dst must be {cols}x{rows} (the transpose of a {rows}x{cols} src), "
                         f"got {dst.shape[0]}x{dst.shape[1]}.")
    for name, x in named:
        r, c = x.shape
        if tuple(x.strides) != (4 * c, 4):
            raise ValueError(f"{name} has strides {tuple(x.strides)} (bytes), not those of a C-contiguous "
                             f"{r}x{c} float32 array (a transposed view or a slice?): pass a freshly "
                             "allocated array (cuda.device_array or cuda.to_device of a contiguous one).")
    if -(-rows // _SCALAR_TILE) > _MAX_GRID_Y:
        raise ValueError(f"src has {rows} rows: at most {_MAX_GRID_Y * _SCALAR_TILE} fit one launch's grid.")
    raise AssertionError("transpose: arguments look valid but were refused (a bug: please report it)")
