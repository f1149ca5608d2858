"""python -m gemm_lessons.course.nbgrader_course --out course/ [NN ...]: the series as an nbgrader course.

Writes ``<out>/nbgrader_config.py`` and ``<out>/source/<lesson>/<lesson>.ipynb``: **one
assignment per lesson**, named after its notebook (``00_setup_and_roofline``, ...; a lesson's
appendix notebook, ``11b_...``, has no exercise and is none).  Lessons are taught one at a
time, so a teacher releases, collects and grades them one at a time, and a cheap lesson is not
held up by the simulator running a later lesson's kernels.  ``NN ...``
exports only the lessons whose names start with those prefixes.

Each notebook is the teacher notebook from ``notebooks/`` with nbgrader's cell metadata put in
(the lessons and notebooks themselves carry none):

* an exercise cell (code between ``### BEGIN SOLUTION`` and ``### END SOLUTION``) becomes a
  **solution cell** (``solution: true, grade: false, locked: false``); its trailing
  ``exercises.check("<id>", <answer>)`` line moves into
* new **autograded test cells** right after it (``grade: true, locked: true``; points: 1 for a
  value, 2 for code): they run the package's own check **in a fresh process** on the solution
  cell's code (gemm_lessons.course.grading: nothing the notebook redefines, ``exercises.check``
  included, takes part), with what the cell uses from earlier cells (``context_source``), and
  turn the Feedback into an assertion whose message is the feedback (``nbgrader validate``
  shows it).  An exercise whose check judges a technique gets two: the **result** (1 point)
  and the **technique** (1 point), so a right result without the technique earns half;
* every other cell is **read-only** (``locked: true``): autograding restores it from the source.

Markdown cells starting with ``**Solution`` are dropped, as ``python -m gemm_lessons.course.student``
drops them.  ``nbgrader generate_assignment`` then writes the student version: the written
``nbgrader_config.py`` makes it replace each solution region by the skeleton after ``### BEGIN
SOLUTION:`` (what ``gemm_lessons.course.student`` writes) instead of nbgrader's generic stub (see
gemm_lessons/course/nbgrader_preprocessors.py), and gives each cell EXECUTE_TIMEOUT_S seconds to run
when autograding (a kernel check on numba's simulator takes a while).

numba's performance warnings about the checks' tiny grids stay out of the graded cells:
``exercises.check`` silences them while it runs (see ``exercises._quiet_performance_warnings``).
"""
import argparse
import ast
import builtins
import glob
import os
import re
import shutil
import sys

import nbformat

from gemm_lessons.course import colab, grading
from gemm_lessons.course.budget import APPENDIX
from gemm_lessons.course.lesson_source import NOTEBOOK_DIR, REPO_DIR
from gemm_lessons.course.student import BEGIN

SCHEMA_VERSION = 3
POINTS_VALUE, POINTS_CODE = 1, 2  # an answer that is a value (a number, a pair) / code (a function, a kernel)
EXECUTE_TIMEOUT_S = 1800  # per cell, when nbgrader executes a notebook
CHECK_LINE = re.compile(r"""^exercises\.check\(\s*["']([^"']+)["']\s*,\s*(.+)\)\s*$""")
COPIED = ("GLOSSARY.md", "REFERENCES.md")  # the lessons link to these: each assignment ships them

CONFIG = '''\
# nbgrader configuration for the gemm-lessons series, written by
#   python -m gemm_lessons.course.nbgrader_course
c = get_config()  # noqa: F821

c.CourseDirectory.course_id = "gemm-lessons"

# Seconds each cell may run when nbgrader executes a notebook (autograde, validate): kernel
# checks on numba's CUDA simulator (no GPU) take minutes, not nbgrader's default 30 s.
c.Execute.timeout = {timeout}

# Student versions keep the course's skeletons ("answer = None", "pass", ...) instead of
# nbgrader's generic "raise NotImplementedError()": the same text as python -m gemm_lessons.course.student.
# (An exception here would make nbgrader ignore this whole file, so a missing package only warns.)
try:
    from gemm_lessons.course.nbgrader_preprocessors import use_skeletons
    use_skeletons(c)
except Exception as e:
    import sys
    print(f"nbgrader_config.py: {{type(e).__name__}}: {{e}}; student versions get nbgrader's generic "
          "stub instead of the course's skeletons (is gemm-lessons installed where nbgrader runs?)",
          file=sys.stderr)
'''


