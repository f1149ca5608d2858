"""The arrays the library allocates (gemm_lessons.library.allocate): from the driver's stream-ordered
pool on a GPU, numba's allocator on the simulator; either way an ordinary C-contiguous float32
device array, and memory that goes back when the array does."""
import gc

import numpy as np
from numba import cuda

from conftest import requires_gpu, requires_simulator
from gemm_lessons.library import allocate, device_arrays, device_transpose


def test_an_allocated_array_is_an_ordinary_c_contiguous_float32_device_array():
    x = allocate.empty(5, 7)
    assert x.shape == (5, 7) and x.strides == (28, 4) and x.dtype == np.float32
    values = np.arange(35, dtype=np.float32).reshape(5, 7)
    x.copy_to_device(values)
    assert np.array_equal(x.copy_to_host(), values)
    y = allocate.empty(5, 7)  # a second one of the same shape: its own memory
    y.copy_to_device(-values)
    assert np.array_equal(x.copy_to_host(), values) and np.array_equal(y.copy_to_host(), -values)
    assert allocate.empty(0, 3).shape == (0, 3)


def test_allocating_calls_give_right_results():
    rng = np.random.default_rng(2)
    a, b = rng.random((37, 19), dtype=np.float32), rng.random((19, 41), dtype=np.float32)
    C = device_arrays.sgemm(cuda.to_device(a), cuda.to_device(b))
    assert np.allclose(C.copy_to_host(), a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5)
    T = device_transpose.transpose(cuda.to_device(a))
    assert np.array_equal(T.copy_to_host(), a.T)


@requires_simulator
def test_the_simulator_uses_numbas_allocator():
    assert allocate._driver() is None


@requires_gpu
def test_on_a_gpu_the_pool_serves_and_takes_memory_back():
    assert allocate._driver() is not None, "the driver's pool did not set up"
    x = allocate.empty(64, 64)
    assert x.device_ctypes_pointer.value % 256 == 0 and type(x) is type(cuda.device_array((1, 1), np.float32))
    del x
    cuda.synchronize()
    used = _pool_bytes("USED_MEM_CURRENT")  # this process's pool: other processes on the GPU do not count
    for _ in range(500):  # 8 GiB in all, one 16 MiB array at a time
        allocate.empty(2048, 2048)
    gc.collect()
    cuda.synchronize()
    assert _pool_bytes("USED_MEM_CURRENT") <= used  # every array went back (gc may free older ones too)
    # and the pool kept at most POOL_KEEP of freed memory beyond what is still in use
    assert _pool_bytes("RESERVED_MEM_CURRENT") <= max(allocate.POOL_KEEP, used) + 16 * 2**20


def _pool_bytes(name):
    """An attribute of the pool allocate serves from (CU_MEMPOOL_ATTR_<name>), in bytes."""
    cu = allocate._driver()
    attribute = getattr(cu.CUmemPool_attribute, f"CU_MEMPOOL_ATTR_{name}")
    err, value = cu.cuMemPoolGetAttribute(allocate._STATE["pool"], attribute)
    assert err == cu.CUresult.CUDA_SUCCESS, err
    return int(value)
