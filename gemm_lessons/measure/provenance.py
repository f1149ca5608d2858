"""Where a measurement comes from: software versions, the commit measured, the GPU's clocks, the time.

Recorded next to every benchmark and sweep (results/*.json) so that a number can be traced
back to the code and machine that produced it.
"""
import datetime
import os
import platform
import subprocess

import numba
import numba_cuda
import numpy as np
from numba import cuda  # after gemm_lessons._backend (the package imports it first)

from gemm_lessons.core.paths import PACKAGE_DIR
from gemm_lessons.measure import cublas


def versions():
    """Python, NumPy, numba, numba-cuda, nvmath-python, cuBLAS and CUDA versions (on a GPU)."""
    v = {"python": platform.python_version(), "numpy": np.__version__, "numba": numba.__version__,
         "numba_cuda": numba_cuda.__version__}
    try:
        import nvmath  # lazy: cuBLAS's package, slow to import and only needed on a GPU

        v["nvmath_python"] = nvmath.__version__
    except Exception:
        pass
    v["cublas"] = cublas.version()
    try:
        v["cuda_driver"] = ".".join(map(str, cuda.cudadrv.driver.driver.get_version()))
        v["cuda_runtime"] = ".".join(map(str, cuda.runtime.get_version()))
    except Exception:
        pass
    return v


def git_commit():
    """The commit of the code being measured: $GEMM_LESSONS_GIT_COMMIT when set (a copy of the
    tree on another machine may carry a stale .git), else HEAD, with "+modified" when the
    package differs from HEAD; None outside a git checkout."""
    if os.environ.get("GEMM_LESSONS_GIT_COMMIT"):
        return os.environ["GEMM_LESSONS_GIT_COMMIT"]
    here = PACKAGE_DIR
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10, cwd=here)
        head = out.stdout.strip() or None
        dirty = subprocess.run(["git", "diff", "--quiet", "HEAD", "--", "."], cwd=here, timeout=10).returncode
        return head and head + ("+modified" if dirty else "")
    except Exception:
        return None


def nvidia_smi():
    """Clocks, power and temperature right now of the GPU numba uses (by its UUID: nvidia-smi
    numbers every GPU of the machine, whatever CUDA_VISIBLE_DEVICES shows); None if nvidia-smi
    is missing."""
    q = "driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu,persistence_mode"
    try:
        from numba import cuda

        uuid = getattr(cuda.get_current_device(), "uuid", None)
    except Exception:  # noqa: BLE001 (no GPU: nvidia-smi's first, if any)
        uuid = None
    try:
        out = subprocess.run(["nvidia-smi", f"--query-gpu={q}", "--format=csv,noheader"] + ([f"--id={uuid}"] if uuid else []),
                             capture_output=True, text=True, timeout=20).stdout.strip().splitlines()[0]
        return dict(zip(q.split(","), [s.strip() for s in out.split(",")]))
    except Exception:
        return None


def now():
    """UTC time to the second, ISO 8601: '2026-11-22T19:31:20+00:00'."""
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
