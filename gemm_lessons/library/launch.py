"""Launching a compiled kernel with little Python per call: what a library does that a lesson need not.

``kernel[grid, block](A, B, C, alpha, beta)`` does, on every call: builds a launch
configuration (and checks it for a grid under 128 blocks, issuing a warning that a filter then
has to match), works out the numba type of every argument, looks up the compiled version for
those types, converts each argument through ``wrap_arg``, and builds cuda.core's LaunchConfig.
numba-cuda's own benchmarks put that at 6-14 us per launch; with the checks of the lessons'
launchers in front, gl.sgemm cost 90-130 us per call on an H100 (issue 14).

A library calls a few kernels with the same argument types over and over, so all of that but
the last step can be done once.  ``Launcher`` compiles its kernel for an explicit signature
(eagerly: the first call pays for compiling, no later call types anything), keeps the compiled
function's handle and the default stream, and passes each numba device array the way numba
itself flattens it (meminfo, parent, size, itemsize, data pointer, shape, strides:
``numba.cuda.dispatcher._Kernel._prepare_args``).  Two ways to launch, ``via``:
  * "driver" (the default): each argument has its slots in a parameter buffer made once, whose
    array of parameter addresses is made once too, and the driver's cuLaunchKernel
    (cuda-bindings) is called with that array's address.  An argument is flattened and packed
    into its slots only when it is not the one packed there last time (the same array object,
    held by a weak reference, or an equal scalar): flattening an array costs more than a
    microsecond of Python (experiments/launch/), and a library passes the same arrays and
    scalars call after call.
  * "cuda.core": cuda.core's ``launch`` with one LaunchConfig per grid; it converts every
    argument on every call.

Those are numba-cuda internals (0.30).  If anything is not where this expects it, or on the
simulator, or with GEMM_LESSONS_PLAIN_LAUNCH=1 set, a Launcher launches the ordinary way,
``kernel[grid, block](*args)``, and ``Launcher.fast`` is False; ``why_plain`` says why.
"""
import ctypes
import os
import struct
import threading
import weakref

import numpy as np
from numba import cuda

from gemm_lessons.core import backend

PLAIN_ENV = "GEMM_LESSONS_PLAIN_LAUNCH"
_SCALARS = {"float32": np.float32, "int64": np.int64}


def _marshal_array(x):
    # numba's flattened array argument (see the module doc); meminfo and parent are null
    return (0, 0, x.size, x.dtype.itemsize, x.device_ctypes_pointer.value, *x.shape, *x.strides)


# each flattened value in an 8-byte slot of the parameter buffer (a float32 uses the first 4 bytes)
_ARRAY_SLOTS = "qqqqQqqqq"  # meminfo, parent, size, itemsize, data pointer (unsigned), shape x2, strides x2
_SLOTS = {"float32": "f4x", "int64": "q"}


def _slots(numba_type):
    from gemm_lessons.core.numba_compat import types

    if isinstance(numba_type, types.Array):
        if numba_type.ndim != 2:
            raise NotImplementedError("Launcher passes 2-D arrays only")
        return _ARRAY_SLOTS
    return _SLOTS[str(numba_type)]


def _marshaller(numba_type):
    """The flattened values of one argument for cuda.core's launch: scalars as ctypes values
    (cuda.core would otherwise pass a Python float as a double)."""
    from gemm_lessons.core.numba_compat import types

    if isinstance(numba_type, types.Array):
        return _marshal_array
    if numba_type == types.float32:
        return lambda v: (ctypes.c_float(v),)
    if numba_type == types.int64:
        return lambda v: (ctypes.c_int64(v),)
    raise NotImplementedError(f"Launcher cannot pass a {numba_type}")


