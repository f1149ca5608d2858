"""The series as an nbgrader course (gemm_lessons/course/nbgrader_course.py): the export's cell metadata
for every lesson, and a real round trip on one lesson: ``nbgrader generate_assignment`` and
``nbgrader autograde`` in a temporary course, the teacher notebook scoring full marks and the
released student version less.  Checks never write numba's warnings to stderr (nbgrader gives
0 points to a graded cell with anything on stderr)."""
import glob
import os
import re
import shutil
import subprocess
import sys
import time
import warnings

import nbformat
import pytest

from gemm_lessons.teaching import exercises
from gemm_lessons.course import nbgrader_course, student

from conftest import REPO

NOTEBOOKS = nbgrader_course.lessons()
LESSON = "00a_primer"  # ~30 s per run on the simulator; a kernel exercise (00a-launch) and a value one
LOW_OCCUPANCY = "Grid size 1 will likely result in GPU under-utilization due to low occupancy."


def _meta(cell):
    return cell.metadata.get("nbgrader")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=os.path.basename)
def test_export_marks_every_cell(path):
    teacher = nbformat.read(path, as_version=4)
    nb = nbgrader_course.nbgrader_notebook(teacher)
    exercise_cells = [c for c in teacher.cells if c.cell_type == "code" and student.BEGIN in c.source]
    assert exercise_cells, "every lesson has an exercise"
    solutions = [c for c in nb.cells if _meta(c)["solution"]]
    tests = [c for c in nb.cells if _meta(c)["grade"]]
    graded_first = [c for c in tests if "_grade(" in c.source]  # one per exercise: "check" or "result"
    assert len(solutions) == len(graded_first) == len(exercise_cells)
    for i, cell in enumerate(nb.cells):
        meta = _meta(cell)
        assert meta["schema_version"] == 3 and meta["grade_id"]
        if meta["solution"]:  # the student's cell: editable, not graded itself, never asserts
            assert (meta["grade"], meta["locked"]) == (False, False)
            assert student.BEGIN in cell.source and "exercises.check" not in cell.source
            test = nb.cells[i + 1]  # ... and its graded cell right after it: the check in a fresh process
            assert _meta(test)["grade"] and _meta(test)["locked"] and _meta(test)["points"] >= 1
            assert "_grade(" in test.source and ", In, " in test.source and "exercises.check(" not in test.source
            exercise_id = _meta(test)["grade_id"].rsplit("-", 1)[0]
            if exercises.judges_technique(exercise_id):  # result and technique, a point each
                technique = nb.cells[i + 2]
                assert _meta(test)["grade_id"] == f"{exercise_id}-result" and "assert _feedback.result_ok" in test.source
                assert _meta(technique)["grade_id"] == f"{exercise_id}-technique"
                assert "assert _feedback.ok" in technique.source and _meta(technique)["points"] == 1
            else:
                assert _meta(test)["grade_id"] == f"{exercise_id}-test" and "assert _feedback.ok" in test.source
            assert "BEGIN SOLUTION" not in test.source
        elif not meta["grade"]:
            assert meta["locked"] and student.BEGIN not in cell.source
    assert len({_meta(c)["grade_id"] for c in nb.cells}) == len(nb.cells)
    assert "jupytext" not in nb.metadata
    # the exported cells are the teacher notebook's, each check line moved into the graded cell
    kept = [c for c in teacher.cells if not c.source.lstrip().startswith("**Solution")]
    assert [c.source for c in nb.cells if not _meta(c)["grade"]] == [_without_check(c.source) for c in kept]
    checked = [nbgrader_course.split_check(c.source)[1:] for c in exercise_cells]
    assert [(_meta(c)["grade_id"].rsplit("-", 1)[0], re.search(r"\(`(.+)`\)", c.source).group(1))
            for c in graded_first] == checked


def _without_check(source):
    return source.split("\nexercises.check(")[0].rstrip("\n") if "\nexercises.check(" in source else source


