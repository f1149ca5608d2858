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
    """Assert that ``transpose(src, dst, **kw)`` is exact, writes every float of dst and nothing in
    front of it, with src and dst ``offset`` floats into fresh buffers (measure.problems.check_transpose)."""
    import functools

    from gemm_lessons.measure import problems

    res = problems.check_transpose(functools.partial(transpose, **kw), rows, cols, seed=rows * 1000 + cols,
                                   offset=offset)
    assert res.passed, res.message()


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
