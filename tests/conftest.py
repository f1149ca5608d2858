"""What every test may use, and the markers that say what a test needs (registered in pyproject.toml):
``gpu`` (a GPU), ``simulator`` (numba's CUDA simulator), ``offline_sass`` (the CUDA compiler without a
GPU: libnvvm, ptxas, cuobjdump, and GEMM_LESSONS_SIMULATOR=0), ``slow`` (over 20 s on two cores).
A test whose need is not met here is skipped with the reason; ``-rs`` prints each reason."""
import os

import pytest

import gemm_lessons  # noqa: F401  (chooses GPU or simulator before numba.cuda is imported)
from gemm_lessons.core import backend

requires_simulator = pytest.mark.simulator
requires_gpu = pytest.mark.gpu
requires_offline_sass = pytest.mark.offline_sass

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def offline_sass_missing():
    """Why kernels cannot be compiled offline in this process (a sentence naming everything missing
    and how to get it), or None.  CI's second step (.ci/run) installs the ``offline-sass`` extra
    and runs ``GEMM_LESSONS_SIMULATOR=0 pytest -m offline_sass``."""
    from gemm_lessons.instruments import offline_sass

    why = offline_sass.missing_toolchain()  # names the simulator when it is active
    if os.environ.get("GEMM_LESSONS_SIMULATOR") != "0" and not backend.SIMULATOR:  # a GPU: still ask for 0
        why = "GEMM_LESSONS_SIMULATOR=0 is not set" + (f"; {why}" if why else "")
    return why


def check_transpose_offset(transpose, rows, cols, offset=0, **kw):
    """Run ``transpose(src, dst, **kw)`` with src and dst ``offset`` floats into fresh buffers, dst
    poisoned with NaN, and assert dst == src.T exactly, every float written, nothing before dst."""
    import numpy as np
    from numba import cuda

    src = np.random.default_rng(rows * 1000 + cols).random((rows, cols), dtype=np.float32)
    s_buf = cuda.to_device(np.concatenate([np.zeros(offset, np.float32), src.ravel()]))
    d_buf = cuda.to_device(np.full(offset + rows * cols, np.nan, np.float32))
    dst = d_buf[offset:].reshape(cols, rows)
    transpose(s_buf[offset:].reshape(rows, cols), dst, **kw)
    out = dst.copy_to_host()
    assert not np.isnan(out).any(), f"{rows}x{cols}: {np.isnan(out).sum()} floats of dst never written"
    assert np.array_equal(out, src.T)
    assert np.isnan(d_buf.copy_to_host()[:offset]).all()  # nothing written before dst


def pytest_collection_modifyitems(config, items):
    why_offline = None
    for item in items:
        if item.get_closest_marker("gpu") and backend.SIMULATOR:
            item.add_marker(pytest.mark.skip(reason="gpu: needs a GPU (this machine runs numba's CUDA simulator)"))
        if item.get_closest_marker("simulator") and not backend.SIMULATOR:
            item.add_marker(pytest.mark.skip(reason="simulator: needs numba's CUDA simulator (GEMM_LESSONS_SIMULATOR=1)"))
        if item.get_closest_marker("offline_sass"):
            why_offline = why_offline or offline_sass_missing() or ""
            if why_offline:
                item.add_marker(pytest.mark.skip(reason=f"offline_sass: {why_offline}"))
