"""The arrays the library allocates for its caller (gl.sgemm's C, library.transpose's dst), from
the CUDA driver's stream-ordered pool (cuMemAllocAsync / cuMemFreeAsync on the default stream).

Why not numba's ``cuda.device_array``: numba frees device memory with ``cuMemFree``, which waits
for the whole GPU, batched in its deferred-deallocation queue.  A loop of allocating calls then
waits for the GPU every few calls, and the call costs as much as the product it queues
(experiments/alloc_pool: 56-185 us per ``gl.sgemm(A, B)`` on an H200, 20-25 us from the pool).  The driver's pool
frees in stream order, without waiting, and hands freed memory back to the next allocation on the
same stream; the pool is the driver's own (maintained by NVIDIA, nothing written here), and this
module only keeps up to ``POOL_KEEP`` bytes of freed memory in it between synchronizations.

The array is an ordinary numba DeviceNDArray (C-contiguous, 256-byte aligned) whose memory goes
back to the pool when the last reference to it goes.  On the simulator, and where the pool cannot
serve (no cuda-bindings, a driver without pools, memory exhausted), ``cuda.device_array`` is used.
"""
import numpy as np
from numba import cuda

from gemm_lessons.core import backend

from gemm_lessons.library.memory import _DeviceArray as DeviceNDArray  # numba's DeviceNDArray on a GPU

if not backend.SIMULATOR:
    from numba.cuda.cudadrv.driver import MemoryPointer

POOL_KEEP = 2 * 2**30  # bytes of freed memory the driver's pool keeps between synchronizations
_F32 = np.dtype(np.float32)
_STATE = {}  # "driver": the cuda.bindings driver module, or None when the pool is not used; "pool": the pool
_TEMPLATES = {}  # (rows, cols) -> a DeviceNDArray without memory, whose description new arrays copy


def _driver():
    """The cuda.bindings driver module with the device's pool set up, or None (then numba allocates)."""
    if "driver" in _STATE:
        return _STATE["driver"]
    _STATE["driver"] = None
    if backend.SIMULATOR:
        return None
    try:
        from cuda.bindings import driver as cu

        context = cuda.current_context()  # numba's context, current on this thread as the pool's calls need
        err, device = cu.cuCtxGetDevice()
        if err != cu.CUresult.CUDA_SUCCESS:
            return None
        err, pool = cu.cuDeviceGetDefaultMemPool(device)
        if err != cu.CUresult.CUDA_SUCCESS:
            return None
        keep = cu.cuuint64_t(POOL_KEEP)
        err, = cu.cuMemPoolSetAttribute(pool, cu.CUmemPool_attribute.CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, keep)
        if err != cu.CUresult.CUDA_SUCCESS:
            return None
    except Exception:  # noqa: BLE001 (no bindings, no pools: numba's allocator serves)
        return None
    _STATE.update(driver=cu, stream=cu.CUstream(0), context=context, pool=pool)  # stream 0: the default stream
    return cu


def _free_async(cu, stream, pointer):
    def free():
        try:
            cu.cuMemFreeAsync(pointer, stream)
        except Exception:  # noqa: BLE001 (at interpreter exit the context may be gone already)
            pass
    return free


def _array(rows, cols, memory):
    """A rows x cols C-contiguous float32 DeviceNDArray over ``memory``.  numba's constructor redoes
    the shape arithmetic on every call (about as long as the rest of a gl.sgemm call); a copy of a
    template's description does not."""
    template = _TEMPLATES.get((rows, cols))
    if template is None:
        if len(_TEMPLATES) > 4096:
            _TEMPLATES.clear()
        template = _TEMPLATES[(rows, cols)] = DeviceNDArray((rows, cols), (4 * cols, 4), _F32, gpu_data=memory)
        template.gpu_data = None  # the template owns no memory
    array = object.__new__(DeviceNDArray)
    array.__dict__.update(template.__dict__)
    array.gpu_data = memory
    return array


def empty(rows, cols):
    """A new rows x cols float32 device array, C-contiguous, contents undefined."""
    cu = _driver() if rows * cols else None
    if cu is not None:
        nbytes = 4 * rows * cols
        stream = _STATE["stream"]
        err, pointer = cu.cuMemAllocAsync(nbytes, stream)
        if err == cu.CUresult.CUDA_SUCCESS:
            memory = MemoryPointer(_STATE["context"], pointer, nbytes, finalizer=_free_async(cu, stream, pointer))
            return _array(rows, cols, memory)
    return cuda.device_array((rows, cols), np.float32)  # the simulator, or the pool could not serve
