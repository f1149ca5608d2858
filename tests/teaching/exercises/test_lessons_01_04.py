"""The kernel-writing exercises of lessons 01-04 and their predictions.

Every kernel here is the lesson's own exercise cell with the student's part (between BEGIN
and END SOLUTION) replaced: by the lesson's solution, which must pass; by a kernel that gets
the right result without the lesson's technique, which must fail with a message naming the
technique; and by one with a wrong result, which must fail as a wrong result.
"""
import glob
import json
import linecache
import os
import re
import textwrap

import nbformat
import numpy as np
import pytest
from numba import cuda, float32

from gemm_lessons.core import backend
from gemm_lessons.teaching import exercises
from gemm_lessons.teaching.exercises import kernels_01_04
from gemm_lessons.course import student

from conftest import REPO, requires_simulator

KERNEL_IDS = ["01-kernel", "02-kernel", "03-kernel", "04-kernel"]
# test_checks.py asks every registered exercise to be tested; these are tested here
COVERED = set(KERNEL_IDS)
LESSONS = {"01": "01_naive", "02": "02_shared_memory_tiles", "03": "03_register_tiling_1d",
           "04": "04_register_tiling_2d"}


def exercise_cell(exercise_id, notebook_dir=os.path.join(REPO, "notebooks")):
    nb = nbformat.read(os.path.join(notebook_dir, LESSONS[exercise_id[:2]] + ".ipynb"), as_version=4)
    cells = [c.source for c in nb.cells if c.cell_type == "code" and f'exercises.check("{exercise_id}"' in c.source]
    assert len(cells) == 1, f"one cell checks {exercise_id}"
    return cells[0]


class _Capture:
    """Stands in for gemm_lessons.teaching.exercises in an exec'd cell: keeps the answer it is given."""

    def check(self, exercise_id, answer):
        self.answer = answer


def answer_of(cell, body=None):
    """Exec an exercise cell, its solution replaced by ``body`` (None: the lesson's solution);
    returns what the cell passes to exercises.check."""
    if body is not None:
        m = re.search(r"\n([ \t]*)### BEGIN SOLUTION[^\n]*\n.*?### END SOLUTION[^\n]*", cell, re.S)
        cell = cell[:m.start()] + "\n" + textwrap.indent(textwrap.dedent(body).strip("\n"), m.group(1)) + cell[m.end():]
    ns = {"cuda": cuda, "np": np, "float32": float32, "exercises": _Capture()}
    exec(compile(cell, _remember(cell), "exec"), ns)
    return ns["exercises"].answer


def _remember(source):
    """A file name for exec'd code whose source inspect can find, as IPython gives each cell."""
    name = f"<exercise cell {len(linecache.cache)}-{hash(source)}>"
    linecache.cache[name] = (len(source), None, source.splitlines(True), name)
    return name


def check(exercise_id, body=None):
    # time_limit=0: without the line tracer that stops endless kernels (tested in
    # test_checks.py), the simulator runs these kernels twice as fast
    return exercises.check(exercise_id, answer_of(exercise_cell(exercise_id), body), time_limit=0)


# --- the student's part, written three ways per lesson -------------------------------------
UNCOALESCED_01 = """
i = cuda.grid(1)
M, N = C.shape
if i < M * N:
    row, col = i % M, i // M  # consecutive i walk DOWN a column of C
    acc = np.float32(0.0)
    for k in range(A.shape[1]):
        acc += A[row, k] * B[k, col]
    C[row, col] = alpha * acc + (beta * C[row, col] if beta != 0 else np.float32(0.0))
"""
WRONG_01 = UNCOALESCED_01.replace("i % M, i // M", "i // N, i % N").replace("range(A.shape[1])",
                                                                          "range(A.shape[1] - 1)")

NOT_STAGED_02 = """
for k in range(k0, min(k0 + BK, K)):  # straight from global memory
    if row < M and col < N:
        acc += A[row, k] * B[k, col]
"""
WRONG_02 = """
sA[ty, tx] = A[row, k0 + tx] if row < M and k0 + tx < K else np.float32(0.0)
for l in range(BK // BM):
    r = ty + l * BM
    sB[r, tx] = B[k0 + r, col] if k0 + r < K and col < N else np.float32(0.0)
cuda.syncthreads()
for k in range(BK - 1):  # the last k of every slice is left out
    acc += sA[ty, k] * sB[k, tx]
cuda.syncthreads()
"""