def test_an_appendix_notebook_is_no_assignment(tmp_path):
    """A lesson's appendix (NNb_...: its lab notes, no exercise) is not exported as an assignment."""
    for name in ("11_lesson.ipynb", "11b_what_we_tried.ipynb", "GLOSSARY.md"):
        (tmp_path / name).write_text("{}")
    assert [os.path.basename(p) for p in nbgrader_course.lessons(notebook_dir=str(tmp_path))] == ["11_lesson.ipynb"]
    assert not any(os.path.basename(p).startswith("11b_") for p in NOTEBOOKS)


def test_export_points_and_dropped_solution_text():
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("import gemm_lessons"),
        nbformat.v4.new_code_cell("### BEGIN SOLUTION: answer = None\nanswer = 3\n### END SOLUTION\n"
                                  "exercises.check(\"00-flops\", answer)"),
        nbformat.v4.new_markdown_cell("**Solution.** Three, because ..."),
        nbformat.v4.new_code_cell("def f():\n    ### BEGIN SOLUTION\n    return 1\n    ### END SOLUTION\n\n\n"
                                  "exercises.check('00a-launch', f)"),
    ])
    out = nbgrader_course.nbgrader_notebook(nb, {"00a-launch": 5})
    assert [c.cell_type for c in out.cells] == ["code"] * 6  # the **Solution markdown is gone
    # 00a-launch judges a technique: 5 points split between its result (3) and its technique (2)
    assert [(_meta(c)["grade_id"], _meta(c).get("points")) for c in out.cells if _meta(c)["grade"]] == \
        [("00-flops-test", 1), ("00a-launch-result", 3), ("00a-launch-technique", 2)]
    assert nbgrader_course.max_points(out) == 6
    with pytest.raises(nbgrader_course.ExportError, match="must end with"):
        nbgrader_course.nbgrader_notebook(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
            "### BEGIN SOLUTION\nanswer = 3\n### END SOLUTION\nexercises.check('00-flops', answer)\nprint(1)")]))


def test_export_cell_with_ipython_syntax():
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "%time x = 1\n### BEGIN SOLUTION: answer = None\nanswer = 3\n### END SOLUTION\nexercises.check(\"00-flops\", answer)")])
    out = nbgrader_course.nbgrader_notebook(nb)
    assert out.cells[0].source.endswith("### END SOLUTION") and _meta(out.cells[1])["grade_id"] == "00-flops-test"


def test_skeleton_solutions_preprocessor():
    """In process, what generate_assignment's solution step does to each kind of cell."""
    pytest.importorskip("nbgrader", reason="nbgrader is not installed: pip install -e '.[test]' installs it")
    from gemm_lessons.course.nbgrader_preprocessors import SkeletonSolutions

    teacher = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("Write yours between `### BEGIN SOLUTION` and `### END SOLUTION`."),
        nbformat.v4.new_code_cell("### BEGIN SOLUTION: answer = None\nanswer = 3\n### END SOLUTION\n"
                                  "exercises.check(\"00-flops\", answer)"),
        nbformat.v4.new_code_cell("def f(x):\n    ### BEGIN SOLUTION\n    return x\n    ### END SOLUTION\n\n"
                                  "exercises.check(\"00a-launch\", f)"),
    ])
    teacher.metadata["kernelspec"] = {"name": "python3", "language": "python", "display_name": "Python 3"}
    nb = nbgrader_course.nbgrader_notebook(teacher)
    released, _ = SkeletonSolutions().preprocess(nb, {})
    assert [c.source for c in released.cells if not _meta(c)["grade"]] == \
        [c.source.split("\nexercises.check(")[0].rstrip() for c in student.student_notebook(teacher).cells]