class ExportError(ValueError):
    pass


def _nbgrader(grade_id, *, solution=False, grade=False, locked=False, points=None):
    meta = {"grade": grade, "grade_id": grade_id, "locked": locked, "schema_version": SCHEMA_VERSION,
            "solution": solution}
    if grade:
        meta["points"] = points
    return meta


def split_check(source):
    """(code, exercise id, answer expression) for an exercise cell ending in
    ``exercises.check("<id>", <answer>)``; (source, None, None) when it does not end in one."""
    try:
        tree = ast.parse(source)
    except SyntaxError:  # IPython syntax (%magic, !command): the last line alone
        lines = source.rstrip().split("\n")
        m = CHECK_LINE.match(lines[-1])
        if not m:
            return source, None, None
        return "\n".join(lines[:-1]).rstrip("\n"), m.group(1), m.group(2).strip()
    last = tree.body[-1] if tree.body else None
    call = last.value if isinstance(last, ast.Expr) else None
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "check"
            and isinstance(call.func.value, ast.Name) and call.func.value.id == "exercises"
            and len(call.args) == 2 and not call.keywords
            and isinstance(call.args[0], ast.Constant) and isinstance(call.args[0].value, str)):
        return source, None, None
    lines = source.split("\n")
    if any(l.strip() for l in lines[last.end_lineno:]):
        return source, None, None  # a comment after the check
    code = "\n".join(lines[:last.lineno - 1]).rstrip("\n")
    return code, call.args[0].value, ast.get_source_segment(source, call.args[1])


def graded_cell_source(exercise_id, expression, points, part="check", context=""):
    """An autograded cell of an exercise.  ``part``: "check" (the whole check: a value, or code
    whose check judges no technique), "result" (the result alone) or "technique" (the whole check,
    after the "result" cell).  The "check" and "result" cells grade the solution cell (the last
    input of IPython's history ``In`` that is not a graded cell) with gemm_lessons.course.grading.grade, the package's own check in a
    fresh process after ``context`` (see context_source), so that nothing the notebook redefines
    takes part; the "technique" cell reads the verdict the "result" cell got.  The Feedback is
    shown with display(), not as the cell's value (nbgrader reads a graded cell's value as a
    partial score); a failure raises AssertionError with the feedback as its message, which
    nbgrader scores 0 and ``nbgrader validate`` prints.  Nothing goes to stderr."""
    plural = "s" if points != 1 else ""
    what = {"check": f"the check of exercise {exercise_id} must pass",
            "result": f"the result of exercise {exercise_id} must be right (its technique is graded below)",
            "technique": f"exercise {exercise_id} must also use the lesson's technique: its whole check must pass"}[part]
    head = (f"{grading.GRADED_MARK}{points} point{plural}): {what}.\n"
            f"# The check runs in a fresh process on the code of the cell above (`{expression}`), as\n"
            f"# `python -m gemm_lessons.check {exercise_id} FILE.py` would.\n")
    if part == "technique":
        return head + "assert _feedback.ok, _feedback.failure(\"the technique\")"
    return (head + "from gemm_lessons.course.grading import grade as _grade\n"
            f"_feedback = _grade({exercise_id!r}, In, {context!r})\n"
            "display(_feedback)\n"
            f"assert _feedback.{'ok' if part == 'check' else 'result_ok'}, "
            f"_feedback.failure({'the check' if part == 'check' else 'the result'!r})")


_BUILTINS = set(dir(builtins)) | {"display", "get_ipython", "In", "Out"}  # a notebook's, besides Python's


def _names(tree):
    """(names a piece of code binds at its top level, names it reads)."""
    bound, read = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (bound if isinstance(node.ctx, (ast.Store, ast.Del)) else read).add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                bound.add((alias.asname or alias.name).split(".")[0])
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
    return bound, read


