"""Planted answers for every exercise (issue 32): each check must pass the right answers however
they are written and fail the others with the diagnosis they deserve.

tests/data/planted/<exercise>/ holds, as files ``python -m gemm_lessons.check`` takes (what the
exercise cell defines), answers of three kinds, named by their first word:

* ``right-*``: correct answers written differently from the lesson's solution (other loops,
  helpers, chained indexing ``sA[k][m]``, lists for tuples, numpy scalars): they must pass;
* ``skip-*``: the right result without the lesson's technique (uncoalesced, not staged, loads
  not in flight during the FMAs, a result computed on the host): they must fail;
* ``wrong-*``: a wrong result or a wrong number: they must fail.

A failing answer's first line, ``# expect: WORDS | WORDS``, lists the key words of the diagnosis
it should get: each must appear in the feedback (not the whole message, which may be reworded).
The lesson's own solution is checked too: by the tests named in SOLUTION_TESTED_ELSEWHERE for the
kernel exercises (on the lesson's exercise cell), here for the others.  Kernel answers run with
time_limit=0 (no line tracer: twice as fast; the time limit is tested in test_checks.py).

Exercises whose answer is a value have no technique to skip: NO_TECHNIQUE."""
import glob
import os
import re

import pytest

from conftest import REPO
from gemm_lessons.teaching import exercises
from gemm_lessons.teaching.exercises import cli, core

PLANTED = os.path.join(REPO, "tests", "data", "planted")
KINDS = ("right", "skip", "wrong")
# a number, a pair, or a function of a number: nothing but the value is asked
NO_TECHNIQUE = {"00-flops", "00-intensity", "00a-occupancy", "01-sectors", "02-loads", "04-ratio", "05-stage-a",
                "09-in-flight", "10-next-step"}
# the kernel exercises' own solutions, checked on the lesson's exercise cell by these tests
SOLUTION_TESTED_ELSEWHERE = {
    "01-kernel": "test_lessons_01_04.py::test_the_lessons_solution_passes",
    "02-kernel": "test_lessons_01_04.py::test_the_lessons_solution_passes",
    "03-kernel": "test_lessons_01_04.py::test_the_lessons_solution_passes",
    "04-kernel": "test_lessons_01_04.py::test_the_lessons_solution_passes",
    "05-transpose-a": "test_lessons_05_10.py::test_05_solution_passes",
    "06-conflict-free": "test_lessons_05_10.py::test_06_solution_passes_and_skeleton_fails_naming_the_conflicts",
    "07-double-buffer": "test_lessons_05_10.py::test_07_solution_passes",
    "08-warp-tile": "test_lessons_05_10.py::test_08_solution_passes_and_lesson_07_layout_fails_naming_warp_tiles",
    "09-symmetrize": "test_lessons_05_10.py::test_09_solution_passes_and_skeleton_fails_naming_coalescing",
    "10-next-step": "test_lessons_05_10.py::test_10_solution_passes_and_wrong_answers_fail",
    "11-split-k": "test_lesson_11.py::test_solution_passes_and_names_the_technique",
}
# what an exercise cell uses from the lesson's earlier cells: put before the cell's text
PREAMBLE = {
    "00a-launch": "from numba import cuda\n",
    "09-in-flight": ("from gemm_lessons.model import limiter\nfrom gemm_lessons.teaching import limiter_table\n"
                     "TILE, ROWS = 32, 8\nneed = limiter_table.machine().in_flight_needed_per_sm\n"),
}


def planted():
    """(exercise, kind, file name) of every planted answer."""
    found = []
    for path in sorted(glob.glob(os.path.join(PLANTED, "*", "*.py"))):
        exercise_id, name = os.path.basename(os.path.dirname(path)), os.path.basename(path)
        found.append((exercise_id, name.split("-", 1)[0], name))
    return found


def expected_words(path):
    with open(path) as f:
        first = f.readline()
    m = re.match(r"#\s*expect:\s*(.+)$", first.strip())
    return [w.strip() for w in m.group(1).split("|")] if m else []


def test_every_exercise_has_its_planted_answers():
    by = {}
    for exercise_id, kind, name in planted():
        assert kind in KINDS, name
        by.setdefault(exercise_id, {k: 0 for k in KINDS})[kind] += 1
    assert set(by) == set(exercises.ids()), set(exercises.ids()) ^ set(by)
    for exercise_id, counts in by.items():
        assert counts["right"] >= 2, (exercise_id, "two differently written right answers")
        assert counts["wrong"] >= 1, (exercise_id, "a wrong answer")
        if exercise_id not in NO_TECHNIQUE:
            assert counts["skip"] >= 1, (exercise_id, "an answer that skips the technique")


def test_every_failing_answer_says_what_its_diagnosis_must_hold():
    for exercise_id, kind, name in planted():
        if kind != "right":
            assert expected_words(os.path.join(PLANTED, exercise_id, name)), (exercise_id, name)


IDS = lambda v: v if isinstance(v, str) else ""  # noqa: E731  (parametrize ids: the exercise, kind and file)


# each is a unit of its own for pytest-xdist (conftest.py's scheduler): on a GPU a kernel answer takes about 40 s
@pytest.mark.parametrize("exercise_id,kind,name", planted(), ids=IDS)
def test_planted_answer(exercise_id, kind, name):
    check_planted(exercise_id, kind, name)


