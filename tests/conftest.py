import os

import pytest

import gemm_lessons  # noqa: F401  (chooses GPU or simulator before numba.cuda is imported)
from gemm_lessons import _backend

requires_simulator = pytest.mark.skipif(not _backend.SIMULATOR, reason="needs the CUDA simulator")
requires_gpu = pytest.mark.skipif(_backend.SIMULATOR, reason="needs a GPU")

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
