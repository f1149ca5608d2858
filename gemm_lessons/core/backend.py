"""Decide, before numba.cuda is imported, whether kernels run on a GPU or on numba's simulator.

numba reads NUMBA_ENABLE_CUDASIM when numba.cuda is first imported, so the decision has to
be made here, first thing when ``gemm_lessons`` is imported.  We ask the CUDA driver
directly (through ctypes) instead of importing numba.cuda, which would lock the choice in.
"""
import ctypes
import importlib.util
import os
import sys
import warnings


def _driver_sees_a_gpu():
    names = ["nvcuda.dll"] if sys.platform == "win32" else ["libcuda.so.1", "libcuda.so"]
    for name in names:
        try:
            lib = ctypes.CDLL(name)
        except OSError:
            continue
        try:
            if lib.cuInit(0) != 0:
                return False
            count = ctypes.c_int(0)
            if lib.cuDeviceGetCount(ctypes.byref(count)) != 0:
                return False
            return count.value > 0
        except AttributeError:
            return False
    return False


def _choose():
    if os.environ.get("GEMM_LESSONS_SIMULATOR", "") == "1":
        return True, "GEMM_LESSONS_SIMULATOR=1 is set"
    if os.environ.get("GEMM_LESSONS_SIMULATOR", "") == "0":
        # for compiling kernels to PTX/SASS on a machine without a GPU (tools/offline_sass.py)
        return False, "GEMM_LESSONS_SIMULATOR=0 is set"
    if os.environ.get("NUMBA_ENABLE_CUDASIM", "") == "1":
        return True, "NUMBA_ENABLE_CUDASIM=1 is set"
    if _driver_sees_a_gpu():
        return False, "a CUDA GPU was found"
    return True, "no CUDA GPU or driver was found"


SIMULATOR, REASON = _choose()

# Set by tools/refresh_outputs.py --into while it runs a notebook on the simulator to fill a few
# cells of a notebook executed on a GPU: those cells then say where their numbers came from.
FILLED_ENV = "GEMM_LESSONS_FILLED_FROM_RECORD"


def filled_from_record():
    """Whether this process fills cells from the records into a notebook executed on a GPU."""
    return bool(os.environ.get(FILLED_ENV))


def not_measured_why():
    """Why a table shows recorded numbers instead of measuring: the simulator has no GPU, or (with
    FILLED_ENV set) the cell was filled from the records into a notebook executed on a GPU."""
    if filled_from_record():
        return "filled in from the record: not measured in this notebook's GPU run"
    return "not measured here: CUDA simulator"


def cuda_imported_without_simulator():
    """Whether numba.cuda was imported (before this package chose) without the simulator: then
    the choice below cannot take effect, and on a machine without a GPU numba looks for one."""
    if "numba.cuda" not in sys.modules:
        return False
    try:
        from numba.cuda.core import config
    except ImportError:  # numba-cuda 0.20 (macOS): its config lives in numba.core
        from numba.core import config
    return not getattr(config, "ENABLE_CUDASIM", True)


if SIMULATOR:
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
    if importlib.util.find_spec("cuda") is None:
        # no NVIDIA CUDA bindings (macOS, where numba-cuda 0.20 is the newest: it refuses to import
        # without them unless told to use its ctypes ones, which the simulator never calls)
        os.environ.setdefault("NUMBA_CUDA_USE_NVIDIA_BINDING", "0")
    if cuda_imported_without_simulator():
        warnings.warn(
            "numba.cuda was imported before gemm_lessons, without the simulator, and no GPU "
            "was found: restart the kernel and import gemm_lessons first.",
            stacklevel=2,
        )
