"""Lesson 11's exercise (11-split-k), checked on the lesson's own exercise cell (simulator).

The teacher cell's solution passes; a version that gets C right without splitting the work, one that
reads outside its chunk of k, and a reduction that is not coalesced fail with messages that name the
technique; wrong kernels and the student skeleton fail on the result.
"""
import os
import re

import pytest

from conftest import REPO, requires_simulator
from gemm_lessons.teaching import exercises
from gemm_lessons.teaching.exercises import lesson11
from gemm_lessons.course import student
from test_lessons_05_10 import run_cell

LESSON = os.path.join(REPO, "lessons", "11_from_kernel_to_library.py")


def exercise_cell(exercise_id="11-split-k"):
    cells = re.split(r"^# %%.*$", open(LESSON).read(), flags=re.M)
    found = [c for c in cells if f'exercises.check("{exercise_id}"' in c]
    assert len(found) == 1, f"{exercise_id}: {len(found)} cells"
    return found[0].strip("\n") + "\n"


def check_cell(replace=(), student_version=False):
    text = exercise_cell()
    if student_version:
        text = student.strip_solutions(text)
    ns, ex, arg = run_cell(text, replace)
    assert (ex, arg) == ("11-split-k", "split_k")
    return exercises.check(ex, ns[arg])


def _fails(fb, *words):
    text = str(fb)
    assert not fb.ok, text
    for w in words:
        assert w in text, f"{w!r} not in: {text}"


ONE_PART_DOES_ALL = [("        k_chunk = (K + cuda.gridDim.z - 1) // cuda.gridDim.z\n        k_begin = z * k_chunk\n        k_end = min(K, k_begin + k_chunk)\n",
                      "        k_begin = 0\n        k_end = K if z == 0 else 0\n")]
READS_ALL_OF_K = [("        for k in range(k_begin, k_end):\n            acc += A[row, k] * B[k, col]\n",
                   "        for k in range(K):\n            a = A[row, k]\n            b = B[k, col]\n"
                   "            if k_begin <= k and k < k_end:\n                acc += a * b\n")]
UNCOALESCED = [("    col = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x\n"
                "    row = cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y\n    ### BEGIN SOLUTION\n",
                "    col = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.y  # threadIdx.x along a column\n"
                "    row = cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.x\n    ### BEGIN SOLUTION\n")]
READS_C_ALWAYS = [("        if beta == 0:  # C is not read (it may hold anything, NaN included)\n"
                   "            C[row, col] = alpha * total\n        else:\n", "        if True:\n")]
EVERY_PART_INTO_W0 = [("        W[z, row, col] = acc\n", "        W[0, row, col] = acc\n")]
CHUNK_ROUNDED_TO_8 = [("        k_chunk = (K + cuda.gridDim.z - 1) // cuda.gridDim.z\n",
                       "        k_chunk = ((K + cuda.gridDim.z - 1) // cuda.gridDim.z + 7) // 8 * 8\n")]
REDUCTION_ROW_COL_SWAPPED = [("    col = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x\n"
                              "    row = cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y\n    ### BEGIN SOLUTION\n",
                              "    col = cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y\n"
                              "    row = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x\n    ### BEGIN SOLUTION\n")]


@requires_simulator
def test_solution_passes_and_names_the_technique():
    fb = check_cell()
    assert fb.ok, str(fb)
    assert "its own chunk" in str(fb) and "coalesced" in str(fb)


@requires_simulator
def test_one_part_doing_all_of_k_is_right_but_fails_the_technique():
    _fails(check_cell(ONE_PART_DOES_ALL), "matches the float64 reference", "does not split the work",
           "the whole product", "expected k = 0..16 inclusive (range(0, 17))")


@requires_simulator
def test_a_chunk_rounded_up_says_which_k_the_part_holds():
    _fails(check_cell(CHUNK_ROUNDED_TO_8), "matches the float64 reference", "the partial kernel's chunks",
           "W[0] holds k = 0..23, expected k = 0..16 inclusive (range(0, 17))", "ceil(50 / 3) = 17")


@requires_simulator
def test_reading_outside_the_chunk_is_caught_by_the_access_log():
    _fails(check_cell(READS_ALL_OF_K), "matches the float64 reference", "read A at k = 0..", "own chunk")


@requires_simulator
def test_uncoalesced_reduction_is_right_but_fails():
    _fails(check_cell(UNCOALESCED), "matches the float64 reference", "not coalesced", "sectors")


@requires_simulator
def test_reading_c_with_beta_zero_and_parts_in_one_place_fail_on_the_result():
    _fails(check_cell(READS_C_ALWAYS), "result is wrong", "the reduction is wrong", "C is NaN",
           "reading C when beta == 0")
    _fails(check_cell(EVERY_PART_INTO_W0), "result is wrong", "the partial kernel left part 1", "W[1], unwritten")


@requires_simulator
def test_a_wrong_reduction_is_named_as_the_kernel_at_fault():
    """The first hint promises that the message says which of the two kernels is wrong."""
    fb = check_cell(REDUCTION_ROW_COL_SWAPPED)
    _fails(fb, "the partial sums in W are right, so the reduction is wrong", "C is NaN at 95 of 703")
    assert "which of the two is wrong" in str(fb)  # the first hint, quoted by the failure


@requires_simulator
def test_skeleton_fails():
    _fails(check_cell(student_version=True), "NotImplementedError")


@requires_simulator
def test_the_answer_name_is_found_for_the_child_process():
    ns, _, arg = run_cell(exercise_cell())
    assert lesson11._answer_name(ns[arg]) == "split_k"


def test_a_single_kernel_is_feedback_not_a_crash():
    fb = exercises.check("11-split-k", lambda: None)
    assert not fb.ok and "pair of kernels" in str(fb)


def test_lesson_has_a_prediction_cell_and_the_library_kernels():
    text = open(LESSON).read()
    assert text.count("exercises.compare_prediction(") >= 2 and "= None  # your prediction" in text
    for path in ("gemm_lessons/kernels/library/sgemm_any_shape.py", "gemm_lessons/kernels/library/splitk_reduce.py"):
        assert f"# source: {path}" in text
