"""Kernels of notebooks under test (nbval) import this checkout's gemm_lessons, not another copy
that happens to be installed (an editable install of a different worktree, say): the notebook
kernels inherit PYTHONPATH from this process."""
import os

REPO = os.path.dirname(os.path.abspath(__file__))
os.environ["PYTHONPATH"] = os.pathsep.join(
    [REPO] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and p != REPO])