def check_planted(exercise_id, kind, name):
    """A right answer passes; a skipping or wrong one fails with a hint and its diagnosis's words."""
    path = os.path.join(PLANTED, exercise_id, name)
    fb = cli.check_file(exercise_id, path, time_limit=0)
    text = str(fb)
    if kind == "right":
        assert fb.ok, text
        return
    assert not fb.ok, text
    assert "Hint:" in text, text
    for words in expected_words(path):
        assert words in text, f"{words!r} not in: {text}"


def _lesson_cell(exercise_id):
    found = []
    for path in sorted(glob.glob(os.path.join(REPO, "lessons", "*.py"))):
        with open(path) as f:
            found += [c for c in re.split(r"^# %%.*$", f.read(), flags=re.M) if f'exercises.check("{exercise_id}",' in c]
    assert len(found) == 1, exercise_id
    return re.sub(r"^exercises\.check\(.*$", "", found[0], flags=re.M)


@pytest.mark.parametrize("exercise_id", sorted(set(exercises.ids()) - set(SOLUTION_TESTED_ELSEWHERE)))
def test_the_lessons_solution_passes(exercise_id, tmp_path):
    path = tmp_path / "solution.py"
    path.write_text(PREAMBLE.get(exercise_id, "") + _lesson_cell(exercise_id))
    fb = cli.check_file(exercise_id, str(path), time_limit=0)
    assert fb.ok, str(fb)


def test_the_solutions_tested_elsewhere_are_tested_there():
    here = os.path.dirname(__file__)
    assert set(SOLUTION_TESTED_ELSEWHERE) <= set(exercises.ids())
    for where in SOLUTION_TESTED_ELSEWHERE.values():
        module, test = where.split("::")
        with open(os.path.join(here, module)) as f:
            assert f"def {test}(" in f.read(), where


# the right answer as a failure message would print it: a wrong answer's feedback must not
RIGHT_AS_TEXT = {"00-flops": ["11,940,000", "11940000"], "00-intensity": ["204.8"],
                 "00a-occupancy": ["(3, 'shared memory')", "3 blocks per SM"],
                 "01-sectors": ["(2, 2)"], "02-loads": ["50,331,648"], "04-ratio": ["(16, 256)"],
                 "05-stage-a": ["(0, 4)"]}  # 05-stage-a: thread 1's float4, where both wrong answers fail


@pytest.mark.parametrize("exercise_id", sorted(RIGHT_AS_TEXT))
def test_no_failure_states_the_answer(exercise_id):
    for _, kind, name in [p for p in planted() if p[0] == exercise_id and p[1] == "wrong"]:
        fb = cli.check_file(exercise_id, os.path.join(PLANTED, exercise_id, name))
        for text in RIGHT_AS_TEXT[exercise_id]:
            assert text not in str(fb), (name, str(fb))


def test_the_gpu_paths_instrument_rebuilds_a_kernel_that_calls_a_device_function():
    """On a GPU, lessons 01-04's instrument runs the kernel rebuilt from its source in a child
    process on the simulator: the device functions it calls go with it."""
    from gemm_lessons.teaching.exercises import kernels_01_04
    ns = cli.run_file(os.path.join(PLANTED, "01-kernel", "right-chained-helper.py"))
    spec = kernels_01_04._kernel_spec(ns["my_naive_1d"])
    assert list(spec["helpers"]) == ["dot"]
    child = kernels_01_04.technique_facts("01", ns["my_naive_1d"], in_child=True)
    assert child["A"]["per_read"] == 1.0 and child["B"]["per_read"] == 4.0


@pytest.mark.parametrize("exercise_id, name, lesson, line_of", [
    ("01-kernel", "wrong-mapping.py", "01", "C[row, col] ="), ("02-kernel", "wrong-no-zeros.py", "02", "acc += sA")])
def test_the_gpu_paths_diagnosis_of_a_wrong_result_is_the_simulators(exercise_id, name, lesson, line_of):
    """On a GPU the access log's diagnosis runs in a child process on the simulator, on the kernel
    made again from its file: the same sentence as in this process (on the simulator), with the
    line of the student's code."""
    from gemm_lessons.core import backend
    from gemm_lessons.measure.problems import SIM_SHAPES
    from gemm_lessons.teaching.exercises import evidence, kernels_01_04
    path = os.path.join(PLANTED, exercise_id, name)
    ns = cli.run_file(path)
    kernel = next(v for k, v in ns.items() if k.startswith("my_"))
    launch = kernels_01_04._LAUNCHERS[lesson]
    child = evidence.diagnose(launch, kernel, SIM_SHAPES[0][:3], in_child=True)
    with open(path) as f:
        line = next(n for n, text in enumerate(f, 1) if line_of in text)
    assert child and f"(line {line} of your code)" in child, child
    if backend.SIMULATOR:
        which = lambda text: re.sub(r"\[[\d, ]+\]", "[...]", text)  # noqa: E731 (the simulator's threads race: the first element found varies)
        assert which(child) == which(evidence.diagnose(launch, kernel, SIM_SHAPES[0][:3], in_child=False))
