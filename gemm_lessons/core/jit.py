"""cuda.jit with GPU-only options (max_registers, ...) that the simulator quietly drops."""
from numba import cuda

from gemm_lessons.core import backend

_SIMULATOR_OPTIONS = {"device", "debug", "opt", "cache", "link", "lineinfo"}


def jit(**options):
    """``@jit(max_registers=128)`` caps registers per thread on a GPU (nvcc's --maxrregcount,
    like __launch_bounds__); options set to None are left out."""
    options = {k: v for k, v in options.items() if v is not None}
    if not backend.SIMULATOR:
        return cuda.jit(**options)

    def decorate(fn):
        kernel = cuda.jit(**{k: v for k, v in options.items() if k in _SIMULATOR_OPTIONS})(fn)
        kernel.targetoptions = dict(options)  # what a GPU compiles it with (read by arch_facts)
        return kernel

    return decorate
