"""gemm_lessons: helpers for the SGEMM lesson series (numba.cuda kernels vs cuBLAS).

Import this package before numba.cuda: it decides whether the kernels run on a GPU or on
numba's CUDA simulator (no GPU found, or GEMM_LESSONS_SIMULATOR=1).
"""
from gemm_lessons.core import backend  # noqa: F401  (must run before anything imports numba.cuda)

import warnings as _warnings

# The correctness checks launch tiny grids on purpose; numba's "low occupancy" warning about
# them is noise for a student.  Timings are taken at sizes that fill the GPU.
_warnings.filterwarnings("ignore", message=r".*Grid size .* will likely result in GPU under-utilization")
from gemm_lessons.core.backend import SIMULATOR

if SIMULATOR:
    from gemm_lessons.core import simulator_patch  # noqa: F401  (one shared array per kernel line, under a lock)
from gemm_lessons.library.api import sgemm
from gemm_lessons.measure.device import DeviceInfo, banner, device_info
from gemm_lessons.measure.problems import SgemmProblem, check, check_all
from gemm_lessons.measure.timing import NOT_MEASURED, Timing, time_gpu

__version__ = "0.2.0"

__all__ = ["sgemm", "SIMULATOR", "DeviceInfo", "banner", "device_info", "SgemmProblem", "check",
           "check_all", "NOT_MEASURED", "Timing", "time_gpu", "profile"]


def __getattr__(name):
    # gl.profile (the profiler inside the lessons) is imported on first use, not with the
    # package: `python -m gemm_lessons.instruments.profiler` must find it not yet imported
    if name == "profile":
        from gemm_lessons.instruments.profiler import profile

        return profile
    raise AttributeError(f"module 'gemm_lessons' has no attribute {name!r}")