class Launcher:
    """``Launcher(kernel, argtypes, block)(grid, *args)``: launch ``kernel`` (a numba CUDA
    dispatcher) compiled for ``argtypes`` (numba types) with ``block`` threads per block on the
    default stream.  ``via``: "driver" or "cuda.core" (see the module doc)."""

    def __init__(self, kernel, argtypes, block, via="driver"):
        if via not in ("driver", "cuda.core"):
            raise ValueError(f'via must be "driver" or "cuda.core", got {via!r}')
        self.kernel, self.argtypes, self.block, self.via = kernel, tuple(argtypes), block, via
        self.fast, self.why_plain, self.why_not_driver = False, None, None
        if backend.SIMULATOR:
            self.why_plain = "the CUDA simulator"
        elif os.environ.get(PLAIN_ENV) == "1":
            self.why_plain = f"{PLAIN_ENV}=1"
        else:
            try:
                self._prepare()
                self.fast = True
            except Exception as e:  # numba-cuda internals not as expected: launch the plain way
                self.why_plain = f"numba-cuda internals differ: {e!r}"
        if not self.fast and not backend.SIMULATOR:
            kernel.compile(self.argtypes)  # still compile eagerly: the first call is not special

    def _prepare(self):
        from cuda.core import LaunchConfig, launch
        from numba.cuda.cudadrv import driver

        compiled = self.kernel.compile(self.argtypes)
        self._handle = compiled._codelibrary.get_cufunc().kernel
        self._launch, self._LaunchConfig = launch, LaunchConfig
        self._stream = driver._to_core_stream(0)
        self._marshal = [_marshaller(t) for t in self.argtypes]
        self._configs = {}
        if self.via == "driver":
            try:
                self._prepare_driver()
            except Exception as e:  # cuda-bindings not as expected: cuda.core's launch still works
                self.via, self.why_not_driver = "cuda.core", repr(e)

    def _prepare_driver(self):
        from cuda.bindings import driver as cu

        self._writers, offset = [], 0  # (pack_into of the argument's slots, its offset, is it an array)
        for t in self.argtypes:
            fmt = "<" + _slots(t)
            self._writers.append((struct.Struct(fmt).pack_into, offset, fmt.endswith(_ARRAY_SLOTS)))
            offset += struct.calcsize(fmt)
        n = offset // 8
        self._params = ctypes.create_string_buffer(8 * n)  # the values
        base = ctypes.addressof(self._params)
        self._addresses = (ctypes.c_void_p * n)(*(base + 8 * i for i in range(n)))  # made once
        self._params_address = ctypes.addressof(self._addresses)
        self._packed = [None] * len(self.argtypes)  # what each argument's slots hold now
        # a CUkernel (cuda.core's handle), which cuLaunchKernel takes in place of a CUfunction
        self._function = cu.CUfunction(int(self._handle.handle))
        self._stream_handle = cu.CUstream(int(self._stream.handle))
        block = self.block if isinstance(self.block, tuple) else (self.block,)
        self._block3 = tuple(block) + (1,) * (3 - len(block))
        self._cuLaunchKernel, self._SUCCESS = cu.cuLaunchKernel, cu.CUresult.CUDA_SUCCESS
        self._lock = threading.Lock()  # one buffer per Launcher: two threads must not interleave

    def _pack_changed(self, args):
        """Write into the parameter buffer the arguments that differ from what it holds."""
        params, packed = self._params, self._packed
        for i, (pack, offset, is_array) in enumerate(self._writers):
            value, held = args[i], packed[i]
            if is_array:
                if held is not None and held() is value:
                    continue
                pack(params, offset, *_marshal_array(value))
                try:
                    packed[i] = weakref.ref(value)
                except TypeError:  # an object without weak references: packed on every call
                    packed[i] = None
            else:
                if held is not None and held[0] == value:
                    continue
                pack(params, offset, value)
                packed[i] = (value,)

    def config(self, grid):
        """cuda.core's LaunchConfig for ``grid`` (made once per grid)."""
        c = self._configs.get(grid)
        if c is None:
            if len(self._configs) > 4096:  # many shapes seen: start again rather than grow forever
                self._configs.clear()
            c = self._configs[grid] = self._LaunchConfig(grid=grid, block=self.block)
        return c

    def __call__(self, grid, *args):
        if not self.fast:  # scalars as the signature's types, so numba picks the same compiled version
            args = [_SCALARS[str(t)](v) if str(t) in _SCALARS else v for t, v in zip(self.argtypes, args)]
            self.kernel[grid, self.block](*args)
            return
        if self.via == "cuda.core":
            flat = []
            for marshal, value in zip(self._marshal, args):
                flat.extend(marshal(value))
            self._launch(self._stream, self.config(grid), self._handle, *flat)
            return
        g = grid if isinstance(grid, tuple) else (grid,)
        gx, gy, gz = tuple(g) + (1,) * (3 - len(g))
        bx, by, bz = self._block3
        with self._lock:  # the driver copies the parameters at the launch: the buffer is free after it
            self._pack_changed(args)
            err, = self._cuLaunchKernel(self._function, gx, gy, gz, bx, by, bz, 0, self._stream_handle,
                                        self._params_address, 0)
        if err != self._SUCCESS:
            raise RuntimeError(f"cuLaunchKernel failed for {self!r} with grid {grid}: {err!r}")

    def blocks_per_sm(self):
        """Resident blocks per SM of the compiled kernel (the driver's occupancy calculator);
        None on the simulator."""
        if backend.SIMULATOR:
            return None
        compiled = self.kernel.compile(self.argtypes)
        sms = cuda.get_current_device().MULTIPROCESSOR_COUNT
        return compiled.max_cooperative_grid_blocks(self.block) // sms

    def resources(self):
        """Registers and local memory per thread, shared memory per block (None on the simulator)."""
        if backend.SIMULATOR:
            return None
        k = self.kernel.compile(self.argtypes)
        return {"registers": k.regs_per_thread, "local_bytes": k.local_mem_per_thread,
                "shared_bytes": k.shared_mem_per_block}

    def __repr__(self):
        how = f"fast, via {self.via}" if self.fast else f"plain ({self.why_plain})"
        return f"<Launcher {getattr(self.kernel, '__name__', self.kernel)} {how}>"
