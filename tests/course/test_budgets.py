"""The lesson standard's word budgets: each lesson's main path, and the whole course's."""
import os

import nbformat
import pytest

from conftest import REPO
from gemm_lessons.course import budget

# every lesson is written to the standard: its main path must fit its budget
LESSONS = ["00a", "00", "01", "02", "03", "04", "05", "06", "07", "08", "09", "10", "11"]


def test_budgets_follow_the_lesson_plan():
    assert budget.budget("notebooks/00a_primer.ipynb") == 3000
    assert budget.budget("notebooks/11_from_kernel_to_library.ipynb") == 3000
    assert budget.budget("notebooks/03_register_tiling_1d.ipynb") == 2000


def test_counting_stops_at_the_lab_notes(tmp_path):
    nb = nbformat.v4.new_notebook()
    code = nbformat.v4.new_code_cell("print()")
    code.outputs = [nbformat.v4.new_output("stream", name="stdout", text="three printed words"),
                    nbformat.v4.new_output("display_data", data={"image/png": "x", "text/plain": "<Figure>"}),
                    nbformat.v4.new_output("execute_result", data={"text/markdown": "a b", "text/plain": "x y z"})]
    nb.cells = [nbformat.v4.new_markdown_cell("# Title\n\none two"), code,
                nbformat.v4.new_markdown_cell("## Lab notes\n\nnot counted at all"),
                nbformat.v4.new_markdown_cell("nor this")]
    path = tmp_path / "05_x.ipynb"
    nbformat.write(nb, str(path))
    assert budget.main_path_words(str(path)) == 4 + 3 + 2  # markdown, stream, markdown over plain; no image


@pytest.mark.parametrize("number", LESSONS)
def test_each_lesson_fits_its_budget(number):
    path = next(p for p in budget.notebooks() if os.path.basename(p).startswith(number + "_"))
    assert budget.main_path_words(path) <= budget.budget(path)


def test_the_whole_main_path_fits_the_courses_budget():
    words = budget.lesson_words()
    assert sorted(words) == sorted(LESSONS)  # every lesson counted, no appendix
    assert sum(words.values()) <= budget.COURSE_WORDS, f"{sum(words.values()):,} words, over {budget.COURSE_WORDS:,}"


def test_course_md_gives_each_lessons_words_and_reading_time():
    """COURSE.md's time table agrees with the notebooks (python -m gemm_lessons.course.budget --course)."""
    with open(os.path.join(REPO, "COURSE.md")) as f:
        text = f.read()
    assert budget.course_table(text, budget.lesson_words()) == text


def test_the_readme_gives_the_courses_reading_time():
    """The README's hours of reading are COURSE.md's total (python -m gemm_lessons.course.budget --course)."""
    with open(os.path.join(REPO, "README.md")) as f:
        text = f.read()
    assert budget.COURSE_HOURS.search(text), "README.md lost its sentence on the hours of reading"
    assert budget.reading_hours(text, budget.lesson_words()) == text


def test_course_table_rewrites_words_minutes_and_total():
    text = ("| 01 | [`01_naive`](x) | 9 | 1 min | 38 s | 01-kernel |\n"
            "| 02 | [`02_x`](y) | 9 | 1 min | ~1 min (est.) | 02-kernel |\n| | all 2 | 18 | 2 min | ~2 min | 2 |\n")
    out = budget.course_table(text, {"01": 1000, "02": 2100})
    assert "| 01 | [`01_naive`](x) | 1,000 | 5 min | 38 s | 01-kernel |" in out
    assert "| 02 | [`02_x`](y) | 2,100 | 10 min |" in out and "| | all 2 | 3,100 | 16 min | ~2 min | 2 |" in out
