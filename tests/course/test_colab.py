"""The notebooks' setup cell (gemm_lessons.course.colab): what it installs, and when."""
import importlib.util
import shutil
import subprocess
import types

import pytest

from gemm_lessons.course import colab, lesson_source


def run_cell(monkeypatch, capsys, repository, installed, gpu=None, cc=None):
    """Execute the setup cell with the machine faked: is the course importable, which GPU and driver
    nvidia-smi reports (None: no nvidia-smi), and its compute capability (None: a driver whose
    nvidia-smi does not know that field).  Returns (pip commands run, printed text)."""
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: (object() if installed else None) if name == "gemm_lessons" else real_find_spec(name, *a))
    monkeypatch.setattr(shutil, "which", lambda name: "/usr/bin/nvidia-smi" if gpu and name == "nvidia-smi" else None)
    pip = []

    def fake_run(cmd, **kwargs):
        if cmd[0].endswith("nvidia-smi") and cmd[1] == "--query-gpu=compute_cap":
            return (types.SimpleNamespace(stdout=f"{cc}\n", returncode=0) if cc else
                    types.SimpleNamespace(stdout='Field "compute_cap" is not a valid field to query.\n', returncode=2))
        if cmd[0].endswith("nvidia-smi"):
            return types.SimpleNamespace(stdout=f"{gpu}\n", returncode=0)
        pip.append(cmd)
        return types.SimpleNamespace(stdout="", returncode=0)

    monkeypatch.setattr(subprocess, "run", fake_run)
    exec(compile(colab.setup_cell(repository, "main"), "<setup cell>", "exec"), {})
    return pip, capsys.readouterr().out


def test_installed_course_installs_nothing_and_names_the_gpu(monkeypatch, capsys):
    pip, out = run_cell(monkeypatch, capsys, "octo/gemm-lessons", installed=True, gpu="Tesla T4, 550.54.15", cc="7.5")
    assert pip == [] and "GPU: Tesla T4 (compute capability 7.5, driver 550.54.15)" in out
    pip, out = run_cell(monkeypatch, capsys, "octo/gemm-lessons", installed=True, gpu="Tesla T4, 470.57.02")
    assert pip == [] and "GPU: Tesla T4 (driver 470.57.02)" in out  # nvidia-smi without the field


def test_cuda_13_only_where_it_runs(monkeypatch, capsys):
    """CUDA 13 dropped Maxwell, Pascal and Volta: a V100 (7.0) gets the CUDA 12 extra even with driver 580."""
    pip, _ = run_cell(monkeypatch, capsys, "octo/gemm-lessons", installed=False, gpu="Tesla V100-SXM2-16GB, 580.65.06",
                      cc="7.0")
    assert pip[0][-1] == "gemm-lessons[cu12] @ git+https://github.com/octo/gemm-lessons@main"
    pip, _ = run_cell(monkeypatch, capsys, "octo/gemm-lessons", installed=False, gpu="Tesla T4, 580.65.06", cc="7.5")
    assert pip[0][-1] == "gemm-lessons[cu13] @ git+https://github.com/octo/gemm-lessons@main"


def test_missing_course_installs_from_the_repository_with_the_drivers_cuda(monkeypatch, capsys):
    pip, _ = run_cell(monkeypatch, capsys, "octo/gemm-lessons", installed=False, gpu="Tesla T4, 550.54.15")
    assert pip[0][-1] == "gemm-lessons[cu12] @ git+https://github.com/octo/gemm-lessons@main"
    pip, _ = run_cell(monkeypatch, capsys, "octo/gemm-lessons", installed=False, gpu="NVIDIA H200, 580.159.04")
    assert pip[0][-1] == "gemm-lessons[cu13] @ git+https://github.com/octo/gemm-lessons@main"
    pip, out = run_cell(monkeypatch, capsys, "octo/gemm-lessons", installed=False, gpu=None)
    assert pip[0][-1] == "gemm-lessons @ git+https://github.com/octo/gemm-lessons@main"  # the simulator path
    assert "No GPU" in out and "T4 GPU" in out


def test_missing_course_without_a_repository_says_what_to_do(monkeypatch, capsys):
    with pytest.raises(ModuleNotFoundError, match=r"pip install -e \."):
        run_cell(monkeypatch, capsys, None, installed=False, gpu="Tesla T4, 550.54.15")


def test_every_lesson_starts_with_the_setup_cell_for_pyprojects_repository():
    assert lesson_source.setup_cell_drift() == [], "python -m gemm_lessons.course.lesson_source --write"


def test_the_setting_is_the_one_switch(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.gemm-lessons]\nrepository = "octo/gemm-lessons"\nbranch = "v1"\n')
    text = colab.setup_cell_from_pyproject(str(tmp_path))
    assert "REPOSITORY, BRANCH = 'octo/gemm-lessons', 'v1'" in text
    (tmp_path / "pyproject.toml").write_text('[tool.gemm-lessons]\nrepository = "https://github.com/octo/x"\n')
    with pytest.raises(colab.SettingError, match="OWNER/NAME"):
        colab.setup_cell_from_pyproject(str(tmp_path))


def test_the_colab_badge_is_there_exactly_when_a_repository_is_set():
    title = "# 07 · Double buffering\n\n**Where we are.** ..."
    url = colab.colab_url("octo/gemm-lessons", "main", "07_double_buffering")
    badged = colab.with_badge(title, url)
    assert badged.split("\n")[:2] == ["# 07 · Double buffering", f"{colab.BADGE}({url})"]
    assert colab.with_badge(badged, url) == badged  # written once
    assert colab.with_badge(badged, None) == title  # gone when the setting is
    assert url == "https://colab.research.google.com/github/octo/gemm-lessons/blob/main/notebooks/07_double_buffering.ipynb"


def test_setting_a_repository_flags_every_lesson_until_written(monkeypatch):
    """The one switch: with a repository in pyproject, every lesson needs its setup cell and badge
    rewritten (lesson_source --write), and says so."""
    monkeypatch.setattr(colab, "_pyproject_setting", lambda key, repo_dir=None: {"repository": "octo/gemm-lessons"}.get(key))
    assert len(lesson_source.setup_cell_drift()) == len(lesson_source.lesson_sources())
