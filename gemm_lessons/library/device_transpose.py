"""library.transpose on device arrays: dst = src.T, any shape, on the device (the kernel per
layout, the checks, the errors)."""
import math

import numpy as np
from numba import cuda

from gemm_lessons.core import backend
from gemm_lessons.core.array_checks import is_device_array
from gemm_lessons.library.device_arrays import _ARRAY, _F32, _LAUNCHERS, _is_transposed
from gemm_lessons.library import allocate
from gemm_lessons.library.launch import Launcher
from gemm_lessons.library.memory import _DeviceArray, _pointer, _shares_memory, overlap_message
from gemm_lessons.kernels.library import transpose_aligned_stores as transpose_flat, transpose_any_shape as transpose_any
from gemm_lessons.kernels.library import transpose_few_rows, transpose_pairs
from gemm_lessons.kernels.transpose import smem_tile as transpose_tile
from gemm_lessons.kernels.library.transpose_any_wide import staging_width

# Measured on an H100 (tools/transpose_suite.py, results/transpose-suite-*.json): where both
# sides can move 16 bytes at a time, lesson 09's wide layout (64 x 64 tiles, 16 x 16 threads)
# through transpose/sgemm_any_shape.py; where a side cannot but both arrays start on 16-byte
# boundaries, transpose/aligned_stores.py (16-byte accesses on the arrays seen flat; on the five
# large such shapes of the suite 101-111% of sgeam, the 4-byte kernel 77-84%, any_wide.py 89-102%);
# elsewhere (a view starting mid-float4) lesson 09's smem_padded_32x8 kernel (4-byte accesses).
# Before all of them, a src of at most 16 rows goes to transpose_few_rows.py, whose blocks take
# every row: a 64 x 64 tile would be mostly empty (the H200's transpose suite, 7 x 300,007).
# Where dst's rows allow 16-byte accesses and src's 8-byte ones (rows % 4 == 0, cols % 4 == 2),
# transpose_pairs.py (8-byte accesses on both sides, nothing staged twice) instead of
# aligned_stores: 105% of sgeam against 90% at 8192 x 8190 on an H200; where dst's rows start off
# 16 bytes (rows % 4 == 2) it was slower than aligned_stores (experiments/transpose_pairs/).
_WIDE_TILE, _WIDE_ROWS = 64, 16
_PAIRS_ROWS = 16
_SCALAR_TILE, _SCALAR_ROWS = 32, 8
_MAX_GRID_Y = 65535


def _transpose_launcher(kind, width=None):
    """kind: "wide", "pairs", "flat" (aligned_stores with ``width`` floats per staging row), "scalar"
    or "few_rows"."""
    key = ("transpose", kind, width)
    launcher = _LAUNCHERS.get(key)
    if launcher is None:
        kernel = _transpose_kernel(kind, width)
        launcher = _LAUNCHERS[key] = Launcher(kernel, (_ARRAY["C"], _ARRAY["C"]), kernel.block)
    return launcher


def _transpose_kernel(kind, width=None):
    """The numba kernel of one kind (see _transpose_launcher)."""
    return {"wide": lambda: transpose_any.kernel_for(_WIDE_TILE, _WIDE_ROWS, 1, True, True),
            "pairs": lambda: transpose_pairs.kernel_for(_WIDE_TILE, _PAIRS_ROWS),
            "flat": lambda: transpose_flat.kernel_for(_WIDE_TILE, _WIDE_ROWS, width),
            "scalar": lambda: transpose_tile.kernel_for(_SCALAR_TILE, _SCALAR_ROWS, 1),
            "few_rows": lambda: transpose_few_rows.transpose_few_rows}[kind]()


def kernel_specs():
    """(name, numba kernel, threads per block) of every kernel library.transpose launches, with both
    staging widths of the flat kernel (any_wide.staging_width picks one per shape): for the
    compiler facts of runs/arch_facts.py."""
    widths = sorted({staging_width(_WIDE_TILE, rows, cols) for rows in range(4) for cols in range(4)})
    kinds = [("wide", None), ("pairs", None)] + [("flat", w) for w in widths] + [("scalar", None), ("few_rows", None)]
    out = []
    for kind, width in kinds:
        kernel = _transpose_kernel(kind, width)
        threads = math.prod(kernel.block if isinstance(kernel.block, tuple) else (kernel.block,))
        out.append((kind if width is None else f"{kind} {width}", kernel, threads))
    return out


