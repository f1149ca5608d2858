"""Where device arrays lie in memory: a data pointer without a Python-level detour, and whether
an output shares an element with an input (aliasing: refused with an error that says what to do)."""
from gemm_lessons.core import backend

if backend.SIMULATOR:
    from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray as _DeviceArray

    def _pointer(x):
        return x._ary.ctypes.data  # the host memory standing in for device memory
else:
    from numba.cuda.cudadrv.devicearray import DeviceNDArray as _DeviceArray

    def _pointer(x):
        return x.device_ctypes_pointer.value or 0


def overlap_message(out, inp, op="gl.sgemm"):
    """The error for an output ``out`` sharing memory with an input ``inp`` (names as the caller's)."""
    return (f"{out} overlaps {inp} (the same array, or views whose elements share memory): {op} writes "
            f"{out} while it reads {inp}, so the kernel would read values it has already overwritten; pass "
            f"a separate output array ({out} = None allocates one).")


def _rows_meet(px, sx, wx, rx, py, sy, wy, ry):
    """Whether two arrays made of rows of bytes [p + i*s, p + i*s + w), i < r (s > 0 where r > 1),
    share a byte: integer arithmetic, exact."""
    if not (rx and ry and wx and wy):
        return False
    if px >= py + (ry - 1) * sy + wy or py >= px + (rx - 1) * sx + wx:
        return False  # byte ranges apart
    if rx == 1 and ry == 1:
        return True
    sx, sy = (sy if rx == 1 else sx), (sx if ry == 1 else sy)  # a single row's stride is no constraint
    d = py - px
    if sx == sy:  # row i of x meets row j of y iff (i - j) * s lies in (d - wx, d + wy)
        lo = max((d - wx) // sx + 1, 1 - ry)
        hi = min(-(-(d + wy) // sx) - 1, rx - 1)
        return lo <= hi
    if rx > ry:
        px, sx, wx, rx, py, sy, wy, ry = py, sy, wy, ry, px, sx, wx, rx
    for i in range(rx):  # the array with fewer rows, row by row: the rows j of y that this one meets
        a = px + i * sx
        if max((a - wy - py) // sy + 1, 0) <= min(-(-(a + wx - py) // sy) - 1, ry - 1):
            return True
    return False


def _rows_of(x, p):
    """(start, row stride, row width, rows) in bytes of a 2-D float32 array at ``p`` whose rows are
    contiguous, or None where they are not (or a stride is not positive)."""
    r, c = x.shape
    s0, s1 = x.strides
    if r > 1 and s0 <= 0 or c > 1 and s1 != 4:
        return None
    return p, s0, 4 * c, r


def _shares_memory(x, px, y, py):
    """Whether device arrays x and y (2-D float32 at px, py) have an element in common: exact where
    both have contiguous rows, else whether their byte ranges meet (a conservative answer)."""
    rx, ry = _rows_of(x, px), _rows_of(y, py)
    if rx is not None and ry is not None:
        return _rows_meet(*rx, *ry)
    (lx, hx), (ly, hy) = _byte_range(x, px), _byte_range(y, py)
    return lx < hy and ly < hx


def _byte_range(x, p):
    """[low, high) of the bytes a 2-D float32 array at ``p`` may touch, whatever its strides."""
    if 0 in tuple(x.shape):
        return p, p
    low = high = p
    for n, s in zip(x.shape, x.strides):
        low, high = low + min(0, (n - 1) * s), high + max(0, (n - 1) * s)
    return low, high + 4


def _refuse_overlap(A, B, C, pa, pb, pc):
    """The ValueError if C shares an element with A or B (their data at pa, pb, pc)."""
    for name, x, p in (("A", A, pa), ("B", B, pb)):
        if _shares_memory(C, pc, x, p):
            raise ValueError(overlap_message("C", name))


def _data_pointer(x):
    """The data pointer of a device array: numba's (or the simulator's), or from
    __cuda_array_interface__ for another library's."""
    if type(x) is _DeviceArray:
        return _pointer(x)
    return x.__cuda_array_interface__["data"][0] or 0


def refuse_overlap(A, B, C):
    """ValueError if the device array C shares memory with A or B (None: nothing to check).  For
    callers outside the library's own call (gemm_lessons.sgemm with ``rung=``): any layout;
    arrays that are not 2-D are left to the caller's own checks."""
    if C is not None and all(len(x.shape) == 2 for x in (A, B, C)):
        _refuse_overlap(A, B, C, _data_pointer(A), _data_pointer(B), _data_pointer(C))
