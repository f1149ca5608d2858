"""Kernels of notebooks under test (nbval) import this checkout's gemm_lessons, not another copy
that happens to be installed (an editable install of a different worktree, say): the notebook
kernels inherit PYTHONPATH from this process."""
import os

REPO = os.path.dirname(os.path.abspath(__file__))
os.environ["PYTHONPATH"] = os.pathsep.join(
    [REPO] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and p != REPO])


import pytest  # noqa: E402


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """--dist loadfile (the README's command), except that each planted answer of the exercises
    is a unit of its own: on a GPU a kernel answer takes about 40 s (its technique is checked in a
    child process on the simulator), and their one file held one worker for many minutes."""
    if config.getoption("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class PlantedAnswersApart(LoadFileScheduling):
        def _split_scope(self, nodeid):
            if "test_planted.py::test_planted_answer[" in nodeid:
                return nodeid
            return super()._split_scope(nodeid)

    return PlantedAnswersApart(config, log)
