"""The exercises package's layout: each checker lives in its lesson's module under a name that says
what it checks, and no module of the package grows past 600 lines."""
import glob
import os

from gemm_lessons.teaching import exercises

PACKAGE = os.path.dirname(exercises.__file__)


def test_each_checker_is_named_and_lives_in_its_lessons_module():
    for exercise_id in exercises.ids():
        fn, hint = exercises._CHECKS[exercise_id]
        lesson = exercise_id.split("-")[0]
        assert fn.__module__ == f"gemm_lessons.teaching.exercises.lesson{lesson}", (exercise_id, fn.__module__)
        assert fn.__name__.startswith("check_"), (exercise_id, fn.__name__)
        assert hint


def test_checker_names_are_unique():
    names = [fn.__name__ for fn, _ in exercises._CHECKS.values()]
    assert len(names) == len(set(names))


def test_no_module_over_600_lines():
    for path in glob.glob(os.path.join(PACKAGE, "*.py")):
        with open(path) as f:
            lines = sum(1 for _ in f)
        assert lines <= 600, f"{os.path.basename(path)}: {lines} lines"
