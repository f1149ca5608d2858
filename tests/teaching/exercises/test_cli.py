"""``python -m gemm_lessons.check ID FILE.py``: the exercise cell's check on a file.

The files in tests/data/exercises/ are the teacher notebooks' solutions (their solution blocks
are the lessons' own, tested below) and answers with a planted mistake (``*-wrong.py``), for
exercises of different kinds: a number (00-flops), a launch function (00a-launch), a function
(05-stage-a), a kernel (01-kernel) and a function that builds the kernel (03-kernel).  Exit
status: 0 passed, 1 not yet, 2 usage error."""
import os
import re
import subprocess
import sys

import pytest

from conftest import REPO
from gemm_lessons.teaching import exercises
from gemm_lessons.teaching.exercises import cli, core

DATA = os.path.join(REPO, "tests", "data", "exercises")
LESSONS = os.path.join(REPO, "lessons")


def data(name):
    return os.path.join(DATA, name)


def run_cli(*args):
    """``python -m gemm_lessons.check ARGS`` in a new process: (exit status, stdout, stderr)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([REPO] + [p for p in os.environ.get("PYTHONPATH", "").split(
        os.pathsep) if p]))
    p = subprocess.run([sys.executable, "-m", "gemm_lessons.check", *args], capture_output=True, text=True,
                       env=env, cwd=REPO, timeout=300)
    return p.returncode, p.stdout, p.stderr


def exercise_cell(exercise_id):
    """The code cell of lessons/*.py that ends in exercises.check(exercise_id, ...)."""
    found = []
    for name in sorted(os.listdir(LESSONS)):
        if name.endswith(".py"):
            with open(os.path.join(LESSONS, name)) as f:
                found += [c for c in re.split(r"^# %%.*$", f.read(), flags=re.M)
                          if f'exercises.check("{exercise_id}",' in c]
    assert len(found) == 1, f"{exercise_id}: {len(found)} cells"
    return found[0]


def solution_blocks(text):
    return re.findall(r"^[ \t]*### BEGIN SOLUTION[^\n]*\n(.*?)^[ \t]*### END SOLUTION", text, flags=re.M | re.S)


# ---- the registry says, for every exercise, what a file must define -----------------------------------
def test_every_exercise_names_what_its_cell_checks():
    """The expression of each exercise's registration is the one its lesson cell passes to check."""
    for exercise_id in exercises.ids():
        if exercise_id.startswith("test-"):
            continue  # registered by another test (tests/course/test_nbgrader.py)
        cell = exercise_cell(exercise_id)
        expression = re.search(rf'^exercises\.check\("{exercise_id}", (.+)\)\s*$', cell, flags=re.M).group(1)
        assert core._ANSWERS[exercise_id][0] == expression, exercise_id
        defines = core._ANSWERS[exercise_id][1]
        assert defines and "\n" not in defines
        for name in cli.answer_names(exercise_id):
            assert name in defines, (exercise_id, name)


@pytest.mark.parametrize("name", sorted(n for n in os.listdir(DATA) if not n.endswith("-wrong.py")))
def test_the_solution_files_hold_the_lessons_solution_blocks(name):
    exercise_id = name[:-3]
    with open(data(name)) as f:
        blocks = solution_blocks(f.read())
    assert blocks and blocks == solution_blocks(exercise_cell(exercise_id))


# ---- the command line, in a process of its own: exit status and output -------------------------------
def test_list_names_every_exercise_and_what_its_file_defines():
    rc, out, err = run_cli("--list")
    assert rc == 0 and not err
    lines = out.rstrip("\n").split("\n")
    assert [line.split()[0] for line in lines] == exercises.ids()
    for line in lines:
        exercise_id, defines = line.split(None, 1)
        for name in cli.answer_names(exercise_id):
            assert name in defines, line
    assert "my_naive_1d: the @cuda.jit kernel" in out and "make_my_reg2d(): returns" in out


def test_a_right_number_passes_and_prints_the_cells_feedback():
    rc, out, err = run_cli("00-flops", data("00-flops.py"))
    assert rc == 0, (out, err)
    assert out == str(exercises.check("00-flops", (2 * 100 - 1) * 300 * 200)) + "\n"


def test_a_wrong_number_fails_with_the_cells_feedback():
    rc, out, err = run_cli("00-flops", data("00-flops-wrong.py"))
    assert rc == 1, (out, err)
    assert out.startswith("Not yet [00-flops]: ") and "Hint:" in out
    assert out == str(exercises.check("00-flops", 2 * 300 * 200 * 100)) + "\n"


@pytest.mark.parametrize("args, words", [
    (("99-nothing", "00-flops.py"), ["unknown exercise '99-nothing'", "00-flops", "--list"]),
    (("00-flops", "no-such-file.py"), ["no-such-file.py: no such file"]),
    (("01-kernel", "00-flops.py"), ["does not define my_naive_1d", "the @cuda.jit kernel"]),
    (("03-kernel", "00-flops.py"), ["does not define make_my_reg1d_rows", "make_my_reg1d_rows(): returns"]),
    (("00-flops",), ["give an exercise id and a file"]),
    ((), ["give an exercise id and a file"]),
    (("--list", "00-flops"), ["--list takes no exercise or file"]),
    (("--no-such-option",), ["unrecognized arguments"]),
], ids=["unknown-id", "missing-file", "missing-kernel", "missing-factory", "no-file", "nothing", "list-and-id",
        "bad-option"])
def test_usage_errors_exit_2_and_say_why(args, words):
    args = [data(a) if a.endswith(".py") and os.path.exists(data(a)) else a for a in args]
    rc, out, err = run_cli(*args)
    assert rc == 2 and not out, (rc, out, err)
    assert err.startswith("usage: python -m gemm_lessons.check ID FILE.py")
    for w in words:
        assert w in err, (w, err)


# ---- the same main() in this process (the checks dominate the time) -----------------------------------
@pytest.mark.parametrize("exercise_id", ["00a-launch", "05-stage-a"])
def test_a_launch_and_a_function(exercise_id, capsys):
    assert cli.main([exercise_id, data(f"{exercise_id}.py")]) == 0
    assert capsys.readouterr().out.startswith(f"Correct [{exercise_id}]: ")
    assert cli.main([exercise_id, data(f"{exercise_id}-wrong.py")]) == 1
    out = capsys.readouterr().out
    assert out.startswith(f"Not yet [{exercise_id}]: ") and "Hint:" in out
    assert {"00a-launch": "for n = 129, 1 element(s) of out were never written",
            "05-stage-a": "for tid=1, p=0 stage_a returns (1, 0): in one load instruction (p=0) threads 0 and 1 take float4s 4 apart"}[exercise_id] in out
    assert "(0, 4)" not in out  # thread 1's float4: the feedback does not give the answer away


def test_a_kernel_right_and_uncoalesced(capsys):
    assert cli.main(["01-kernel", data("01-kernel.py"), "--time-limit", "0"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Correct [01-kernel]: right result on ") and "coalesced" in out
    assert cli.main(["01-kernel", data("01-kernel-wrong.py"), "--time-limit", "0"]) == 1
    out = capsys.readouterr().out
    assert out.startswith("Not yet [01-kernel]: Right result, but not coalesced") and "Hint:" in out


def test_a_function_that_builds_the_kernel(capsys):
    assert cli.main(["03-kernel", data("03-kernel.py"), "--time-limit", "0"]) == 0
    assert capsys.readouterr().out.startswith("Correct [03-kernel]: right result on ")


def test_a_file_or_an_answer_that_raises_fails_with_where(tmp_path, capsys):
    broken = tmp_path / "broken.py"
    broken.write_text("x = 1\nanswer = x / 0\n")
    assert cli.main(["00-flops", str(broken)]) == 1
    out = capsys.readouterr().out
    assert out.startswith("Not yet [00-flops]: your file broken.py raised ZeroDivisionError") and "line 2" in out
    broken.write_text("answer = (1,\n")
    assert cli.main(["00-flops", str(broken)]) == 1
    assert "raised SyntaxError" in capsys.readouterr().out
    factory = tmp_path / "factory.py"
    factory.write_text("def make_my_reg1d_rows():\n    raise NotImplementedError('your code here')\n")
    assert cli.main(["03-kernel", str(factory)]) == 1
    out = capsys.readouterr().out
    assert "make_my_reg1d_rows() raised NotImplementedError: your code here (line 2 of make_my_reg1d_rows)" in out


def test_a_skeleton_answer_is_not_yet_not_a_usage_error(tmp_path, capsys):
    skeleton = tmp_path / "skeleton.py"
    skeleton.write_text("answer = None  # YOUR CODE HERE\n")
    assert cli.main(["00-flops", str(skeleton)]) == 1
    assert "no answer yet" in capsys.readouterr().out


def test_the_file_imports_from_its_own_folder_and_is_not_main(tmp_path, capsys):
    (tmp_path / "helper.py").write_text("N = 200\n")
    (tmp_path / "mine.py").write_text("from helper import N\nM, K = 300, 100\nanswer = (2 * K - 1) * M * N\n"
                                      "if __name__ == '__main__':\n    answer = 0\n")
    assert cli.main(["00-flops", str(tmp_path / "mine.py")]) == 0
    assert str(tmp_path) not in sys.path


def test_importing_the_cli_module_leaves_gl_check_working():
    """``import gemm_lessons.check`` sets the package's attribute ``check`` to the module: the
    module is callable as the function it replaces, so ``gl.check(...)`` and the CLI both work."""
    code = ("import inspect, gemm_lessons as gl\n"
            "function = gl.check\n"
            "import gemm_lessons.check\n"
            "from gemm_lessons.kernels.sgemm import naive\n"
            "assert gl.check(naive.sgemm, 9, 8, 7).passed\n"
            "assert inspect.signature(gl.check) == inspect.signature(function)\n"
            "assert callable(gemm_lessons.check.main)\n"
            "print('both work')\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([REPO] + [p for p in os.environ.get("PYTHONPATH", "").split(
        os.pathsep) if p]))
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=REPO, timeout=300)
    assert p.returncode == 0 and "both work" in p.stdout, p.stderr


BYPASS = """from gemm_lessons.teaching import exercises
from gemm_lessons.teaching.exercises import core
exercises.check = lambda *args, **kwargs: core.Feedback("00-flops", True, "fake")
core.check = exercises.check
core._CHECKS["00-flops"] = (lambda answer: (True, "fake"), "none")
core.Feedback.__bool__ = lambda self: True
answer = 1
"""


def test_a_file_that_redefines_the_check_is_checked_by_the_real_one(tmp_path):
    """What the file does to the package (exercises.check, the registry, a class) is undone
    before its answer is checked, and stays undone for the next check."""
    path = tmp_path / "bypass.py"
    path.write_text(BYPASS)
    fb = cli.check_file("00-flops", str(path))
    assert not fb.ok and "1 is not the FLOP count" in fb.message and fb.ok is False
    assert exercises.check is core.check and core._CHECKS["00-flops"][0].__name__ == "check_flop_count"
    assert not bool(core.Feedback("x", False, "m"))
    assert cli.check_file("00-flops", data("00-flops.py")).ok


def test_json_output_says_whether_the_result_is_right_apart_from_the_technique():
    import json
    rc, out, err = run_cli("--json", "00a-launch", os.path.join(REPO, "tests", "data", "planted", "00a-launch",
                                                                "skip-host-after.py"))
    got = json.loads(out)
    assert rc == 1 and got["exercise"] == "00a-launch" and got["result_ok"] is True and got["ok"] is False
    assert "changed after the last kernel" in got["message"]
    rc, out, err = run_cli("--json", "00-flops", data("00-flops-wrong.py"))
    got = json.loads(out)
    assert rc == 1 and (got["ok"], got["result_ok"]) == (False, False)
