"""gl.sgemm on device arrays: every shape on the device, a plan per shape, a cheap call.

    C = library.sgemm(A, B)                  # numba device arrays in, a new device array out
    library.sgemm(A, B, C, alpha, beta)      # C = alpha * A @ B + beta * C, in place

What it adds to the ladder's last rung, and where each part lives:
  * any shape, any alignment, row-strided views (a slice of a larger matrix): the wide kernel
    (warptile.py, 16-byte accesses) when K and N are multiples of 4 and every array is
    C-contiguous and 16-byte aligned; otherwise the any-shape kernel
    (kernels/library/sgemm_any_shape.py), or for large products the wide kernel on zero-padded copies
    of B (and A when K is not a multiple of 4, both in one launch; kernels/library/pad_copy.py,
    pad_copy_pair.py), writing C directly.
    Nothing goes through the host.
  * a plan per shape (gemm_lessons.library.dispatch.choose): kernel, tile size, and split-K for small
    M x N with a long K (kernels/library/splitk_reduce.py adds the partial sums; after the wide
    kernel splitk_reduce_wide.py, 16 bytes at a time, or splitk_reduce_padded.py, which reads the
    padded plan's partial sums 16 bytes at a time and writes C one float at a time).  Workspaces
    (partial sums, padded copies) are allocated once per shape and reused.
  * little Python per call: the checks are a few attribute reads and comparisons, the plan is
    remembered per shape, and kernels are launched through gemm_lessons.library.launch.Launcher
    (compiled once for explicit types, no per-call typing or launch-configuration objects).
    Anything unexpected falls through to slower checks whose only job is a clear error.

Calls are asynchronous, like cuBLAS: they queue work on the default stream and return.  What
every call promises and refuses (shapes, dtypes, layouts, alignment, aliasing, asynchrony,
errors) is in ``sgemm``'s and ``transpose``'s docstrings.

    T = library.transpose(X)                 # dst = src.T, any shape, on the device
    library.transpose(X, T)                  # into a given C-contiguous cols x rows array

is the same idea for lesson 09's transpose: 16-byte loads and stores where every row of both
arrays allows them (transpose/sgemm_any_shape.py in its wide form), lesson 09's 4-byte padded-tile
kernel elsewhere (library/device_transpose.py; aliasing and pointers: library/memory.py).
"""
from dataclasses import replace

import numpy as np
from numba import cuda
from gemm_lessons.core.numba_compat import types

from gemm_lessons.core import backend
from gemm_lessons.library import dispatch
from gemm_lessons.core.array_checks import is_device_array
from gemm_lessons.library import allocate
from gemm_lessons.library.launch import Launcher
from gemm_lessons.library.memory import _DeviceArray, _pointer, _refuse_overlap, refuse_overlap
from gemm_lessons.kernels.library import (pad_copy, pad_copy_pair, sgemm_any_shape, splitk_reduce,
                                          splitk_reduce_padded, splitk_reduce_wide)
from gemm_lessons.kernels.sgemm import warptile

_F32 = np.dtype(np.float32)

_ARRAY = {"C": types.Array(types.float32, 2, "C"), "A": types.Array(types.float32, 2, "A")}
_LAUNCHERS = {}


def kernel_spec(kind, tiles, layout):
    """(numba kernel, argument types, threads per block) of one kernel the library launches:
    ``kind`` "wide", "wide_split" (the wide kernel with split_k), "wide_ragged_c" (with ragged_c,
    C typed by ``layout``), "any_shape", "reduce", "reduce_wide" (16-byte accesses, the wide
    plans'), "reduce_padded" (the padded split plans'), "pad" or "pad_pair" (two copies, one launch),
    ``tiles`` a key of dispatch.TILES ("" for the reductions and the padding copies), ``layout``
    "C" or "A" (strided rows).  The wide kernels take C-contiguous arrays only."""
    arr, f32 = _ARRAY[layout], types.float32
    if kind in ("wide", "wide_split"):
        cfg = dispatch.TILES[tiles]
        kernel = warptile.kernel_for(replace(cfg, split_k=True) if kind == "wide_split" else cfg)
        return kernel, (arr, arr, arr, f32, f32), cfg.threads
    if kind == "wide_ragged_c":  # the padded plan's: padded A and B (C-contiguous), C as given
        cfg = replace(dispatch.TILES[tiles], ragged_c=True)
        return warptile.kernel_for(cfg), (_ARRAY["C"], _ARRAY["C"], arr, f32, f32), cfg.threads
    if kind == "pad":  # src (any layout) into a fresh, C-contiguous workspace
        return pad_copy.pad_copy, (arr, _ARRAY["C"]), pad_copy.THREADS
    if kind == "pad_pair":  # A's and B's copies in one launch
        return pad_copy_pair.pad_copy_pair, (arr, _ARRAY["C"], arr, _ARRAY["C"]), pad_copy.THREADS
    if kind == "any_shape":
        cfg = dispatch.TILES[tiles]
        kernel = _ANY_SHAPE.get(cfg) or _ANY_SHAPE.setdefault(cfg, sgemm_any_shape.make_kernel(cfg))
        return kernel, (arr, arr, arr, f32, f32, types.int64), cfg.threads
    if kind == "reduce_wide":  # the wide plans' reduction: 16-byte accesses, C-contiguous aligned C
        return splitk_reduce_wide.sgemm_splitk_reduce_wide, (_ARRAY["C"], _ARRAY["C"], f32, f32), splitk_reduce_wide.THREADS
    if kind == "reduce_padded":  # the padded plans': the workspace by 16-byte loads, C one float at a time
        return splitk_reduce_padded.sgemm_splitk_reduce_padded, (_ARRAY["C"], arr, f32, f32), splitk_reduce_padded.THREADS
    # the split-K reduction: workspace (always C-contiguous) into C
    return splitk_reduce.sgemm_splitk_reduce, (_ARRAY["C"], arr, f32, f32), splitk_reduce.THREADS


