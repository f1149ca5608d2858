"""A fix to numba's CUDA simulator that the lessons' kernels need (imported only on the simulator).

numba-cuda's simulator gives the threads of a block one shared array per source line: the first
thread to reach ``cuda.shared.array(...)`` creates it, the others find it in a dict. The lookup
and the creation are not under a lock, so two threads that reach the line together can both miss,
create an array each, and stage their halves of a tile into different arrays: the kernel then
reads uninitialised memory, now and then (seen as a 1e36 error in a correct kernel's check).
Here the same lookup runs under a lock. (The bank tracer replaces this method while it traces,
with a locked version of its own.)
"""
import sys
import threading

import numpy as np
from numba.cuda.simulator import kernelapi
from numba.np import numpy_support

_LOCK = threading.Lock()
_unlocked = kernelapi.FakeCUDAShared.array


def _shared_array(self, shape, dtype, alignment=None):
    if alignment is not None or shape == 0:  # errors and dynamic shared memory: as numba does them
        return _unlocked(self, shape, dtype, alignment)
    if not isinstance(dtype, (np.dtype, type)):
        dtype = numpy_support.as_dtype(dtype)
    frame = sys._getframe(1)
    caller = (frame.f_code.co_filename, frame.f_lineno)  # the kernel's line, as numba keys it
    with _LOCK:
        arr = self._allocations.get(caller)
        if arr is None:
            arr = self._allocations[caller] = np.empty(shape, dtype)
    return arr


kernelapi.FakeCUDAShared.array = _shared_array