def test_check_keeps_warnings_off_stderr(capsys):
    """numba's low-occupancy warning (what numba-cuda raises for a check's tiny grid on a GPU) is
    dropped even with every filter reset; another warning ends up in the feedback, not on stderr."""
    from numba.core.errors import NumbaPerformanceWarning
    from numba.cuda.core.errors import NumbaPerformanceWarning as CudaPerformanceWarning

    def noisy(answer):
        warnings.warn(CudaPerformanceWarning(LOW_OCCUPANCY))
        warnings.warn(NumbaPerformanceWarning("Host array used in CUDA kernel will incur copy overhead"))
        if answer == "other":
            warnings.warn("something else", UserWarning)
        return True, "fine."

    exercises.exercise("test-noisy", "none")(noisy)
    try:
        with warnings.catch_warnings():
            warnings.resetwarnings()
            warnings.simplefilter("always")  # the worst case: nothing filtered by the caller
            quiet = exercises.check("test-noisy", "answer")
            other = exercises.check("test-noisy", "other")
    finally:
        exercises._CHECKS.pop("test-noisy")
    assert capsys.readouterr().err == ""
    assert quiet.ok and quiet.message == "fine."
    assert other.ok and "UserWarning: something else" in other.message


def _nbgrader(course, *args, timeout):
    env = dict(os.environ, GEMM_LESSONS_SIMULATOR="1", PYTHONPATH=os.pathsep.join(
        [REPO] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    run = subprocess.run([sys.executable, "-m", "nbgrader", *args, "--Execute.timeout=300"], cwd=course,
                         env=env, capture_output=True, text=True, timeout=timeout)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "Exception while loading config file" not in run.stderr, run.stderr[-3000:]
    return run


def _gpu_like(nb):
    """The teacher notebook whose kernel launch also raises numba-cuda's low-occupancy warning,
    as it does on a GPU for the check's tiny grids (the simulator never warns)."""
    nb = nbformat.from_dict(nb)
    cell = next(c for c in nb.cells if "def launch(x, y, out):" in c.source)
    cell.source = cell.source.replace(
        "def launch(x, y, out):\n",
        "def launch(x, y, out):\n    import warnings\n    from numba.cuda.core.errors import NumbaPerformanceWarning\n"
        f"    warnings.warn(NumbaPerformanceWarning({LOW_OCCUPANCY!r}))\n", 1)
    assert "NumbaPerformanceWarning(" in cell.source
    return nb


BYPASS = """
from gemm_lessons.teaching import exercises
from gemm_lessons.teaching.exercises import core
exercises.check = lambda exercise_id, answer, **kw: core.Feedback(exercise_id, True, "looks right to me")
core._CHECKS = {i: (lambda answer: (True, "fine"), "") for i in core._CHECKS}
"""


def _bypass(nb):
    """The student notebook with a solution cell that replaces exercises.check (and the checks'
    registry) by one that passes anything: the graded cells must not believe it."""
    nb = nbformat.from_dict(nb)
    cell = next(c for c in nb.cells if _meta(c) and _meta(c)["solution"])
    cell.source += "\n" + BYPASS
    return nb


def _host_computed(nb):
    """The teacher notebook with 00a-launch answered by a launch whose kernel does nothing useful
    and out computed on the host: the right result without the technique."""
    nb = nbformat.from_dict(nb)
    cell = next(c for c in nb.cells if "def launch(x, y, out):" in c.source)
    cell.source = cell.source.replace("    two_x_minus_y[blocks, threads](x, y, out)\n",
                                      "    two_x_minus_y[blocks, threads](x, y, out)\n    out[:] = 2 * x[:] - y[:]\n")
    cell.source = cell.source.replace("        out[i] = 2 * x[i] - y[i]\n", "        out[i] = 0.0\n")
    assert "out[:] = 2 * x[:] - y[:]" in cell.source and "out[i] = 0.0" in cell.source
    return nb


def test_generate_and_autograde_round_trip(tmp_path):
    pytest.importorskip("nbgrader", reason="nbgrader is not installed: pip install -e '.[test]' installs it")
    from nbgrader.api import Gradebook

    start = time.monotonic()
    course = str(tmp_path / "course")
    assert nbgrader_course.write_course(course, [LESSON]) == [LESSON]
    source = nbformat.read(os.path.join(course, "source", LESSON, LESSON + ".ipynb"), as_version=4)
    full = nbgrader_course.max_points(source)
    assert full == 3  # 00a-launch (code): 2, 00a-occupancy (a value): 1

    _nbgrader(course, "generate_assignment", LESSON, timeout=300)
    release = os.path.join(course, "release", LESSON)
    assert sorted(os.listdir(release)) == sorted([LESSON + ".ipynb"] + list(nbgrader_course.COPIED))
    released = nbformat.read(os.path.join(release, LESSON + ".ipynb"), as_version=4)
    # the released notebook's code is the student notebook's (python -m gemm_lessons.course.student):
    # the course's skeletons, not nbgrader's generic stub
    mine = student.student_notebook(nbformat.read(os.path.join(REPO, "notebooks", LESSON + ".ipynb"), as_version=4))
    theirs = [c.source for c in released.cells if not _meta(c)["grade"]]
    assert [_without_check(c.source) for c in mine.cells] == theirs
    assert not any("### BEGIN SOLUTION" in s or "NotImplementedError()" in s for s in theirs)

    names = ("teacher", "student", "gpu_like", "bypass", "host")
    for name, nb in [("teacher", source), ("student", released), ("gpu_like", _gpu_like(source)),
                     ("bypass", _bypass(released)), ("host", _host_computed(source))]:
        os.makedirs(os.path.join(course, "submitted", name, LESSON))
        nbformat.write(nb, os.path.join(course, "submitted", name, LESSON, LESSON + ".ipynb"))
    _nbgrader(course, "autograde", LESSON, timeout=600)

    with Gradebook("sqlite:///" + os.path.join(course, "gradebook.db")) as gb:
        scores = {name: (gb.find_submission(LESSON, name).score, gb.find_submission(LESSON, name).max_score)
                  for name in names}
        launch = {name: (gb.find_grade("00a-launch-result", LESSON, LESSON, name).score,
                         gb.find_grade("00a-launch-technique", LESSON, LESSON, name).score) for name in names}
    assert scores["teacher"] == (full, full)
    assert scores["gpu_like"] == (full, full)  # the warning did not reach stderr in the graded cell
    assert scores["student"][1] == full and scores["student"][0] < full
    assert scores["bypass"] == (0, full)  # redefining exercises.check and the registry changed nothing
    assert launch["host"] == (1, 0) and scores["host"] == (full - 1, full)  # the result's point, not the technique's
    assert launch["teacher"] == (1, 1) and launch["student"] == launch["bypass"] == (0, 0)
    # the failure message is the check's feedback: what nbgrader validate and the feedback show
    host = nbformat.read(os.path.join(course, "autograded", "host", LESSON, LESSON + ".ipynb"), as_version=4)
    technique = next(c for c in host.cells if _meta(c) and _meta(c)["grade_id"] == "00a-launch-technique")
    errors = [o for o in technique.outputs if o.get("output_type") == "error"]
    assert errors and "changed after the last kernel" in errors[0]["evalue"], technique.outputs
    for name in scores:  # no graded cell wrote to stderr
        graded = nbformat.read(os.path.join(course, "autograded", name, LESSON, LESSON + ".ipynb"), as_version=4)
        for cell in graded.cells:
            if _meta(cell) and _meta(cell)["grade"]:
                assert not [o for o in cell.outputs if o.get("name") == "stderr"], (name, cell.source)
    print(f"nbgrader round trip on {LESSON}: {time.monotonic() - start:.0f} s")


def _graded_files(path):
    """(exercise, the file a graded cell checks for the teacher's solution) of a lesson: the
    context written into the graded cell, then the solution cell's code."""
    import ast
    from gemm_lessons.course import grading
    nb = nbgrader_course.nbgrader_notebook(nbformat.read(path, as_version=4))
    for i, cell in enumerate(nb.cells):
        if _meta(cell)["grade"] and "_grade(" in cell.source:
            call = next(n for n in ast.walk(ast.parse(cell.source)) if isinstance(n, ast.Call)
                        and getattr(n.func, "id", "") == "_grade")
            exercise_id, context = call.args[0].value, call.args[2].value
            yield exercise_id, grading.source_file(nb.cells[i - 1].source, context)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=os.path.basename)
def test_a_graded_cell_gives_the_fresh_process_what_the_solution_uses(path, tmp_path):
    """The context each graded cell passes (imports and assignments from earlier cells) is enough:
    the teacher's solution, checked as the fresh process checks it, passes (the kernel exercises:
    it compiles and every name it reads is defined; their checks run in the round trip and in
    tests/teaching/exercises)."""
    import ast
    import builtins
    from gemm_lessons.teaching.exercises import cli
    for exercise_id, text in _graded_files(path):
        assert "### BEGIN SOLUTION" not in text.split("\n\n", 1)[0]  # no solution in the context
        file = tmp_path / f"{exercise_id}.py"
        file.write_text(text)
        if not exercises.judges_technique(exercise_id):
            fb = cli.check_file(exercise_id, str(file), time_limit=0)
            assert fb.ok, (exercise_id, str(fb))
            continue
        tree = ast.parse(text)
        bound = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        bound |= {(a.asname or a.name).split(".")[0] for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))
                  for a in n.names}
        bound |= {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
        bound |= {n.arg for n in ast.walk(tree) if isinstance(n, ast.arg)}
        read = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        assert read - bound - set(dir(builtins)) == set(), (exercise_id, read - bound - set(dir(builtins)))


def test_the_graded_cell_finds_the_solution_cell_in_the_history():
    """IPython's In: the solution cell is the last input before the graded cell that is not itself
    a graded cell (a graded cell run twice, or the technique cell after the result cell)."""
    from gemm_lessons.course import grading
    graded = nbgrader_course.graded_cell_source("00-flops", "answer", 1)
    assert graded.startswith(grading.GRADED_MARK)
    assert grading.solution_source(["", "import x", "answer = 3", graded]) == "answer = 3"
    assert grading.solution_source(["", "answer = 3", graded, graded]) == "answer = 3"
    fb = grading.grade("00-flops", ["", "answer = (2 * 100 - 1) * 300 * 200", graded])
    assert fb.ok and fb.result_ok and str(fb).startswith("Correct [00-flops]")
    fb = grading.grade("00-flops", ["", "answer = 1\nfrom gemm_lessons.teaching import exercises\n"
                                        "exercises.check = lambda *a: True", graded])
    assert not fb.ok and "1 is not the FLOP count" in fb.failure()


def test_a_solution_cell_with_ipython_magics_is_graded_in_plain_python():
    """IPython's In holds magics as get_ipython() calls; the fresh process has no IPython: line
    magics and shell commands are left out, a cell magic's body runs."""
    from gemm_lessons.course import grading
    graded = nbgrader_course.graded_cell_source("00-flops", "answer", 1)
    line_magic = "get_ipython().run_line_magic('timeit', '1 + 1')\nanswer = (2 * 100 - 1) * 300 * 200"
    assert grading.grade("00-flops", ["", line_magic, graded]).ok
    cell_magic = "get_ipython().run_cell_magic('time', '', 'answer = (2 * 100 - 1) * 300 * 200\\n')"
    assert grading.grade("00-flops", ["", cell_magic, graded]).ok
    assert not grading.grade("00-flops", ["", cell_magic.replace("(2 * 100 - 1)", "2 * 100"), graded]).ok


def test_the_release_never_opens_the_teacher_notebook_on_colab():
    """Where the course's repository is set, a lesson's title carries a Colab badge for the teacher
    notebook (solutions included): the nbgrader source notebook, and so the release, has none."""
    from gemm_lessons.course import colab

    title = colab.with_badge("# 01: naive\nThe idea.", colab.colab_url("octo/gemm-lessons", "main", "01_naive"))
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(title), nbformat.v4.new_code_cell("x = 1")])
    assert nbgrader_course.nbgrader_notebook(nb).cells[0].source == "# 01: naive\nThe idea."