# every (kind, tiles, layout) that _runner can launch: what gemm_lessons.runs.arch_facts compiles
KERNEL_KEYS = ([(kind, t, "C") for kind in ("wide", "wide_split") for t in dispatch.TILES]
               + [("wide_ragged_c", t, layout) for t in dispatch.TILES for layout in ("C", "A")]
               + [("any_shape", t, layout) for t in dispatch.TILES for layout in ("C", "A")]
               + [(kind, "", layout) for kind in ("reduce", "pad", "pad_pair", "reduce_padded") for layout in ("C", "A")]
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
    """C = alpha * A @ B + beta * C on float32 device arrays; returns C (a new device array when
    C is None).  ``gemm_lessons.sgemm`` is the same call, which also takes NumPy arrays.

    Shapes
        A is M x K, B is K x N, C is M x N, all 2-D.  Any M, N, K >= 0; empty products follow
        BLAS: M = 0 or N = 0 returns C (empty) and launches nothing; K = 0 returns beta * C
        (alpha is ignored, beta = 0 writes zeros without reading C, beta = 1 launches nothing;
        with C = None, an M x N zero matrix).  With K > 0, alpha = 0 still computes A @ B: NaN
        or inf in A or B then give NaN, where reference BLAS would not read A and B.
    Dtypes
        float32 only (single precision), converted by nobody: another dtype is a TypeError that
        names the conversion.  alpha and beta are used as float32.
    Layouts
        numba device arrays, or anything with __cuda_array_interface__ (CuPy, PyTorch: wrapped
        without a copy); NumPy arrays are refused (gemm_lessons.sgemm takes those).  Each array's
        rows must be contiguous: C-contiguous arrays and slices of rows or columns of one (a row
        stride larger than the row) are taken as they are.  Transposed (column-major, F-order)
        arrays and slices with a step are refused: ``gemm_lessons.library.transpose(B.T)`` makes
        a C-contiguous copy of a transposed B on the device (B.T is then row-major; numba's
        DeviceNDArray.T on a GPU is itself a C-contiguous copy, and is taken).  C's rows must
        not overlap each other.
    Alignment
        Full speed (the ladder's last rung, 16-byte loads and stores): K and N multiples of 4,
        all three arrays C-contiguous and starting on a 16-byte boundary (fresh allocations
        do).  Anything else runs the any-shape kernel (4-byte accesses) or, for large products,
        the fast kernel on zero-padded copies of B (and of A when K is not a multiple of 4),
        writing C one float at a time: correct, slower.  ``plan_of(A, B, C)``
        says which plan a call runs.
    Aliasing
        C must not share memory with A or B: the kernels write C while they read A and B, so
        they would read values already overwritten.  The same array, or views whose elements
        overlap, are refused with a ValueError (elements, not just byte ranges: column blocks
        of one matrix with the same row stride may be used together).  A and B may overlap
        (they are only read).  Checked on every call from the pointers the call reads anyway.
    Asynchrony
        The call queues its kernels on the CUDA default stream (stream 0; an array's bound
        stream is not used) and returns once they are launched, like cuBLAS: C holds the result
        when the stream has run them (cuda.synchronize(), or C.copy_to_host(), which waits).
        Work queued on the default stream before (writing A, B or C) is finished first; work
        on other streams must be synchronized by the caller.  Workspaces (split-K's partial
        sums, the padded copies) are kept per shape and shared by calls of that shape: call
        from one host thread at a time.
    Errors
        TypeError: a NumPy array, something that is not a device array, a dtype other than
        float32.  ValueError: not 2-D, inner dimensions or C's shape that do not fit, beta != 0
        with C None, rows that are not contiguous (transposed, stepped or reversed views), C
        overlapping A or B.  Errors of the CUDA driver (a failed launch, out of memory) pass
        through as numba raises them.
    """
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
    layout = _layout(A, B, C, M, N, K)  # C None: the fresh allocation below (C-contiguous, aligned)
    if layout is None:
        return _checked_call(A, B, C, alpha, beta)
    if C is None:
        C = allocate.empty(M, N)
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
    """(wide, contiguous) for arrays whose rows are contiguous (and C's rows apart), else None;
    a ValueError if C shares memory with A or B.  contiguous: all three C-contiguous (strides
    (4 * columns, 4)), not rows of a larger array; wide: also K and N multiples of 4 and every
    array on a 16-byte boundary, so the 16-byte loads may be used.  C None stands for the fresh
    C-contiguous allocation sgemm would make (aligned, overlapping nothing).

    The overlap check uses the pointers the alignment needs: C's bytes [pc, pc + (M-1)*c0 + 4N)
    against A's and B's; only where those ranges meet does _refuse_overlap compare elements."""
    a0, a1 = A.strides
    b0, b1 = B.strides
    c0, c1 = C.strides if C is not None else (4 * N, 4)
    if not ((a1 == 4 or K == 1) and (b1 == 4 or N == 1) and (c1 == 4 or N == 1) and a0 > 0 and b0 > 0
            and (c0 >= 4 * N or M == 1) and c0 > 0):
        return None
    contiguous = (a0 == 4 * K or M == 1) and (b0 == 4 * N or K == 1) and (c0 == 4 * N or M == 1)
    if C is None:
        return (contiguous and not (K & 3 or N & 3) and not ((_pointer(A) | _pointer(B)) & 15)), contiguous
    pa, pb, pc = _pointer(A), _pointer(B), _pointer(C)
    c_end = pc + (M - 1) * c0 + 4 * N
    if (pc < pa + (M - 1) * a0 + 4 * K and pa < c_end) or (pc < pb + (K - 1) * b0 + 4 * N and pb < c_end):
        _refuse_overlap(A, B, C, pa, pb, pc)  # byte ranges meet: do elements?
    return (contiguous and not (K & 3 or N & 3) and not ((pa | pb | pc) & 15)), contiguous


def plan_of(A, B, C=None):
    """The dispatch.Plan that ``sgemm(A, B, C)`` runs for these arrays (their shape, layout and
    alignment decide it), without running it; None for an empty product (M, N or K = 0: sgemm
    launches nothing, or only scales C).  Arrays sgemm refuses get the error sgemm would raise."""
    for name, x in (("A", A), ("B", B), ("C", C)):
        if x is not None and not (is_device_array(x) and len(x.shape) == 2):
            raise TypeError(f"{name} must be a 2-D numba device array (cuda.to_device), got {type(x).__name__}")
    M, K = A.shape
    N = B.shape[1]
    if B.shape[0] != K or (C is not None and tuple(C.shape) != (M, N)):
        raise ValueError(f"shapes do not fit: A {tuple(A.shape)}, B {tuple(B.shape)}"
                         + (f", C {tuple(C.shape)}" if C is not None else "") + " (need A: MxK, B: KxN, C: MxN)")
    if 0 in (M, N, K):
        return None
    layout = _layout(A, B, C, M, N, K)
    if layout is None:
        raise _layout_error([("A", A), ("B", B)] + ([("C", C)] if C is not None else []))
    return dispatch.plan_for(M, N, K, layout[0])


def run_plan(plan, A, B, C, alpha=1.0, beta=0.0, contiguous=True):
    """Launch ``plan`` (a dispatch.Plan) on checked arrays: what sgemm does once it has chosen,
    and what the shape benchmark calls to time every plan.  ``contiguous``: all three arrays
    C-contiguous (else the any-shape kernel is compiled for strided arrays).  C overlapping A or
    B is refused here too."""
    refuse_overlap(A, B, C)
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
    """The padded plan: B, and A where its rows cannot take 16-byte loads (K not a multiple of 4,
    a strided or unaligned A; then both copies in one launch), copied into zero-padded workspaces
    with sides multiples of 4; then the wide kernel straight into C, one float at a time
    (``ragged_c``), or, split along K, into a workspace of partial sums N4 wide that the padded
    reduction adds into C."""
    N4, K4 = dispatch.padded_sides(N, K)
    grid_b, grid_pair, grid = pad_copy.grid(K4, N4), pad_copy_pair.grid((M, K4), (K4, N4)), plan.grid(M, N4)
    split = plan.split
    if split == 1:
        main = _launcher("wide_ragged_c", plan.tiles, layout)
    else:
        main, reduce = _launcher("wide_split", plan.tiles, "C"), _launcher("reduce_padded", "", layout)
        reduce_grid = splitk_reduce_padded.grid(M, N)
    pad_a = bool(K & 3) or layout != "C"  # else only an A not on a 16-byte boundary is copied
    # compiled only where this shape uses it (a Launcher compiles its kernel when made)
    pad = None if pad_a else _launcher("pad", "", layout)

    def run_padded(A, B, C, alpha, beta):
        if pad_a or _pointer(A) & 15:  # A's and B's copies in one launch
            Ap, Bp = _workspace("A", M, K4), _workspace("B", K4, N4)
            _launcher("pad_pair", "", layout)(grid_pair, A, Ap, B, Bp)
        else:
            Ap, Bp = A, _workspace("B", K4, N4)
            pad(grid_b, B, Bp)
        if split == 1:
            main(grid, Ap, Bp, C, alpha, beta)
        else:
            W = _workspace("W", split * M, N4)
            main(grid, Ap, Bp, W, 1.0, 0.0)
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
    retried; empty products are done as BLAS does them; anything else gets an error that says
    what is wrong and what to do."""
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
    if C is None and beta != 0:
        raise ValueError("beta != 0 needs a C to scale: pass C, or leave beta at 0.")
    if C is not None and tuple(C.shape) != (M, N):
        raise ValueError(f"C must be {M}x{N} (rows of A x columns of B), got {C.shape[0]}x{C.shape[1]}.")
    if M == 0 or N == 0:  # BLAS: nothing to compute, nothing launched
        return C if C is not None else allocate.empty(M, N)
    if K == 0:  # BLAS: C = beta * C, alpha ignored (A and B are empty: nothing of theirs is read)
        if C is None:
            C, beta = allocate.empty(M, N), 0.0
        error = _layout_error([("C", C)])
        if error:
            raise error
        _scale(C, beta)
        return C
    error = _layout_error(named)
    if error:
        raise error
    raise AssertionError(f"gl.sgemm refused arrays it should take: {[(n, type(x), x.shape) for n, x in named]}")


def _is_transposed(x):
    """A transposed C-contiguous array: column-major (F-order), more than one row and column."""
    r, c = x.shape
    return r > 1 and c > 1 and tuple(x.strides) == (4, 4 * r)


def _layout_error(named):
    """The ValueError for the first array of ``named`` ((name, array) pairs) whose layout sgemm
    cannot take (rows not contiguous, C's rows overlapping), with advice that works; else None."""
    for name, x in named:
        s0, s1 = x.strides
        r, c = x.shape
        if _is_transposed(x):
            alloc = "C = None allocates one; " if name == "C" else ""
            return ValueError(
                f"{name} is a transposed (column-major, F-order) array, strides {tuple(x.strides)} bytes: "
                f"gl.sgemm reads and writes whole rows. Pass a C-contiguous array: {alloc}"
                f"gemm_lessons.library.transpose({name}.T) makes one on the device ({name}.T is row-major).")
        if not (s1 == 4 or c == 1) or s0 <= 0:
            return ValueError(
                f"{name} has strides {tuple(x.strides)} (bytes): its rows are not contiguous in memory "
                "(a slice with a step, reversed rows, or a transposed slice). gl.sgemm reads and writes "
                "whole rows; pass a C-contiguous array, e.g. made on the host with np.ascontiguousarray "
                "and copied with cuda.to_device.")
        if name == "C" and r > 1 and s0 < 4 * c:
            return ValueError(
                f"C has strides {tuple(x.strides)} (bytes): its rows, {4 * c} bytes each, overlap each "
                "other, so one element would be written twice; pass a C-contiguous C (C = None "
                "allocates one).")
    return None


def _scale(C, beta):
    """C = beta * C on the device, the product with K = 0 (BLAS: alpha ignored, beta 0 writes
    zeros without reading C, beta 1 launches nothing).  The any-shape kernel with K = 0 does just
    that (no k to sum: alpha * 0 + beta * C, C not read when beta is 0), given empty views of C
    (M x 0 and 0 x N, valid pointers) as its A and B."""
    if beta == 1:
        return
    M, N = C.shape
    plan = dispatch.Plan("any_shape", "64x64")
    gx, gy, _ = plan.grid(M, N)
    _launcher("any_shape", plan.tiles, "A")((gx, gy, 1), C[:, :0], C[:0, :], C, 0.0, beta, 0)
