"""gemm_lessons.core.simulator_patch: the threads of a block get one shared array per kernel line, even when
they reach it together (numba-cuda's simulator looks the array up without a lock)."""
import threading
import time

import numpy as np
import pytest

from conftest import requires_simulator


def _both_threads_allocate(array_method, monkeypatch):
    """Call ``array_method`` from two threads at once, with np.empty slowed down so that both
    are inside the lookup together; return the two arrays they got."""
    from numba.cuda.simulator import kernelapi

    shared = kernelapi.FakeCUDAShared(0)
    real_empty = np.empty

    def slow_empty(*args, **kwargs):
        time.sleep(0.05)
        return real_empty(*args, **kwargs)

    monkeypatch.setattr(np, "empty", slow_empty)
    got, start = [None, None], threading.Barrier(2)

    def thread(i):
        start.wait()
        got[i] = array_method(shared, (4, 4), np.float32)  # one kernel line, two threads

    workers = [threading.Thread(target=thread, args=(i,)) for i in range(2)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return got


@requires_simulator
def test_numbas_lookup_races_and_ours_does_not(monkeypatch):
    from gemm_lessons.core import simulator_patch
    from numba.cuda.simulator import kernelapi

    assert kernelapi.FakeCUDAShared.array is simulator_patch._shared_array  # installed on import
    a, b = _both_threads_allocate(simulator_patch._unlocked, monkeypatch)
    assert a is not b  # the race this module fixes: two arrays for one line
    a, b = _both_threads_allocate(simulator_patch._shared_array, monkeypatch)
    assert a is b


@requires_simulator
def test_two_lines_still_get_two_arrays_and_dynamic_shared_memory_is_numbas():
    from numba.cuda.simulator import kernelapi

    shared = kernelapi.FakeCUDAShared(16)
    a = shared.array((2, 2), np.float32)
    b = shared.array((2, 2), np.float32)
    assert a is not b and a.shape == (2, 2) and a.dtype == np.float32
    assert shared.array(0, np.dtype(np.float32)).shape == (4,)  # 16 bytes of dynamic shared memory
    with pytest.raises(RuntimeError, match="alignment"):
        shared.array((2,), np.float32, alignment=16)
