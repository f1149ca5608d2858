"""Lessons 05-10's kernel exercises, checked on the lessons' own exercise cells (simulator).

For each kernel exercise: the teacher cell's solution passes; a kernel that skips the lesson's
technique fails with a message that names it; a kernel with a wrong result fails.  The kernels
are the exercise cells of lessons/*.py, executed here (the teacher version, the student version
from gemm_lessons.course.student, or the teacher version with one planted change).
"""
import linecache
import os
import re

import pytest

from conftest import REPO, requires_simulator
from gemm_lessons.teaching import exercises
from gemm_lessons.course import student

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


def _fails(fb, *words):
    text = str(fb)
    assert not fb.ok, text
    for w in words:
        assert w in text, f"{w!r} not in: {text}"


# ---- 05: the transposed A tile ------------------------------------------------------------
UNTRANSPOSED = [("sAT = cuda.shared.array((BK, BM), float32)  # the A tile, transposed: sAT[k, m]",
                 "sAT = cuda.shared.array((BM, BK), float32)  # NOT transposed: sAT[m, k]")] + [
    (f"sAT[a_c + {d}, a_r + p * A_STEP] = x{d}", f"sAT[a_r + p * A_STEP, a_c + {d}] = x{d}") for d in range(4)] + [
    ("load4(sAT, k, t_row + 4 * h)", "sAT[t_row + 4 * h, k], sAT[t_row + 4 * h + 1, k], sAT[t_row + 4 * h + 2, k], "
                                     "sAT[t_row + 4 * h + 3, k]")]


@requires_simulator
def test_05_solution_passes():
    fb = check_cell("05-transpose-a")
    assert fb.ok, str(fb)
    assert "element by element" not in str(fb)  # it reads sAT with load4: no note


@requires_simulator
def test_05_plain_reads_pass_with_a_note_to_use_load4():
    fb = check_cell("05-transpose-a", replace=[(
        "load4(sAT, k, t_row + 4 * h)",
        "sAT[k, t_row + 4 * h], sAT[k, t_row + 4 * h + 1], sAT[k, t_row + 4 * h + 2], sAT[k, t_row + 4 * h + 3]")])
    assert fb.ok and "reads sAT element by element" in str(fb) and "write them with load4" in str(fb), str(fb)


@requires_simulator
def test_05_untransposed_tile_is_right_but_fails_the_technique():
    _fails(check_cell("05-transpose-a", replace=UNTRANSPOSED), "matches the float64 reference", "16-byte",
           "transposed tile")


@requires_simulator
def test_05_skeleton_and_a_wrong_index_fail_on_the_result():
    _fails(check_cell("05-transpose-a", student_version=True), "result is wrong")
    _fails(check_cell("05-transpose-a", replace=[("load4(sAT, k, t_row + 4 * h)", "load4(sAT, k, t_row)")]),
           "result is wrong")


# ---- 06: conflict-free ------------------------------------------------------------------
@requires_simulator
def test_06_solution_passes_and_skeleton_fails_naming_the_conflicts():
    fb = check_cell("06-conflict-free")
    assert fb.ok, str(fb)
    _fails(check_cell("06-conflict-free", student_version=True), "matches the float64 reference",
           "stores into sAT", "loads from sB", "2-way conflicts")


@requires_simulator
def test_06_padding_by_one_float_breaks_the_16_byte_loads():
    _fails(check_cell("06-conflict-free", replace=[("PAD = 4  #", "PAD = 1  #")]), "no longer 16-byte", "PAD",
           "Hint: a 16-byte load (LDS.128) needs a 16-byte-aligned address")


@requires_simulator
def test_06_overlapping_columns_give_a_wrong_result():
    _fails(check_cell("06-conflict-free", replace=[("j // 4 * (BN // 2)  #", "j // 4 * 4  #")]), "result is wrong")


# ---- 07: double buffering ---------------------------------------------------------------
def _loop_07():
    cell = exercise_cell("07-double-buffer")
    return cell[cell.index("    ### BEGIN SOLUTION"):cell.index("    ### END SOLUTION")]