def transpose(src, dst=None):
    """dst = src.T on float32 device arrays; returns dst (a new cols x rows device array when
    dst is None).

    Shapes
        src is rows x cols, dst cols x rows, both 2-D.  Any rows, cols >= 0: an empty src is a
        no-op (dst returned as it is, nothing launched).  At most 65535 x 32 rows (one launch's
        grid).
    Dtypes
        float32 only; another dtype is a TypeError.
    Layouts
        numba device arrays, or anything with __cuda_array_interface__ (wrapped without a copy);
        NumPy arrays are refused (NumPy's x.T.copy() does this on the host).  Both arrays must be
        C-contiguous: strides exactly (4 * columns, 4) bytes, so no row-strided slices either.  A
        transposed (F-order) src needs no transpose: src.T is already row-major.
    Alignment
        Full speed (16-byte loads and stores, lesson 09's wide tiles): both arrays starting on a
        16-byte boundary (fresh allocations do) and rows and cols multiples of 4.  Both aligned,
        rows a multiple of 4 and cols even: 8-byte accesses on both sides.  Both aligned, other
        sides: 16-byte accesses on the arrays seen flat.  Otherwise (a view starting
        mid-float4): lesson 09's 4-byte padded-tile kernel.  A src of at most 16 rows, any
        alignment: a kernel whose blocks take every row and write dst as one run.  All are exact.
    Aliasing
        dst must not share memory with src: an in-place transpose would read elements it has
        already overwritten (at 128 x 128, transpose(s, s) left a quarter of them wrong), so
        it is refused with a ValueError.  Checked on every call from the two pointers the
        alignment reads anyway.
    Asynchrony
        The kernel is queued on the CUDA default stream (stream 0) and the call returns once it
        is launched; dst holds the result when the stream has run it (cuda.synchronize(), or
        dst.copy_to_host(), which waits).  Work on other streams must be synchronized by the
        caller.
    Errors
        TypeError: a NumPy array, something that is not a device array, a dtype other than
        float32.  ValueError: not 2-D, dst's shape not cols x rows, an array that is not
        C-contiguous, dst overlapping src, too many rows.  CUDA driver errors pass through.
    """
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
    # row by row, 16-byte accesses need every row of both arrays to start on a 16-byte boundary;
    # seen flat, only the two arrays' starts
    if dst is None:
        dst = allocate.empty(cols, rows)
        aligned = not (_pointer(src) | _pointer(dst)) & 15
    else:  # both C-contiguous: each array is the bytes [p, p + 4 * rows * cols)
        ps, pd = _pointer(src), _pointer(dst)
        if pd < ps + 4 * rows * cols and ps < pd + 4 * rows * cols:
            raise ValueError(overlap_message("dst", "src", "library.transpose"))
        aligned = not (ps | pd) & 15
    if rows <= transpose_few_rows.MAX_ROWS:  # one block per COLS columns, every row
        _transpose_launcher("few_rows")(((cols + transpose_few_rows.COLS - 1) // transpose_few_rows.COLS, 1), src, dst)
        return dst
    if aligned and not (cols & 3 or rows & 3):
        T, launcher = _WIDE_TILE, _transpose_launcher("wide")
    elif aligned and not (rows & 3 or cols & 1):  # cols % 4 == 2
        T, launcher = _WIDE_TILE, _transpose_launcher("pairs")
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
    """The slow path of transpose: foreign device arrays wrapped without a copy, an empty src (a
    no-op), or a clear error."""
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
    if dst is not None and tuple(dst.shape) != (cols, rows):
        raise ValueError(f"dst must be {cols}x{rows} (the transpose of a {rows}x{cols} src), "
                         f"got {dst.shape[0]}x{dst.shape[1]}.")
    if 0 in (rows, cols):  # nothing to move
        return dst if dst is not None else allocate.empty(cols, rows)
    for name, x in named:
        r, c = x.shape
        if tuple(x.strides) == (4 * c, 4):
            continue
        if _is_transposed(x) and name == "src":
            raise ValueError(f"src is a transposed (column-major, F-order) array, strides {tuple(x.strides)} "
                             "bytes: src.T is already its transpose, C-contiguous. Use src.T, or "
                             "dst.copy_to_device(src.T) to fill a dst of your own.")
        if _is_transposed(x):
            raise ValueError(f"dst is a transposed (column-major, F-order) array, strides {tuple(x.strides)} "
                             "bytes: library.transpose writes whole rows of dst. Pass a C-contiguous dst "
                             "(dst = None allocates one).")
        raise ValueError(f"{name} has strides {tuple(x.strides)} (bytes), not those of a C-contiguous "
                         f"{r}x{c} float32 array (a slice?): pass a freshly allocated array "
                         "(cuda.device_array, or cuda.to_device of a contiguous one).")
    if dst is not None and _shares_memory(dst, _pointer(dst), src, _pointer(src)):
        raise ValueError(overlap_message("dst", "src", "library.transpose"))
    if -(-rows // _SCALAR_TILE) > _MAX_GRID_Y:
        raise ValueError(f"src has {rows} rows: at most {_MAX_GRID_Y * _SCALAR_TILE} fit one launch's grid.")
    raise AssertionError("transpose: arguments look valid but were refused (a bug: please report it)")
