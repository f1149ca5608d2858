"""The access log: every thread's shared-memory accesses, global accesses and barriers, in order.

``log(launch, arrays)`` runs ``launch(*wrapped)`` on the CUDA simulator, where ``arrays`` maps
names to host (NumPy) arrays that are handed to the kernel as logging device arrays; it records,
per thread and in program order, each access to those arrays and to the kernel's shared arrays,
and each ``cuda.syncthreads()``.  What the exercises of lessons 05-09 ask of it:

* ``barriers()``: how many barriers each thread passed;
* ``races()``: shared words that one thread writes and another thread reads or writes between
  the same two barriers (a data race: the result depends on which warp runs first);
* ``global_instructions()``: global accesses grouped into warp-wide instructions (as the bank
  tracer groups shared ones), each with the 32-byte sectors it touches (``sectors``): 4 for a
  warp reading 32 consecutive, aligned floats, 32 for 32 floats a row apart;
* ``shared_trace(merge)``: the shared accesses as a bank tracer ``Trace`` (wavefronts, conflicts).

Simulator only, like the other tracers.  Addresses are byte offsets from the array's start, so
sector counts assume arrays that start on a 32-byte boundary (a GPU allocation starts on 256).
"""
import collections
import os
import sys
import threading
from dataclasses import dataclass

import numpy as np

from gemm_lessons.core import backend
from gemm_lessons.instruments import shared_tracer

try:  # frames inside numba's CUDA simulator (its array wrappers) are not the kernel's
    import numba.cuda.simulator as _simulator

    _SIMULATOR_DIR = os.path.dirname(os.path.abspath(_simulator.__file__))
except ImportError:  # pragma: no cover
    _SIMULATOR_DIR = "\0"
SECTOR = 32  # bytes: the unit in which L2 and DRAM serve a global access


@dataclass
class Event:
    block: tuple
    thread: int
    seq: int
    kind: str  # "sync", "shared" or "global"
    op: str = ""  # "ld" or "st"
    array: str = ""
    address: int = 0  # byte offset in the array (shared: in the block's shared memory)
    site: tuple = ()  # (file, line) in the kernel
    epoch: int = 0  # barriers this thread had passed before the access