ONE_BUFFER_TWO_BARRIERS = """    ### BEGIN SOLUTION
    for k0 in range(0, K, BK):
        load_slice(k0)
        store_slice(sAT0, sB0)
        cuda.syncthreads()
        compute(sAT0, sB0)
        cuda.syncthreads()
"""
ONE_BUFFER_ONE_BARRIER = """    ### BEGIN SOLUTION
    load_slice(0)
    store_slice(sAT0, sB0)
    cuda.syncthreads()
    for k0 in range(0, K, BK):
        load_slice(k0 + BK)
        compute(sAT0, sB0)
        store_slice(sAT0, sB0)
        cuda.syncthreads()
"""


@requires_simulator
def test_07_solution_passes():
    fb = check_cell("07-double-buffer")
    assert fb.ok, str(fb)


@requires_simulator
def test_07_one_buffer_needs_two_barriers_per_slice_and_fails():
    _fails(check_cell("07-double-buffer", replace=[(_loop_07(), ONE_BUFFER_TWO_BARRIERS)]),
           "race-free", "8 barriers for 4 slices", "one barrier per slice")


@requires_simulator
def test_07_one_buffer_with_one_barrier_is_a_race():
    _fails(check_cell("07-double-buffer", replace=[(_loop_07(), ONE_BUFFER_ONE_BARRIER)]), "race", "sAT0")


@requires_simulator
def test_07_loads_after_the_compute_fail_and_skeleton_is_wrong():
    loop = _loop_07()
    late = loop.replace("        load_slice(k0 + BK)  # the next slice's loads are in flight during the compute\n"
                        "        compute(sAT0, sB0)\n", "        compute(sAT0, sB0)\n        load_slice(k0 + BK)\n")
    assert late != loop
    _fails(check_cell("07-double-buffer", replace=[(loop, late)]), "after the compute")
    _fails(check_cell("07-double-buffer", student_version=True), "result is wrong")


# ---- 08: warp tiles ----------------------------------------------------------------------
@requires_simulator
def test_08_solution_passes_and_lesson_07_layout_fails_naming_warp_tiles():
    fb = check_cell("08-warp-tile")
    assert fb.ok, str(fb)
    _fails(check_cell("08-warp-tile", student_version=True), "matches the float64 reference",
           "not 32x64 warp tiles", "144")


@requires_simulator
def test_08_contiguous_columns_conflict_and_a_bad_mapping_is_wrong():
    fb = check_cell("08-warp-tile", replace=[("(lane % LN) * 4 + j % 4 + j // 4 * (LN * 4)", "(lane % LN) * 8 + j")])
    _fails(fb, "the warp tiles are right", "bank conflicts", "Hint: warp w owns columns", "LN * 4 columns apart")
    assert "compact" not in str(fb)  # the warp-tile test passed: not the hint about compact regions
    _fails(check_cell("08-warp-tile", replace=[("(lane // LN) * 4 + i % 4", "(lane // LN) * 2 + i % 4")]),
           "result is wrong")


@requires_simulator
def test_08_pieces_half_the_block_tile_apart_run_past_it_named_without_a_line_number():
    """Lesson 06's column gap (BN // 2) inside a 64-column warp tile: col_of runs past the block
    tile. The check names the array and the ranges, quotes the hint on the pieces' spacing, and
    gives no line number (the lines of @unrolled's expansion are not the student's)."""
    fb = check_cell("08-warp-tile", replace=[("j // 4 * (LN * 4)", "j // 4 * (BN // 2)")])
    _fails(fb, "indexed sB past its end", "out of bounds", "col_of(j) within 0..127",
           "LN * 4 columns apart")
    assert "line " not in str(fb) and "compact" not in str(fb)


@requires_simulator
def test_08_a_forgotten_warp_offset_is_named_as_overlapping_warps():
    """Warp 1 without its column offset writes warp 0's columns: the check names the overlap
    (two warps, one element of C) and the offset, not the guards or the grid."""
    fb = check_cell("08-warp-tile", replace=[("(warp % (BN // WN)) * WN + ", "")])
    _fails(fb, "result is wrong", "(warp 0) and", "(warp 1) both write C[", "Two warps compute the same outputs",
           "own offset", "Hint: first find warp w's region")
    assert "guards" not in str(fb)


