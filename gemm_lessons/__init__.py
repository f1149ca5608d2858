"""gemm_lessons: helpers for the SGEMM lesson series (numba.cuda kernels vs cuBLAS).

Import this package before numba.cuda: it decides whether the kernels run on a GPU or on
numba's CUDA simulator (no GPU found, or GEMM_LESSONS_SIMULATOR=1).
"""
from . import _backend  # noqa: F401  (must run before anything imports numba.cuda)

import warnings as _warnings

# The correctness checks launch tiny grids on purpose; numba's "low occupancy" warning about
# them is noise for a student.  Timings are taken at sizes that fill the GPU.
_warnings.filterwarnings("ignore", message=r".*Grid size .* will likely result in GPU under-utilization")
from ._backend import SIMULATOR

if SIMULATOR:
    from . import _simulator  # noqa: F401  (one shared array per kernel line, under a lock)
from .convenience import sgemm
from .device import DeviceInfo, banner, device_info
from .problems import SgemmProblem, check, check_all
from .timing import NOT_MEASURED, Timing, time_gpu

__version__ = "0.1.0"

__all__ = ["sgemm", "SIMULATOR", "DeviceInfo", "banner", "device_info", "SgemmProblem", "check",
           "check_all", "NOT_MEASURED", "Timing", "time_gpu", "profile"]


def __getattr__(name):
    # gl.profile (the profiler inside the lessons) is imported on first use, not with the
    # package: `python -m gemm_lessons.profiler` must find it not yet imported
    if name == "profile":
        from .profiler import profile

        return profile
    raise AttributeError(f"module 'gemm_lessons' has no attribute {name!r}")