A_FROM_GLOBAL_03 = """
for k in range(BK):
    if row0 + t_row < M and k0 + k < K:
        a = A[row0 + t_row, k0 + k]  # from global memory, not from sA
        for j in range(TN):
            acc[j] += a * sB[k, t_col + j]
"""
NO_REGISTER_03 = """
for k in range(BK):
    for j in range(TN):
        acc[j] += sA[t_row, k] * sB[k, t_col + j]  # sA read again for every product
"""
WRONG_03 = """
for k in range(BK):
    a = sA[t_row, k]
    for j in range(TN):
        acc[j] += a * sB[k, t_col]  # the same column for all TN results
"""

NO_REGISTER_TILE_04 = """
for k in range(BK):
    for i in range(TM):
        for j in range(TN):
            acc[i, j] += sA[t_row + i, k] * sB[k, t_col + j]  # two shared loads per FMA
"""
ONE_D_04 = """
for k in range(BK):
    for j in range(TN):
        b_reg[j] = sB[k, t_col + j]
    for i in range(TM):
        for j in range(TN):
            acc[i, j] += sA[t_row + i, k] * b_reg[j]  # B from registers, A not
"""
A_FROM_GLOBAL_04 = """
for k in range(BK):
    for i in range(TM):
        r = row0 + t_row + i
        a_reg[i] = A[r, k0 + k] if r < M and k0 + k < K else np.float32(0.0)
    for j in range(TN):
        b_reg[j] = sB[k, t_col + j]
    for i in range(TM):
        for j in range(TN):
            acc[i, j] += a_reg[i] * b_reg[j]
"""
WRONG_04 = """
for k in range(BK):
    for i in range(TM):
        a_reg[i] = sA[t_row + i, k]
    for j in range(TN):
        b_reg[j] = sB[k, t_col + i]  # i, not j
    for i in range(TM):
        for j in range(TN):
            acc[i, j] += a_reg[i] * b_reg[j]
"""

SKIPS_TECHNIQUE = [  # (exercise, student's part, words the message must contain)
    ("01-kernel", UNCOALESCED_01, ["Right result", "not coalesced", "33 sectors per k-step"]),
    ("02-kernel", NOT_STAGED_02, ["Right result", "not staged in shared memory", "MNK(1/8 + 1/32) = 10,240"]),
    ("03-kernel", A_FROM_GLOBAL_03, ["Right result", "reads global memory where it should read shared memory",
                                     "A 18,432 times (a tiled kernel: 2,048)"]),
    ("03-kernel", NO_REGISTER_03, ["Right result", "register reuse is missing", "8 shared-memory loads"]),
    ("04-kernel", NO_REGISTER_TILE_04, ["Right result", "no 2-D register tile (outer product)",
                                        "32 shared-memory loads"]),
    ("04-kernel", ONE_D_04, ["Right result", "no 2-D register tile (outer product)", "20 shared-memory loads"]),
    ("04-kernel", A_FROM_GLOBAL_04, ["Right result", "reads global memory where it should read shared memory"]),
]
WRONG_RESULT = [("01-kernel", WRONG_01), ("02-kernel", WRONG_02), ("03-kernel", WRONG_03), ("04-kernel", WRONG_04)]


@requires_simulator
@pytest.mark.parametrize("ex", KERNEL_IDS)
def test_the_lessons_solution_passes(ex):
    fb = check(ex)
    assert fb.ok, str(fb)
    assert str(fb).startswith(f"Correct [{ex}]: right result")


@requires_simulator
@pytest.mark.parametrize("ex, body, words", SKIPS_TECHNIQUE,
                         ids=["01-uncoalesced", "02-not-staged", "03-A-from-global", "03-no-register",
                              "04-no-register-tile", "04-1d-register-tile", "04-A-from-global"])
def test_a_right_result_without_the_technique_fails(ex, body, words):
    fb = check(ex, body)
    assert not fb.ok, str(fb)
    for w in words:
        assert w in str(fb), (w, str(fb))
    assert "Wrong result" not in str(fb) and "Hint:" in str(fb)