# ---- 09: symmetrize ---------------------------------------------------------------------
@requires_simulator
def test_09_solution_passes_and_skeleton_fails_naming_coalescing():
    fb = check_cell("09-symmetrize")
    assert fb.ok, str(fb)
    _fails(check_cell("09-symmetrize", student_version=True), "is right", "not coalesced", "32 sectors")


@requires_simulator
def test_09_unpadded_tile_conflicts_and_a_wrong_index_is_wrong():
    _fails(check_cell("09-symmetrize", replace=[("(TILE, 33), float32)", "(TILE, TILE), float32)")]),
           "coalesced", "bank conflicts", "32-way", "Pad")
    _fails(check_cell("09-symmetrize", replace=[("tile[tx, ty + j]  #", "tile[ty + j, tx]  #")]), "expected src[")


@requires_simulator
def test_09_each_failure_quotes_the_hint_of_its_stage():
    """Hint 1 (a shared tile) for an uncoalesced kernel, hint 2 (which element goes where) for a wrong
    result, hint 3 (the tile's width) for bank conflicts: not hint 1 for every failure."""
    from gemm_lessons.teaching.exercises import core
    hints = core._HINTS["09-symmetrize"]
    stages = {1: check_cell("09-symmetrize", student_version=True),
              2: check_cell("09-symmetrize", replace=[("tile[tx, ty + j]  #", "tile[ty + j, tx]  #")]),
              3: check_cell("09-symmetrize", replace=[("(TILE, 33), float32)", "(TILE, TILE), float32)")])}
    for step, fb in stages.items():
        assert f"Hint: {hints[step - 1]}" in str(fb), (step, str(fb))
        assert all(h not in str(fb) for h in hints if h != hints[step - 1]), (step, str(fb))


@requires_simulator
def test_09_a_shape_the_gpu_would_reject_is_flagged_from_the_source():
    """(TILE, TILE + 1) runs on the simulator, but numba compiling for a GPU needs constants."""
    from gemm_lessons.teaching.exercises.lesson09 import shared_shape_expressions
    _fails(check_cell("09-symmetrize", replace=[("(TILE, 33), float32)", "(TILE, TILE + 1), float32)")]),
           "(TILE, TILE + 1)", "GPU", "constant")
    ns, _, _ = run_cell(exercise_cell("09-symmetrize"))
    assert shared_shape_expressions(ns["symmetrize"]) == []  # numbers and globals are constants
    from gemm_lessons.kernels.transpose import smem_tile
    assert shared_shape_expressions(smem_tile.make_transpose_tile(32, 8, 1)) == []  # a closure variable too


# ---- 10 and the prediction helper -----------------------------------------------------
def _extra_10():
    from gemm_lessons.teaching import leaderboard
    return dict(leaderboard=leaderboard, bench=leaderboard.lesson_record())


def test_10_solution_passes_and_wrong_answers_fail():
    fb = check_cell("10-next-step", extra=_extra_10())
    assert fb.ok, str(fb)
    _fails(check_cell("10-next-step", replace=[("change > 2", "change > 0")], extra=_extra_10()), "expected None")
    _fails(check_cell("10-next-step", replace=[("max(gains", "min(gains")], extra=_extra_10()), "elsewhere")
    _fails(check_cell("10-next-step", replace=[("(after, change) for _, _, before", "(what, change) for what, _, before")],
                      extra=_extra_10()), "kernel with the technique", "not the technique's description")
    _fails(check_cell("10-next-step", student_version=True, extra=_extra_10()), "NotImplementedError")


def reference_next_step(record):
    """The lesson's solution of 10-next-step on ``record``: tests/data/exercises/10-next-step.py
    (the package holds no reference answer)."""
    ns = {}
    with open(os.path.join(REPO, "tests", "data", "exercises", "10-next-step.py")) as f:
        exec(compile(f.read(), "10-next-step.py", "exec"), ns)
    ns["record"] = record
    return ns["next_step"]


