"""Lessons 05-10's kernel exercises, checked on the lessons' own exercise cells (simulator).

For each kernel exercise: the teacher cell's solution passes; a kernel that skips the lesson's
technique fails with a message that names it; a kernel with a wrong result fails.  The kernels
are the exercise cells of lessons/*.py, executed here (the teacher version, the student version
from gemm_lessons.student, or the teacher version with one planted change).
"""
import glob
import linecache
import os
import re

import pytest

from conftest import REPO, requires_simulator
from gemm_lessons import exercises, student

LESSONS = {"05": "05_transposed_smem_and_wide_loads", "06": "06_bank_conflicts", "07": "07_double_buffering",
           "08": "08_warp_tiling_and_tuning", "09": "09_transpose", "10": "10_leaderboard"}


def exercise_cell(exercise_id):
    """The text of the code cell of lessons/NN_*.py that calls exercises.check(exercise_id, ...)."""
    path = os.path.join(REPO, "lessons", LESSONS[exercise_id[:2]] + ".py")
    cells = re.split(r"^# %%.*$", open(path).read(), flags=re.M)
    found = [c for c in cells if f'exercises.check("{exercise_id}"' in c]
    assert len(found) == 1, f"{exercise_id}: {len(found)} cells"
    return found[0].strip("\n") + "\n"


_count = iter(range(10 ** 6))


def run_cell(text, replace=(), extra=None):
    """Execute a cell's text without its exercises.check line (after the (old, new) replacements,
    each of which must apply); returns (namespace, the id and argument name of its check)."""
    for old, new in replace:
        assert old in text, f"planted change does not apply: {old!r}"
        text = text.replace(old, new)
    check = re.search(r'^exercises\.check\("([^"]+)", (\w+)\)$', text, flags=re.M)
    body = text[:check.start()] + text[check.end():]
    name = f"<exercise cell {next(_count)}>"
    linecache.cache[name] = (len(body), None, body.splitlines(True), name)
    ns = dict(extra or {})
    exec(compile(body, name, "exec"), ns)
    return ns, check.group(1), check.group(2)


def check_cell(exercise_id, replace=(), student_version=False, extra=None):
    text = exercise_cell(exercise_id)
    if student_version:
        text = student.strip_solutions(text)
    ns, ex, arg = run_cell(text, replace, extra)
    assert ex == exercise_id
    return exercises.check(exercise_id, ns[arg])