@requires_simulator
def test_a_right_but_uncoalesced_01_kernel_starts_from_the_coalescing_hint():
    """The first hint is about a right result; an uncoalesced kernel has one, so its feedback quotes
    the second (about coalescing), and exercises.hint gives the third next."""
    from gemm_lessons.teaching.exercises import core

    saved = dict(core._HINTS_SHOWN)
    core._HINTS_SHOWN.pop("01-kernel", None)
    try:
        fb = check("01-kernel", UNCOALESCED_01)
        hints = core._HINTS["01-kernel"]
        assert not fb.ok and f"Hint: {hints[1]} (1 more hint, one at a time" in str(fb), str(fb)
        assert hints[0] not in str(fb)
        assert exercises.hint("01-kernel").step == 3
    finally:
        core._HINTS_SHOWN.clear()
        core._HINTS_SHOWN.update(saved)


@requires_simulator
@pytest.mark.parametrize("ex, body", WRONG_RESULT, ids=[ex for ex, _ in WRONG_RESULT])
def test_a_wrong_result_fails_as_a_wrong_result(ex, body):
    fb = check(ex, body)
    assert not fb.ok and str(fb).startswith(f"Not yet [{ex}]: Wrong result: FAIL"), str(fb)
    assert "Hint:" in str(fb)


@requires_simulator
def test_the_instrument_runs_a_kernel_rebuilt_from_its_source():
    """On a GPU the access log runs the student's kernel rebuilt from its source in a simulator
    process: the source and constants travel, and the rebuilt kernel does what the original does
    (8 shared loads per k-step: sA is read again for each of the TN = 4 products)."""
    kernel = answer_of(exercise_cell("03-kernel"), NO_REGISTER_03)
    spec = kernels_01_04._kernel_spec(kernel)
    assert spec["constants"] == {"BM": 32, "BN": 32, "BK": 8, "TN": 4} and spec["tile"] == [32, 32, 8, 4]
    rebuilt = exercises.rebuild_kernel(spec)
    assert exercises.technique_facts("03", rebuilt) == {"shape": (64, 64, 16), "A_reads": 2048, "B_reads": 2048,
                                                       "shared_loads_per_kstep": 8.0, "race": None}
    kernel = answer_of(exercise_cell("02-kernel"))  # the tile sizes are notebook globals here
    assert kernels_01_04._kernel_spec(kernel)["constants"] == {"BM": 8, "BN": 32, "BK": 32}


@requires_simulator
def test_the_instrument_runs_in_a_child_process():
    """What a GPU machine does: the kernel's source goes to a child Python on the simulator
    (a 1-D register tile: 4 loads of sB and 16 of sA per k-step)."""
    kernel = answer_of(exercise_cell("04-kernel"), ONE_D_04)
    assert exercises.technique_facts("04", kernel, in_child=True) == {
        "shape": [64, 64, 16], "A_reads": 2048, "B_reads": 2048, "shared_loads_per_kstep": 20.0, "race": None}


def test_a_kernel_without_its_tile_attribute_is_told_so():
    kernel = answer_of(exercise_cell("02-kernel"))
    del kernel.tile
    fb = exercises.check("02-kernel", kernel)
    assert not fb.ok and "kernel.tile = (BM, BN, BK)" in str(fb)


# --- predict, then measure (lessons 02-04) ---------------------------------------------------
PREDICTIONS = {"02": ("smem_tile", "naive"), "03": ("reg1d", "smem_tile"), "04": ("reg2d", "reg1d")}


def _lesson_cells(lesson):
    nb = nbformat.read(os.path.join(REPO, "notebooks", LESSONS[lesson] + ".ipynb"), as_version=4)
    return [c.source for c in nb.cells if c.cell_type == "code"]


@pytest.mark.parametrize("lesson", sorted(PREDICTIONS))
def test_the_prediction_is_written_before_the_measurement_and_compared_after(lesson):
    kernel, baseline = PREDICTIONS[lesson]
    cells = _lesson_cells(lesson)
    predict = next(n for n, c in enumerate(cells) if c.startswith("my_speedup = None"))
    measure_ = next(n for n, c in enumerate(cells) if "measure_step.compare(" in c)
    compare = next(n for n, c in enumerate(cells) if "exercises.compare_prediction(my_speedup" in c)
    assert predict < measure_ < compare
    assert f'table.speedup("{kernel}", "{baseline}")' in cells[compare] and "table.source" in cells[compare]