def test_10_no_reference_answer_is_importable_from_the_package():
    from gemm_lessons.teaching import leaderboard
    from gemm_lessons.teaching.exercises import lesson10
    record = leaderboard.lesson_record()
    kernel, size = exercises.next_step_example(record, exercises.next_step_cases(record), reference_next_step(record))
    assert not hasattr(exercises, "next_step_answer") and "next_step_answer" not in exercises.__all__
    for name in dir(lesson10):  # no function of the module, called as the reference was, gives the answer
        fn = getattr(lesson10, name)
        if callable(fn) and getattr(fn, "__module__", None) == lesson10.__name__ and name != "check_next_step":
            try:
                got = fn(record, kernel, size)
            except Exception:  # noqa: BLE001 (another signature)
                continue
            assert got != reference_next_step(record)(kernel, size), name


def test_10_feedback_quotes_a_pair_at_the_largest_size_not_host_bound():
    from gemm_lessons.kernels import ladder
    from gemm_lessons.records import results
    record = results.load(results.REFERENCE_DEVICE)  # the H100's run has host-bound rows, so the rule is exercised
    answer = reference_next_step(record)
    cases = exercises.next_step_cases(record)
    kernel, size = exercises.next_step_example(record, cases, answer)
    assert answer(kernel, size) is not None
    with_it = answer(kernel, size)[0]
    assert not any(r.host_bound for k in (kernel, with_it) for r in results.sgemm_rows(record, k, size))
    assert kernel in ladder.SGEMM or kernel in ladder.VARIANTS
    for k, sz in cases:  # no case asks about a host-bound pair
        assert not any(r.host_bound for r in results.sgemm_rows(record, k, sz))
    assert any(r.host_bound for r in record.sgemm)  # the record has some: the rule is exercised
    larger = [c for c in cases if c[1] > size and answer(*c)]
    for k, s in larger:  # every answer at a larger size involves a host-bound row
        w = answer(k, s)[0]
        assert any(r.host_bound for x in (k, w) for r in results.sgemm_rows(record, x, s))


def test_10_feedback_shows_a_next_step_that_changes_with_the_size():
    """The success message quotes a kernel whose best next step differs between two sizes, and
    where the smaller size leaves SMs idle with its tiles, says so (lesson 10's idle-SM point)."""
    from gemm_lessons.teaching import leaderboard
    record = leaderboard.lesson_record()
    answer = reference_next_step(record)
    cases = exercises.next_step_cases(record)
    kernel, (small, a), (large, b) = exercises.next_step_flip(record, cases, answer)
    assert (kernel, small) in cases and (kernel, large) in cases and a[0] != b[0]
    assert a == answer(kernel, small) and b == answer(kernel, large)
    if record.device.name == "NVIDIA H200":  # the recorded run: reg1d takes the 64x64 block only at 1024^3
        assert (kernel, small, a[0], b[0]) == ("reg1d", (1024,) * 3, "reg1d_64x64", "reg2d")
    fb = check_cell("10-next-step", extra=_extra_10())
    text = str(fb)
    assert f"from {kernel}, {a[0]}" in text and f"{b[0]}" in text
    if leaderboard.grid_blocks(kernel, small) < record.device.sm_count <= leaderboard.grid_blocks(a[0], small):
        assert f"{leaderboard.grid_blocks(kernel, small)} blocks for {record.device.sm_count} SMs" in text


def test_prediction_says_how_close_and_where_measured():
    p = exercises.compare_prediction(1.5, 2.0, "vec vs reg2d", "recorded on GPU X, 2026-01-01")
    assert "you predicted 1.5" in repr(p) and "25% below" in repr(p) and "recorded on GPU X" in repr(p)
    assert "no prediction written yet" in repr(exercises.compare_prediction(None, 2.0, "x", "y"))


def test_every_05_10_exercise_has_a_cell_and_a_prediction_cell_per_lesson():
    assert set(exercises.KERNEL_EXERCISES_05_10) <= set(exercises.ids())
    for ex in exercises.KERNEL_EXERCISES_05_10:
        exercise_cell(ex)
    for lesson in ("05", "06", "07", "08", "09"):
        text = open(os.path.join(REPO, "lessons", LESSONS[lesson] + ".py")).read()
        assert "exercises.compare_prediction(" in text and "= None  # your prediction" in text, lesson
