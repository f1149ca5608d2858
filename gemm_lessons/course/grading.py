"""Grading an exercise in a fresh process: what the nbgrader course's graded cells call.

A graded cell must not trust the notebook's kernel: a solution cell can redefine
``exercises.check``, replace a checker or patch a class, and a check run in that kernel would
believe it.  ``grade(id, code, context)`` writes the student's cell (``code``; in a graded
cell, IPython's history ``In``, whose last input that is not a graded cell is the solution cell) after ``context`` (what the
cell uses from the lesson's earlier cells: imports and the assignments it needs, written into
the graded cell by gemm_lessons.course.nbgrader_course, solutions left out) into a file, and runs
``python -m gemm_lessons.check --json ID FILE`` on it in a new Python process: the package's own
check, on the student's code, with nothing of the notebook's state (cli.check_file also undoes
what the file itself does to the package).  The result is a Graded: ``ok`` (result and
technique), ``result_ok`` (the result alone), the feedback, and ``failure()``, the assertion
message nbgrader shows (``nbgrader validate`` too)."""
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass

from gemm_lessons.core import backend

TIMEOUT_S = 1800  # as the course's per-cell limit (nbgrader_course.EXECUTE_TIMEOUT_S)
_PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@dataclass
class Graded:
    exercise: str
    ok: bool
    result_ok: bool
    message: str

    def __str__(self):
        return f"{'Correct' if self.ok else 'Not yet'} [{self.exercise}]: {self.message}"

    __repr__ = __str__

    def _repr_markdown_(self):
        return ("✅ " if self.ok else ("☑️ " if self.result_ok else "❌ ")) + str(self)

    def failure(self, part="the check"):
        """The assertion message of a graded cell: what failed, and the check's feedback."""
        return f"exercise {self.exercise}: {part} does not pass. {self.message}"


# IPython's input history holds a cell's magics as calls: get_ipython().run_line_magic("timeit", ...),
# .run_cell_magic("time", "", body), .system("ls"). A fresh Python process has no IPython: this
# stand-in skips line magics and shell commands, and runs a cell magic's body as plain Python.
NO_IPYTHON = '''
class _NoIPython:  # graded outside IPython: magics and shell commands are left out
    def run_line_magic(self, *args, **kwargs):
        return None

    def run_cell_magic(self, name, line, cell):
        exec(cell, globals())

    def system(self, *args, **kwargs):
        return None

    getoutput = system


def get_ipython():
    return _NoIPython()
'''


def source_file(code, context=""):
    """The text ``grade`` checks: the package first (it picks the GPU or the simulator), the
    context, then the student's code (with a stand-in for IPython where it uses magics)."""
    magics = NO_IPYTHON if "get_ipython()" in code + context else ""
    return ("import gemm_lessons  # noqa: F401  (first: it chooses the GPU, or numba's CUDA simulator)\n" + magics
            + (context.rstrip("\n") + "\n" if context else "") + "\n" + code.rstrip("\n") + "\n")


GRADED_MARK = "# Graded ("  # the first line of every graded cell (nbgrader_course.graded_cell_source)


def solution_source(history):
    """The solution cell's code from IPython's input history (``In``): the latest input before the
    current one that is not a graded cell (a graded cell run twice sees itself first)."""
    for text in reversed(list(history)[:-1]):
        if not text.lstrip().startswith(GRADED_MARK):
            return text
    return ""


def grade(exercise_id, code, context="", timeout=TIMEOUT_S):
    """Graded of ``python -m gemm_lessons.check --json exercise_id FILE`` run in a new process on
    ``source_file(code, context)``; never raises for what the student wrote.  ``code``: the
    student's code, or IPython's input history ``In`` (a list), whose solution cell is taken
    (solution_source)."""
    if not isinstance(code, str):
        code = solution_source(code)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [_PACKAGE_PARENT] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    if backend.SIMULATOR:
        env["GEMM_LESSONS_SIMULATOR"] = "1"
    with tempfile.TemporaryDirectory(prefix="gemm-lessons-grade-") as folder:
        path = os.path.join(folder, f"exercise_{exercise_id.replace('-', '_')}.py")
        with open(path, "w") as f:
            f.write(source_file(code, context))
        try:
            run = subprocess.run([sys.executable, "-m", "gemm_lessons.check", "--json", exercise_id, path],
                                 capture_output=True, text=True, env=env, cwd=os.getcwd(), timeout=timeout)
        except subprocess.TimeoutExpired:
            return Graded(exercise_id, False, False, f"the check did not finish in {timeout} s.")
    lines = run.stdout.strip().split("\n")
    try:
        out = json.loads(lines[-1])
        return Graded(exercise_id, bool(out["ok"]), bool(out["result_ok"]), out["message"])
    except (ValueError, KeyError, IndexError):
        said = (run.stderr.strip() or run.stdout.strip())[-1500:]
        return Graded(exercise_id, False, False, f"the check could not run on your cell's code (exit status "
                                                  f"{run.returncode}): {said}")
