"""Hints in steps: a failed check says what is wrong and where, with the first hint;
``exercises.hint(id)`` gives the next one, a step at a time (counted per exercise in the session),
the last says it is the last, and no hint gives the answer away."""
import os
import re

import pytest
from numba import cuda

from conftest import REPO, requires_simulator
from gemm_lessons.teaching import exercises
from gemm_lessons.teaching.exercises import core
from test_checks import RIGHT

LESSON_IDS = [i for i in exercises.ids() if not i.startswith("test-")]


@pytest.fixture(autouse=True)
def fresh_session():
    """Each test starts with no hint shown (the counter is the session's, per exercise)."""
    saved = dict(core._HINTS_SHOWN)
    core._HINTS_SHOWN.clear()
    yield
    core._HINTS_SHOWN.clear()
    core._HINTS_SHOWN.update(saved)


def test_hint_steps_one_at_a_time_and_the_last_says_so():
    total = len(core._HINTS["01-kernel"])
    seen = [exercises.hint("01-kernel") for _ in range(total + 1)]
    assert [h.step for h in seen] == list(range(1, total + 1)) + [total]
    for h in seen[:-2]:
        assert str(h).startswith(f"Hint {h.step} of {total} [01-kernel]: ")
        assert 'The next one: exercises.hint("01-kernel").' in str(h) and "last" not in str(h)
    for h in seen[-2:]:  # the last, and the last again
        assert str(h).endswith("This is the last hint.") and h.text == core._HINTS["01-kernel"][-1]
    assert seen[-1]._repr_markdown_().startswith("💡 Hint ")


def test_the_counter_is_per_exercise_and_a_step_can_be_read_again():
    assert exercises.hint("00-flops").step == 1
    assert exercises.hint("00-flops").step == 2
    assert exercises.hint("02-loads").step == 1
    again = exercises.hint("00-flops", step=1)
    assert again.step == 1 and again.text == core._HINTS["00-flops"][0]
    assert exercises.hint("00-flops").step == 3  # reading one again does not go back


def test_a_failure_shows_the_first_hint_and_points_to_the_next():
    fb = exercises.check("02-loads", 2 * 1024 * 2048 * 512)
    first, more = core._HINTS["02-loads"][0], len(core._HINTS["02-loads"]) - 1
    assert not fb.ok and str(fb).startswith("Not yet [02-loads]: 2,147,483,648 is not the fewest global loads")
    assert f"Hint: {first} ({more} more hints, one at a time: exercises.hint(\"02-loads\").)" in str(fb)
    assert exercises.hint("02-loads").step == 2


def test_a_checker_can_quote_the_hint_of_the_stage_it_failed_at():
    """09-in-flight: a wrong byte count quotes hint 1; right bytes with a share above 1 quotes hint 3
    (the formula with its min), the last, which then counts as shown."""
    hints = core._HINTS["09-in-flight"]
    fb = exercises.check("09-in-flight", (4, 0.37))
    assert f"Hint: {hints[0]} (2 more hints" in str(fb)
    fb = exercises.check("09-in-flight", (16, 1.48))
    assert not fb.ok and str(fb).endswith(f"Hint: {hints[2]}") and hints[0] not in str(fb)
    assert exercises.hint("09-in-flight").step == 3


def test_an_unknown_exercise_gets_a_hint_that_lists_the_known_ones():
    h = exercises.hint("99-nothing")
    assert h.step == 0 and str(h).startswith("No hint [99-nothing]: unknown exercise; known: 00-flops")


def test_every_exercise_has_hints_in_steps():
    for exercise_id in LESSON_IDS:
        hints = core._HINTS[exercise_id]
        assert len(hints) >= 3 and len(set(hints)) == len(hints), exercise_id
        assert hints[0] == core._CHECKS[exercise_id][1]  # the one a failure quotes


def _numbers(value):
    """How a numeric answer could be written in a hint."""
    if isinstance(value, (tuple, list)):
        return [repr(tuple(value))] + [s for v in value if not isinstance(v, str) and v > 9 for s in _numbers(v)]
    forms = {f"{value:g}", f"{value:,.6g}", f"{value:.3g}", f"{value:.1f}"}
    if float(value).is_integer():
        forms |= {str(int(value)), f"{int(value):,}"}
    return sorted(forms)


def test_no_hint_gives_the_number_away():
    for exercise_id, answer in RIGHT.items():
        if callable(answer):
            continue
        for form in _numbers(answer):
            for h in core._HINTS[exercise_id]:
                assert form not in h, (exercise_id, form, h)


def test_no_hint_holds_a_whole_solution_block():
    """No hint quotes every code line of one of the lesson's solution blocks."""
    for name in sorted(os.listdir(os.path.join(REPO, "lessons"))):
        text = open(os.path.join(REPO, "lessons", name)).read()
        for cell in re.split(r"^# %%.*$", text, flags=re.M):
            ids = re.findall(r'^exercises\.check\("([^"]+)"', cell, flags=re.M)
            for block in re.findall(r"### BEGIN SOLUTION[^\n]*\n(.*?)### END SOLUTION", cell, flags=re.S):
                lines = [re.sub(r"\s+#.*$", "", l).strip() for l in block.split("\n")]
                lines = [l for l in lines if l and not l.startswith("#")]
                for h in core._HINTS[ids[0]]:
                    assert not all(l in h for l in lines), (ids[0], h)


@requires_simulator
def test_a_crash_in_a_kernel_says_where_in_the_students_code():
    @cuda.jit
    def unguarded(x, y, out):
        i = cuda.grid(1)
        out[i] = 2 * x[i] - y[i]  # no guard: the last block writes past the end

    def launch(x, y, out):
        unguarded[(out.size + 127) // 128, 128](x, y, out)

    line = unguarded.py_func.__code__.co_firstlineno + 3
    fb = exercises.check("00a-launch", launch)
    assert not fb.ok and "IndexError" in str(fb)
    assert f"(line {line} of unguarded). Hint: " in str(fb)  # the kernel's line, not the simulator's
