import glob
import os
import re

import nbformat
import pytest
from numba import cuda
import numpy as np

from gemm_lessons.teaching import exercises
from gemm_lessons.course import student

from conftest import REPO
from test_lessons_01_04 import COVERED as COVERED_01_04  # the kernel exercises of lessons 01-04

NOTEBOOKS = sorted(glob.glob(os.path.join(REPO, "notebooks", "*.ipynb")))

def _launch_axpy(right=True, guard=True, threads=128):
    """A launch function for 00a-launch (out = 2x - y), right or with a planted mistake."""
    @cuda.jit
    def k(x, y, out):
        i = cuda.grid(1)
        if not guard or i < out.size:
            out[i] = 2 * x[i] - y[i]

    def launch(x, y, out):
        blocks = (out.size + threads - 1) // threads if right else out.size // threads
        k[max(blocks, 1), threads](x, y, out)
    return launch


RIGHT = {
    "00a-launch": _launch_axpy(),
    "00a-occupancy": (3, "shared memory"),
    "00-flops": (2 * 100 - 1) * 300 * 200,  # C = A@B exactly, M, N, K = 300, 200, 100: K mul + K-1 add
    "00-intensity": 2 * 4096 * 4096 * 512 / (4 * (4096 * 512 * 2 + 4096 * 4096)),  # 204.8
    "01-sectors": (2, 2),  # blocks 16 wide: a warp is two rows of C
    "02-loads": 1024 * 2048 * 512 * (1 / 64 + 1 / 32),
    "04-ratio": (16, 16 * 16),  # the square patch with twice the 8x8 patch's ratio, and its accumulators
    "05-stage-a": lambda tid, p: (tid // 4 + 64 * p, (tid % 4) * 4),
    "09-in-flight": (16, 1.0),  # 4 loads of 4 bytes; 0.5 x 16 x 2048 bytes is more than B x L per SM: the whole rate
}
WRONG = {
    "00a-launch": _launch_axpy(right=False),  # the grid is rounded down: the last elements are never written
    "00a-occupancy": (4, "shared memory"),  # the 1 KB each block reserves forgotten
    "00-flops": 2 * 100 * 300 * 200,  # 2MNK: one add per element too many
    "00-intensity": 2 * 4096 / 12,  # the 4096^3 intensity the lesson prints
    "01-sectors": (1, 4),  # a warp of a block 32 wide
    "02-loads": 2 * 1024 * 2048 * 512,  # the naive count
    "04-ratio": (64, 64 * 64),  # the ratio taken to grow with the patch's area
    "05-stage-a": lambda tid, p: (tid % 128, (tid // 128) * 4 + 8 * p),
    "09-in-flight": (16, 1.48),  # the min(1, ...) forgotten
}


def test_every_exercise_has_a_right_and_a_wrong_answer_here():
    # the kernel exercises are tested in test_lessons_01_04.py, test_lessons_05_10.py and test_lesson_11.py
    elsewhere = COVERED_01_04 | set(exercises.KERNEL_EXERCISES_05_10) | set(exercises.KERNEL_EXERCISES_11)
    assert set(RIGHT) == set(exercises.ids()) - elsewhere == set(WRONG)


@pytest.mark.parametrize("ex", sorted(RIGHT))
def test_right_answer_passes(ex):
    fb = exercises.check(ex, RIGHT[ex])
    assert fb.ok, str(fb)
    assert fb._repr_markdown_().startswith("✅")


@pytest.mark.parametrize("ex", sorted(WRONG))
def test_wrong_answer_fails_with_a_hint(ex):
    fb = exercises.check(ex, WRONG[ex])
    assert not fb.ok and "Hint:" in str(fb)


def test_lesson_00_numbers_name_the_common_slips_and_print_counts_in_full():
    fb = exercises.check("00-flops", RIGHT["00-flops"])
    assert fb.ok and "11,940,000" in str(fb)
    slips = {2 * 100 * 300 * 200: ["12,000,000 is not", "2MNK"], (2 * 100 + 2) * 300 * 200: ["(2K+2)MN", "alpha"],
             100 * 300 * 200: ["multiplications only"]}
    for answer, words in slips.items():
        fb = exercises.check("00-flops", answer)
        assert not fb.ok and all(w in str(fb) for w in words), str(fb)
    M, N, K = 4096, 4096, 512
    elements = M * K + K * N + M * N
    slips = {2 * M * N * K / elements: ["819.2 is not", "a float is 4 bytes"],
             2 * M * N * K / (4 * (elements + M * N)): ["113.8 is not", "counts C twice"],
             (2 * K + 2) * M * N / (4 * elements): ["(2K+2)MN", "2MNK"],
             (2 * K + 1) * M * N / (4 * elements): ["(2K+1)MN", "2MNK"],  # within 0.1% of the answer, still a slip
             2 * 4096 / 12: ["the square 4096^3", "K = 512"]}
    for answer, words in slips.items():
        fb = exercises.check("00-intensity", answer)
        assert not fb.ok and all(w in str(fb) for w in words), str(fb)
    assert exercises.check("00-intensity", 204.8).ok


def test_04_ratio_asks_for_the_square_patch_that_doubles_the_8x8_ratio():
    from gemm_lessons.model import counting
    from gemm_lessons.teaching.exercises import lesson04

    side = lesson04.RATIO_04
    assert counting.compute_to_memory_ratio(side, side) == 2 * counting.compute_to_memory_ratio(8, 8)
    assert side * side > lesson04.MAX_REGISTERS_PER_THREAD  # what the feedback says
    fb = exercises.check("04-ratio", (side, side))  # one accumulator per row: the side right, the count not
    assert not fb.ok and "side is right" in str(fb)


def test_a_half_right_01_sectors_answer_says_which_half():
    assert "A right; B not" in str(exercises.check("01-sectors", (2, 4)))
    assert "B right; A not" in str(exercises.check("01-sectors", (1, 2)))
    assert "neither A nor B is right" in str(exercises.check("01-sectors", (3, 3)))


def test_lesson_02_loads_names_the_tile_and_prints_counts_in_full():
    fb = exercises.check("02-loads", RIGHT["02-loads"])
    assert fb.ok and "64x32 tiles, 50,331,648" in str(fb), str(fb)
    fb = exercises.check("02-loads", 1024 * 2048 * 512 * (1 / 128 + 1 / 16))  # a right count, not the fewest
    assert not fb.ok and "75,497,472 is the count for 128x16 tiles" in str(fb), str(fb)


def test_missing_answer_and_crashing_answer_give_feedback():
    fb = exercises.check("00-flops", None)
    assert not fb.ok and "no answer yet" in str(fb)
    fb = exercises.check("05-stage-a", lambda tid, p: 1 / 0)
    assert not fb.ok and "ZeroDivisionError" in str(fb)
    fb = exercises.check("no-such-exercise", 1)
    assert not fb.ok and "unknown exercise" in str(fb)


def test_strip_solutions_keeps_skeletons():
    src = "x = 1\n### BEGIN SOLUTION: answer = None\nanswer = 42\n### END SOLUTION\ncheck(answer)"
    assert student.strip_solutions(src) == "x = 1\nanswer = None  # YOUR CODE HERE\ncheck(answer)"
    src = "def f():\n    ### BEGIN SOLUTION\n    return 1\n    ### END SOLUTION"
    assert student.strip_solutions(src) == 'def f():\n    raise NotImplementedError("your code here")'
    with pytest.raises(ValueError):
        student.strip_solutions("### BEGIN SOLUTION\nx = 1")


def test_notebook_exercises_are_registered_and_checked():
    used = set()
    for path in NOTEBOOKS:
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type == "code" and "### BEGIN SOLUTION" in cell.source:
                ids = re.findall(r'exercises\.check\("([^"]+)"', cell.source)
                assert ids, f"{os.path.basename(path)}: a solution cell without exercises.check"
                used.update(ids)
    assert used == set(exercises.ids())


def test_student_notebooks_have_no_solutions(tmp_path):
    written = student.build(str(tmp_path))
    assert len(written) == len(NOTEBOOKS) > 0
    for path in written:
        text = open(path).read()
        assert "BEGIN SOLUTION" not in text
        nb = nbformat.read(path, as_version=4)
        nbformat.validate(nb)
        for cell in nb.cells:
            if "YOUR CODE HERE" in cell.source or "NotImplementedError" in cell.source:
                assert cell.outputs == []


# ---- the checker survives broken student kernels (simulator) ---------------------------
from conftest import requires_simulator  # noqa: E402
from numba import float32  # noqa: E402


@requires_simulator
def test_exception_inside_a_kernel_is_feedback():
    @cuda.jit
    def raises(A, B, C, alpha, beta):
        raise ValueError("boom")

    fb = exercises.check("01-kernel", raises)
    assert not fb.ok and "ValueError" in str(fb) and "boom" in str(fb)


@requires_simulator
def test_out_of_bounds_index_is_reported_with_the_index():
    @cuda.jit
    def unguarded(A, B, C, alpha, beta):
        col = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
        row = cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y
        C[row, col] = A[row, 0] * B[0, col]  # no guard: the rounded-up grid overruns C

    fb = exercises.check("01-kernel", unguarded)
    assert not fb.ok and "IndexError" in str(fb) and "out of bounds" in str(fb)


@requires_simulator
def test_missing_syncthreads_is_reported_as_a_race():
    @cuda.jit
    def racy(A, B, C, alpha, beta):
        sA = cuda.shared.array((32, 8), float32)
        tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
        col = cuda.blockIdx.x * cuda.blockDim.x + tx
        row = cuda.blockIdx.y * cuda.blockDim.y + ty
        M, K = A.shape
        N = B.shape[1]
        acc = np.float32(0.0)
        for k0 in range(0, K, 32):
            if row < M:
                sA[tx, ty] = A[row, k0 + tx] if k0 + tx < K else np.float32(0.0)
            # cuda.syncthreads() missing here
            for k in range(32):
                if k0 + k < K and col < N and row < M:
                    acc += sA[k, ty] * B[k0 + k, col]
            cuda.syncthreads()
        if row < M and col < N:
            C[row, col] = alpha * acc + (beta * C[row, col] if beta != 0 else np.float32(0.0))

    racy.tile = (8, 32, 32)  # 02-kernel's launch: blocks of 32 x 8 threads
    fb = exercises.check("02-kernel", racy)
    assert not fb.ok and "race" in str(fb) and "syncthreads" in str(fb)


@requires_simulator
def test_a_kernel_that_never_finishes_is_stopped():
    @cuda.jit
    def forever(A, B, C, alpha, beta):
        i = 0
        while i >= 0:
            i = (i + 1) % 7

    import threading
    before = set(threading.enumerate())
    fb = exercises.check("01-kernel", forever, time_limit=2)
    assert not fb.ok and "stopped after 2 s" in str(fb)
    # every kernel thread is stopped: one left spinning would slow every later check of the process
    assert [t.name for t in threading.enumerate() if t not in before] == []


def test_the_launch_must_use_128_threads_per_block():
    # a right kernel launched with 256 threads per block: the task asks for 128
    fb = exercises.check("00a-launch", _launch_axpy(threads=256))
    assert not fb.ok and "launched with 256 threads per block; the task asks for 128" in str(fb)

    @cuda.jit
    def k(x, y, out):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = 2 * x[i] - y[i]

    def two_d(x, y, out):  # a block of 128 x 1 threads is 128 threads per block
        k[((out.size + 127) // 128, 1), (128, 1)](x, y, out)

    assert exercises.check("00a-launch", two_d).ok


@requires_simulator
def test_a_launch_that_launches_no_kernel_is_caught():
    def on_the_host(x, y, out):  # right values (the simulator passes host arrays), but no kernel
        out[:] = 2 * x - y

    fb = exercises.check("00a-launch", on_the_host)
    assert not fb.ok and "launched no kernel" in str(fb)


def test_the_occupancy_slip_of_the_reserved_kib_gets_its_own_message():
    fb = exercises.check("00a-occupancy", (4, "shared memory"))
    assert not fb.ok and "would fit if shared memory held nothing else" in str(fb)
    assert "3" not in str(fb).split("Hint:")[0]  # a step short of the answer


def test_an_unguarded_launch_is_caught():
    fb = exercises.check("00a-launch", _launch_axpy(guard=False))
    assert not fb.ok and "Hint:" in str(fb)
    assert ("IndexError" in str(fb)) or ("past the end" in str(fb))  # simulator / GPU


@requires_simulator  # on a GPU numba.cuda finds it whatever the order: nothing to restart for
def test_numba_cuda_imported_before_the_package_gets_a_restart_not_a_wrong_answer():
    """A cell run alone after a restart may import numba.cuda before gemm_lessons chose the simulator
    (lesson 05's exercise cell does): numba then looks for a GPU, and the check must say so, not
    blame the student's answer."""
    import subprocess
    import sys

    with open(os.path.join(REPO, "tests", "data", "exercises", "00a-launch.py")) as f:  # the lesson's answer
        answer = f.read()
    script = ("from numba import cuda\n"  # first, as in the cell run alone
              + answer + "\nfrom gemm_lessons.teaching import exercises\nprint(exercises.check('00a-launch', launch))\n")
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_ENABLE_CUDASIM", "GEMM_LESSONS_SIMULATOR")}
    env["GEMM_LESSONS_SIMULATOR"] = "1"  # the package chooses the simulator, as on a machine without a GPU
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, cwd=REPO,
                         timeout=300)
    assert "Restart the kernel" in run.stdout and "import gemm_lessons" in run.stdout, run.stdout + run.stderr
    assert "raised CudaSupportError" not in run.stdout
