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
function's cuda.core handle, the default stream and one LaunchConfig per grid, and passes each
numba device array the way numba itself flattens it (meminfo, parent, size, itemsize, data
pointer, shape, strides: ``numba.cuda.dispatcher._Kernel._prepare_args``).

Those are numba-cuda internals (0.30).  If anything is not where this expects it, or on the
simulator, or with GEMM_LESSONS_PLAIN_LAUNCH=1 set, a Launcher launches the ordinary way,
``kernel[grid, block](*args)``, and ``Launcher.fast`` is False; ``why_plain`` says why.
"""
import ctypes
import os

import numpy as np
from numba import cuda

from . import _backend

PLAIN_ENV = "GEMM_LESSONS_PLAIN_LAUNCH"
_SCALARS = {"float32": np.float32, "int64": np.int64}


def _marshal_array(x):
    # numba's flattened array argument (see the module doc); meminfo and parent are null
    return (0, 0, x.size, x.dtype.itemsize, x.device_ctypes_pointer.value, *x.shape, *x.strides)


def _marshaller(numba_type):
    from numba.cuda import types

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
    default stream."""

    def __init__(self, kernel, argtypes, block):
        self.kernel, self.argtypes, self.block = kernel, tuple(argtypes), block
        self.fast, self.why_plain = False, None
        if _backend.SIMULATOR:
            self.why_plain = "the CUDA simulator"
        elif os.environ.get(PLAIN_ENV) == "1":
            self.why_plain = f"{PLAIN_ENV}=1"
        else:
            try:
                self._prepare()
                self.fast = True
            except Exception as e:  # numba-cuda internals not as expected: launch the plain way
                self.why_plain = f"numba-cuda internals differ: {e!r}"
        if not self.fast and not _backend.SIMULATOR:
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
        flat = []
        for marshal, value in zip(self._marshal, args):
            flat.extend(marshal(value))
        self._launch(self._stream, self.config(grid), self._handle, *flat)

    def blocks_per_sm(self):
        """Resident blocks per SM of the compiled kernel (the driver's occupancy calculator);
        None on the simulator."""
        if _backend.SIMULATOR:
            return None
        compiled = self.kernel.compile(self.argtypes)
        sms = cuda.get_current_device().MULTIPROCESSOR_COUNT
        return compiled.max_cooperative_grid_blocks(self.block) // sms

    def resources(self):
        """Registers and local memory per thread, shared memory per block (None on the simulator)."""
        if _backend.SIMULATOR:
            return None
        k = self.kernel.compile(self.argtypes)
        return {"registers": k.regs_per_thread, "local_bytes": k.local_mem_per_thread,
                "shared_bytes": k.shared_mem_per_block}

    def __repr__(self):
        how = "fast" if self.fast else f"plain ({self.why_plain})"
        return f"<Launcher {getattr(self.kernel, '__name__', self.kernel)} {how}>"