@dataclass
class GlobalInstruction:
    block: tuple
    warp: int
    op: str
    array: str
    site: tuple
    addresses: list  # byte offset per lane (None: inactive)

    @property
    def lanes(self):
        return sum(a is not None for a in self.addresses)

    @property
    def sectors(self):
        return len({a // SECTOR for a in self.addresses if a is not None})

    @property
    def ideal_sectors(self):
        """Sectors if the lanes' distinct 4-byte words were contiguous and aligned."""
        words = {a // 4 for a in self.addresses if a is not None}
        return -(-len(words) * 4 // SECTOR)


class Log:
    def __init__(self, events, arrays):
        self.events = events
        self.arrays = arrays  # shared array name -> (shape, itemsize, base)

    def _by_thread(self):
        out = collections.defaultdict(list)
        for e in self.events:
            out[(e.block, e.thread)].append(e)
        for lst in out.values():
            lst.sort(key=lambda e: e.seq)
        return out

    def threads(self, block=(0, 0, 0)):
        return {t: evs for (b, t), evs in self._by_thread().items() if b == block}

    def barriers(self, block=(0, 0, 0)):
        """Barriers passed, per thread of ``block`` (thread -> count)."""
        return {t: sum(e.kind == "sync" for e in evs) for t, evs in self.threads(block).items()}

    def races(self, block=(0, 0, 0), limit=5):
        """Up to ``limit`` races in ``block``: (array, word index, epoch, (thread, op, line),
        (other thread, op, line)) where a shared word is written by one thread and touched by
        another with no barrier in between."""
        by_word = collections.defaultdict(list)
        for e in self.events:
            if e.block == block and e.kind == "shared":
                by_word[(e.array, e.address // 4, e.epoch)].append(e)
        found = []
        for (array, word, epoch), evs in by_word.items():
            writers = {e.thread for e in evs if e.op == "st"}
            if not writers or len({e.thread for e in evs}) < 2:
                continue
            w = next(e for e in evs if e.op == "st")
            other = next(e for e in evs if e.thread != w.thread)
            base = self.arrays.get(array, (None, 4, 0))
            found.append((array, (w.address - base[2]) // base[1], epoch, (w.thread, w.op, w.site[1]),
                          (other.thread, other.op, other.site[1])))
            if len(found) >= limit:
                break
        return found

    def global_instructions(self, array=None):
        """Warp-wide global accesses, per block (see GlobalInstruction)."""
        out = []
        blocks = sorted({e.block for e in self.events if e.kind == "global"})
        for block in blocks:
            evs = [(e.block, e.thread, e.seq, e.op, e.array, e.site, e.address) for e in self.events
                   if e.kind == "global" and e.block == block and array in (None, e.array)]
            for ins in shared_tracer._group(evs, merge=()):
                out.append(GlobalInstruction(block, ins.warp, ins.op, ins.array, ins.site, ins.addresses))
        return out

    def shared_trace(self, block=(0, 0, 0), merge=("ld",)):
        """The shared accesses of ``block`` as a bank tracer Trace (wavefronts and conflicts), each
        as wide as its array's elements (then merged as ``merge`` says: see shared_tracer.trace)."""
        evs = [(e.block, e.thread, e.seq, e.op, e.array, e.site, e.address, self.arrays[e.array][1])
               for e in self.events if e.kind == "shared" and e.block == block]
        return shared_tracer.Trace(shared_tracer._group(evs, set(merge or ())), block, dict(self.arrays))


class _Recorder:
    def __init__(self):
        self.events = []
        self.lock = threading.Lock()
        self.seq = collections.defaultdict(int)
        self.epoch = collections.defaultdict(int)

    def record(self, kind, op="", array="", address=0, frame=None):
        t = threading.current_thread()
        block = tuple(t.blockIdx) if hasattr(t, "blockIdx") else (0, 0, 0)
        tid = getattr(t, "thread_id", 0)
        site = (frame.f_code.co_filename, frame.f_lineno) if frame is not None else ()
        with self.lock:
            key = (block, tid)
            self.seq[key] += 1
            self.events.append(Event(block, tid, self.seq[key], kind, op, array, address, site, self.epoch[key]))
            if kind == "sync":
                self.epoch[key] += 1


class _LoggedArray:
    """A shared array (or the data of a global one) that records each element access."""

    def __init__(self, rec, kind, name, array, base=0):
        self._rec, self._kind, self._name, self._a, self._base = rec, kind, name, array, base
        self.shape, self.dtype, self.size, self.ndim = array.shape, array.dtype, array.size, array.ndim

    def _address(self, idx):
        idx = idx if isinstance(idx, tuple) else (idx,)
        idx = tuple(int(i) + (n if int(i) < 0 else 0) for i, n in zip(idx, self._a.shape))
        flat = np.ravel_multi_index(idx, self._a.shape)
        return self._base + int(flat) * self._a.itemsize

    def __getitem__(self, idx):
        if _partial(idx, self._a.ndim):  # A[row] of A[row][k]: a row to index further, not an access
            return self._row(idx)
        self._rec.record(self._kind, "ld", self._name, self._address(idx), sys._getframe(1))
        return self._a[idx]

    def __setitem__(self, idx, value):
        self._rec.record(self._kind, "st", self._name, self._address(idx), sys._getframe(1))
        self._a[idx] = value

    def _row(self, idx):
        """The sub-array ``self[idx]`` (fewer indices than dimensions), logging as part of this one."""
        idx = idx if isinstance(idx, tuple) else (idx,)
        first = self._address(idx + (0,) * (self._a.ndim - len(idx)))
        return _LoggedArray(self._rec, self._kind, self._name, self._a[idx], first)


def _partial(idx, ndim):
    """Whether ``idx`` gives fewer integer indices than the array has dimensions (chained
    indexing, ``sA[k][m]``, which numba compiles like ``sA[k, m]``)."""
    idx = idx if isinstance(idx, tuple) else (idx,)
    return len(idx) < ndim and all(isinstance(i, (int, np.integer)) for i in idx)


def _kernel_frame():
    """The frame of the kernel line that made the access (the simulator wraps device arrays)."""
    f = sys._getframe(2)
    while f is not None and f.f_code.co_filename.startswith(_SIMULATOR_DIR):
        f = f.f_back
    return f


def _global_array(rec, name, host):
    from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray  # simulator mode only

    class LoggedDeviceArray(FakeCUDAArray):
        def __getitem__(self, idx):
            if _partial(idx, self._logged._a.ndim):  # A[row] of A[row][k]
                return self._logged._row(idx)
            rec.record("global", "ld", name, self._logged._address(idx), _kernel_frame())
            return super().__getitem__(idx)

        def __setitem__(self, idx, val):
            rec.record("global", "st", name, self._logged._address(idx), _kernel_frame())
            return super().__setitem__(idx, val)

    arr = LoggedDeviceArray(np.ascontiguousarray(host))
    arr._logged = _LoggedArray(rec, "global", name, arr._ary)
    return arr


def log(launch, arrays):
    """Run ``launch(**logged)`` where ``logged`` holds a logging device array for each host
    array in ``arrays`` (name -> ndarray), and return (Log, {name: result as a host array})."""
    if not backend.SIMULATOR:
        raise RuntimeError("the access log runs kernels on the CUDA simulator: start Python with "
                           "GEMM_LESSONS_SIMULATOR=1.")
    from numba.cuda.simulator import kernel as sim_kernel  # simulator mode only
    from numba.cuda.simulator import kernelapi

    rec = _Recorder()
    arrays_info, allocations, next_base = {}, {}, [0]
    lock = threading.Lock()
    original_array = kernelapi.FakeCUDAShared.array
    original_sync = sim_kernel.BlockThread.syncthreads

    def logged_shared(self, shape, dtype, alignment=None):
        frame = sys._getframe(1)
        key = (id(self), frame.f_code.co_filename, frame.f_lineno)
        with lock:
            if key not in allocations:
                from numba.np import numpy_support

                dt = dtype if isinstance(dtype, (np.dtype, type)) else numpy_support.as_dtype(dtype)
                arr = np.zeros(shape, dt)
                name = shared_tracer._variable_name(frame, default=f"a{len(arrays_info)}", taken=arrays_info)
                base = next_base[0]
                next_base[0] += -(-arr.nbytes // 128) * 128
                arrays_info.setdefault(name, (arr.shape, arr.itemsize, base))
                allocations[key] = _LoggedArray(rec, "shared", name, arr, base)
            return allocations[key]

    def logged_sync(self):
        rec.record("sync")
        return original_sync(self)

    wrapped = {name: _global_array(rec, name, host) for name, host in arrays.items()}
    kernelapi.FakeCUDAShared.array = logged_shared
    sim_kernel.BlockThread.syncthreads = logged_sync
    try:
        launch(**wrapped)
    finally:
        kernelapi.FakeCUDAShared.array = original_array
        sim_kernel.BlockThread.syncthreads = original_sync
    return Log(rec.events, arrays_info), {name: w._ary.copy() for name, w in wrapped.items()}