def test_the_naive_warp_touches_the_sectors_and_cache_lines_lesson_01_counts():
    """Lesson 01's figure and Why: per k-step a coalesced warp touches 1 + 4 sectors in 1 + 1 cache
    lines, an uncoalesced one 32 + 1 sectors in 32 + 1 lines (its passes through the L1)."""
    from gemm_lessons.teaching import figures

    for coalesced, sectors, lines in ((True, (1, 4), (1, 1)), (False, (32, 1), (32, 1))):
        a, b = figures.naive_warp_addresses(coalesced, K=4096, N=4096)
        assert (figures.sectors(a), figures.sectors(b)) == sectors
        assert (figures.cache_lines(a), figures.cache_lines(b)) == lines


def test_lesson_01_predicts_both_mappings_before_measuring_and_explains_after():
    """Lesson 01: the student predicts both mappings' times from the limiter run's counts before
    any measurement, meets them after the one compare call, and the Why table follows."""
    cells = _lesson_cells("01")
    counts = next(n for n, c in enumerate(cells) if "limiter_table.work(rung)" in c)
    predict = next(n for n, c in enumerate(cells) if c.startswith("my_naive_ms = None\nmy_uncoalesced_ms = None"))
    measure_ = [n for n, c in enumerate(cells) if "measure_step.compare(" in c or "measure_step.recorded(" in c]
    compare = next(n for n, c in enumerate(cells) if "exercises.compare_prediction(my_naive_ms" in c)
    why = next(n for n, c in enumerate(cells) if "limiter_table.why(" in c)
    assert counts < predict < measure_[0] < compare < why and len(measure_) == 1
    assert "exercises.compare_prediction(my_uncoalesced_ms" in cells[compare] and "table.source" in cells[compare]
    assert '["naive", "naive_uncoalesced", "cublas"], measured=table' in cells[why]


@requires_simulator
@pytest.mark.parametrize("lesson", sorted(PREDICTIONS))
def test_on_the_simulator_the_prediction_meets_the_recorded_run(lesson):
    from gemm_lessons.teaching import measure_step as measure

    kernel, baseline = PREDICTIONS[lesson]
    table = measure.compare({kernel: None, baseline: None})  # the simulator reads results/
    text = str(exercises.compare_prediction(2.0, table.speedup(kernel, baseline), f"{kernel} vs {baseline}",
                                            table.source))
    assert table.speedup(kernel, baseline) > 0
    assert "recorded on NVIDIA" in text and "not measured here: CUDA simulator" in text, text
    assert "you predicted 2" in text and ("% above it" in text or "% below it" in text), text


# --- the student build --------------------------------------------------------------------
@pytest.fixture(scope="module")
def student_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("student")
    student.build(str(out))
    return str(out)


@pytest.mark.parametrize("ex", KERNEL_IDS)
def test_the_student_cell_runs_and_says_not_yet(ex, student_dir):
    """The skeleton defines every name the cell uses: it runs, and its check says 'Not yet'
    (the NotImplementedError of the part to write), not a NameError."""
    cell = exercise_cell(ex, student_dir)
    assert "YOUR CODE HERE" in cell or "your code here" in cell
    ns = {"cuda": cuda, "np": np, "float32": float32, "exercises": exercises}
    last = cell.rstrip().split("\n")[-1]
    source = cell.rstrip()[: -len(last)] + "_fb = " + last
    exec(compile(source, _remember(source), "exec"), ns)
    fb = ns["_fb"]
    assert not fb.ok and "NameError" not in str(fb), str(fb)
    if backend.SIMULATOR:  # the part to write raises NotImplementedError, and the check says so
        assert "NotImplementedError" in str(fb), str(fb)
    else:  # on a GPU a raise inside a kernel does not stop it: C is left unwritten, and the check says why
        assert "never written" in str(fb) and "NotImplementedError" in str(fb), str(fb)


def test_no_solution_sits_above_its_exercise_in_the_student_notebooks(student_dir):
    """The lines a student writes do not appear, all together, in an earlier cell."""
    for ex in KERNEL_IDS:
        solution = re.search(r"### BEGIN SOLUTION[^\n]*\n(.*?)### END SOLUTION", exercise_cell(ex), re.S).group(1)
        lines = [ln.split("#")[0].strip() for ln in solution.split("\n")]
        lines = [ln for ln in lines if ln]
        nb = nbformat.read(glob.glob(os.path.join(student_dir, LESSONS[ex[:2]] + ".ipynb"))[0], as_version=4)
        for cell in nb.cells:
            if f'exercises.check("{ex}"' in cell.source:
                break
            code = {ln.split("#")[0].strip() for ln in cell.source.split("\n")}
            assert not all(ln in code for ln in lines), (ex, cell.source[:200])