def context_source(earlier_sources, code):
    """What ``code`` (an exercise cell) uses from the lesson's earlier cells, as the code that
    defines it: their top-level imports, assignments and definitions of the names ``code`` reads
    without binding (and of the names those read), in the notebook's order.  The earlier cells'
    solutions are replaced by their skeletons first, so no solution reaches the graded cell;
    IPython's magic and shell lines become ``pass``; a cell that is still not Python is skipped."""
    from gemm_lessons.course.student import strip_solutions

    statements = []  # (bound names, read names, source) of each top-level statement, in order
    for source in earlier_sources:
        text = "\n".join(line if not line.lstrip().startswith(("%", "!")) else  # IPython magics, shell
                         line[:len(line) - len(line.lstrip())] + "pass" for line in strip_solutions(source).split("\n"))
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        for node in tree.body:
            if not isinstance(node, (ast.Import, ast.ImportFrom, ast.Assign, ast.AnnAssign, ast.FunctionDef,
                                     ast.ClassDef)):
                continue
            bound, read = _names(node)
            if isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                bound = {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
            statements.append((bound, read - bound, ast.get_source_segment(text, node)))
    try:
        bound, read = _names(ast.parse(code))
    except SyntaxError:
        return ""
    wanted = read - bound - _BUILTINS
    chosen = set()
    for i in range(len(statements) - 1, -1, -1):  # the last definition of each name wins
        names, reads, _ = statements[i]
        if names & wanted:
            chosen.add(i)
            wanted = (wanted - names) | (reads - _BUILTINS)
    return "\n".join(statements[i][2] for i in sorted(chosen))


def _parts(exercise_id, points):
    """The graded cells of an exercise, as (part, points): one "check" cell for a value or for code
    whose check judges no technique; for the others a "result" cell and a "technique" cell that
    share the points (the result gets the odd one), so that a right result without the technique
    earns part of them and a blank none."""
    from gemm_lessons.teaching.exercises import core

    if not core.judges_technique(exercise_id) or points < 2:
        return [("check", points)]
    return [("result", points - points // 2), ("technique", points // 2)]


def nbgrader_notebook(nb, points=None):
    """A teacher notebook (NotebookNode or dict) with nbgrader metadata and test cells."""
    points = points or {}
    nb = nbformat.from_dict(nb)
    cells, seen, earlier = [], set(), []  # earlier: the code cells before this one (for context_source)
    for i, cell in enumerate(nb.cells):
        cell.metadata.pop("nbgrader", None)
        if cell.cell_type == "markdown" and cell.source.lstrip().startswith("**Solution"):
            continue  # as gemm_lessons.course.student does
        if cell.cell_type == "markdown":  # a Colab badge would open the teacher notebook (course.student)
            cell.source = colab.with_badge(cell.source, None)
        cell_id = cell.get("id") or f"{i:03d}"
        if cell.cell_type == "code" and BEGIN in cell.source:
            code, exercise_id, expression = split_check(cell.source)
            if exercise_id is None and "exercises.check(" in cell.source:
                raise ExportError(f"cell {i}: an exercise cell must end with its exercises.check(\"<id>\", "
                                  "<answer>) line, which becomes the graded test cell")
            grade_id = f"{exercise_id or 'cell-' + cell_id}-solution"
            if exercise_id in seen:
                raise ExportError(f"exercise {exercise_id} is checked twice")
            cell.source = code
            cell.outputs, cell.execution_count = [], None
            cell.metadata["nbgrader"] = _nbgrader(grade_id, solution=True)
            cells.append(cell)
            if exercise_id is not None:
                seen.add(exercise_id)
                p = points.get(exercise_id, POINTS_VALUE if expression == "answer" else POINTS_CODE)
                context = context_source(earlier, code)
                for part, pts in _parts(exercise_id, p):
                    test = nbformat.v4.new_code_cell(graded_cell_source(exercise_id, expression, pts, part, context))
                    suffix = "test" if part == "check" else part
                    test.id = f"{cell_id}-{suffix}"[:64]
                    test.metadata["nbgrader"] = _nbgrader(f"{exercise_id}-{suffix}", grade=True, locked=True,
                                                          points=pts)
                    cells.append(test)
            earlier.append(code)
            continue
        if cell.cell_type == "code":
            earlier.append(cell.source)
        cell.metadata["nbgrader"] = _nbgrader(f"cell-{cell_id}", locked=True)
        cells.append(cell)
    missing = set(points) - seen
    if missing:
        raise ExportError(f"points for exercises this notebook does not have: {', '.join(sorted(missing))}")
    nb.cells = cells
    nb.metadata.pop("jupytext", None)  # the pairing names lessons/ and notebooks/, not a course folder
    return nb


def max_points(nb):
    return sum(c.metadata["nbgrader"].get("points", 0) for c in nb.cells
               if c.metadata.get("nbgrader", {}).get("grade"))


def lessons(names=(), notebook_dir=NOTEBOOK_DIR):
    """The lessons' notebooks (each an assignment); an appendix notebook (``11b_...``: lab notes,
    no exercise) is not one."""
    paths = sorted(p for p in glob.glob(os.path.join(notebook_dir, "[0-9]*.ipynb"))
                   if not APPENDIX.match(os.path.basename(p)))
    if names:
        paths = [p for p in paths if os.path.basename(p).startswith(tuple(names))]
    return paths


def write_course(out, names=(), notebook_dir=NOTEBOOK_DIR, points=None):
    """Write the course (config and source/<lesson>/<lesson>.ipynb); returns the assignment names.
    Nothing else in ``out`` (a gradebook, submissions, releases) is touched."""
    paths = lessons(names, notebook_dir)
    if not paths:
        raise ExportError(f"no lesson notebook in {notebook_dir} matches {' '.join(names) or '*'}")
    points = dict(points or {})
    built = []
    for path in paths:  # all of them first: a wrong --points writes nothing
        nb = nbformat.read(path, as_version=4)
        ids = {split_check(c.source)[1] for c in nb.cells if c.cell_type == "code" and BEGIN in c.source}
        built.append((os.path.basename(path)[:-len(".ipynb")],
                      nbgrader_notebook(nb, {k: points.pop(k) for k in list(points) if k in ids})))
    if points:
        raise ExportError(f"--points for exercises not exported: {', '.join(sorted(points))}")
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "nbgrader_config.py"), "w") as f:
        f.write(CONFIG.format(timeout=EXECUTE_TIMEOUT_S))
    assignments = []
    for name, nb in built:
        dest = os.path.join(out, "source", name)
        os.makedirs(dest, exist_ok=True)
        nbformat.write(nb, os.path.join(dest, name + ".ipynb"))
        for extra in COPIED:
            if os.path.exists(os.path.join(notebook_dir, extra)):
                shutil.copy(os.path.join(notebook_dir, extra), os.path.join(dest, extra))
        assignments.append(name)
    return assignments


def _points(text):
    exercise_id, _, value = text.partition("=")
    try:
        return exercise_id, int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected ID=POINTS (e.g. 01-kernel=3), got {text!r}") from None


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=os.path.join(REPO_DIR, "course"), help="the nbgrader course folder")
    p.add_argument("--points", type=_points, action="append", default=[], metavar="ID=POINTS",
                   help=f"points of an exercise (default {POINTS_VALUE} for a value, {POINTS_CODE} for code)")
    p.add_argument("names", nargs="*", metavar="NN", help="only the lessons whose names start with NN")
    args = p.parse_args(argv)
    try:
        written = write_course(args.out, args.names, points=dict(args.points))
    except ExportError as e:
        p.error(str(e))
    for name in written:
        print("wrote", os.path.join(args.out, "source", name, name + ".ipynb"))
    print(f"then, in {args.out}: nbgrader generate_assignment <lesson>, and after collecting the "
          "submissions, nbgrader autograde <lesson>")
    return 0


if __name__ == "__main__":
    sys.exit(main())
