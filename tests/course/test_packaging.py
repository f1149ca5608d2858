import os
import re
import shutil

import pytest

from conftest import REPO

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib


def _name(req):
    return re.split(r"[<>=\[; ]", req.strip(), maxsplit=1)[0].lower()


def test_environment_yml_matches_pyproject():
    with open(os.path.join(REPO, "pyproject.toml"), "rb") as f:
        project = tomllib.load(f)["project"]
    wanted = {_name(r): r for r in project["dependencies"] + project["optional-dependencies"]["test"]}
    listed = {}
    text = open(os.path.join(REPO, "environment.yml")).read().split("dependencies:", 1)[1]
    for line in text.splitlines():
        m = re.match(r"\s+- (?!-e)([A-Za-z][\w.-]*[^:]*)$", line)
        if m and _name(m.group(1)) not in ("python", "pip"):
            listed[_name(m.group(1))] = m.group(1).strip()
    assert set(listed) == set(wanted)
    for name in ("numpy",):  # the pin that matters must be the same on both sides
        assert "<2.5" in listed[name] and "<2.5" in wanted[name]


def test_readme_commands_and_ci_agree():
    readme = open(os.path.join(REPO, "README.md")).read()
    ci = open(os.path.join(REPO, ".ci", "run")).read()
    test_cmd = 'pip install -e ".[test]" && pytest'
    assert test_cmd in readme and test_cmd in ci
    assert "jupyter lab notebooks/" in readme


def _pyproject():
    with open(os.path.join(REPO, "pyproject.toml"), "rb") as f:
        return tomllib.load(f)


def test_every_package_and_the_records_are_in_the_wheel_list():
    from setuptools import find_packages

    listed = set(_pyproject()["tool"]["setuptools"]["packages"])
    assert set(find_packages(REPO, include=["gemm_lessons*"])) <= listed, "a new subpackage is missing from pyproject"
    mapped = _pyproject()["tool"]["setuptools"]["package-dir"]
    assert mapped == {"gemm_lessons.recorded": "results", "gemm_lessons.recorded_experiments": "experiments"}
    assert set(mapped) <= listed


@pytest.mark.slow
def test_an_installed_wheel_finds_the_recorded_runs(tmp_path):
    """A wheel has no checkout: the lessons read the records it ships (Colab, pip install from a URL)."""
    import subprocess
    import sys
    import zipfile

    build = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp_path), REPO],
                           capture_output=True, text=True, timeout=600)
    if build.returncode and "Could not find a version" in build.stderr + build.stdout:
        pytest.skip("no network to fetch the build backend")
    assert build.returncode == 0, build.stderr[-2000:]
    wheel = next(tmp_path.glob("gemm_lessons-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    assert "gemm_lessons/recorded/limiter-nvidia-h200.json" in names
    assert "gemm_lessons/recorded_experiments/splitk/splitk-probe-nvidia-h100-80gb-hbm3.json" in names
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    probe = ("from gemm_lessons.records import results; import os; "
             "assert results.RESULTS_DIR.startswith(os.environ['PYTHONPATH']), results.RESULTS_DIR; "
             "r = results.load(); print(r.device.name); "
             "print(len(results.experiment_record('splitk')) > 0)")
    env = dict(os.environ, PYTHONPATH=str(site), GEMM_LESSONS_SIMULATOR="1")
    run = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "NVIDIA" in run.stdout
    # two lessons executed from the wheel alone: copied out of the checkout, run where it is not
    lessons = tmp_path / "lessons"
    lessons.mkdir()
    for name in WHEEL_NOTEBOOKS:
        shutil.copy(os.path.join(REPO, "notebooks", name), lessons / name)
    execute = ("import sys, nbformat; from nbclient import NotebookClient\n"
               "for path in sys.argv[1:]:\n"
               "    nb = nbformat.read(path, as_version=4)\n"
               "    nb.cells.append(nbformat.v4.new_code_cell('import os, gemm_lessons\\n'\n"
               "        'assert gemm_lessons.__file__.startswith(os.environ[\"PYTHONPATH\"]), gemm_lessons.__file__'))\n"
               "    NotebookClient(nb, timeout=600, kernel_name='python3', resources={'metadata': {'path': '.'}}).execute()\n"
               "    print('executed', path)\n")
    run = subprocess.run([sys.executable, "-c", execute, *WHEEL_NOTEBOOKS], cwd=lessons, env=env, capture_output=True,
                         text=True, timeout=900)
    assert run.returncode == 0, (run.stdout + run.stderr)[-3000:]
    assert run.stdout.count("executed") == len(WHEEL_NOTEBOOKS)


WHEEL_NOTEBOOKS = ["00_setup_and_roofline.ipynb", "10_leaderboard.ipynb"]  # the two fastest on the simulator


PLATFORMS = {  # pip's platform tag -> the marker environment of a machine there
    "macosx_14_0_arm64": {"sys_platform": "darwin", "platform_system": "Darwin", "platform_machine": "arm64"},
    "macosx_13_0_x86_64": {"sys_platform": "darwin", "platform_system": "Darwin", "platform_machine": "x86_64"},
    "win_amd64": {"sys_platform": "win32", "platform_system": "Windows", "platform_machine": "AMD64"},
    "manylinux_2_28_x86_64": {"sys_platform": "linux", "platform_system": "Linux", "platform_machine": "x86_64"},
}


# pip takes a platform's older tags only when named (a Linux wheel may be tagged manylinux2014)
TAGS = {"manylinux_2_28_x86_64": ["manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_17_x86_64",
                                  "manylinux2014_x86_64"]}


def requirements_for(platform):
    """The project's dependencies that apply on ``platform`` (its markers evaluated there, Python 3.12)."""
    from packaging.requirements import Requirement

    env = dict(PLATFORMS[platform], python_version="3.12", python_full_version="3.12.0",
               os_name="nt" if platform.startswith("win") else "posix", implementation_name="cpython",
               platform_python_implementation="CPython")
    reqs = [Requirement(r) for r in _pyproject()["project"]["dependencies"]]
    return [str(Requirement(f"{r.name}{r.specifier}")) for r in reqs if r.marker is None or r.marker.evaluate(env)]


def test_macos_gets_the_simulator_set():
    mac = requirements_for("macosx_14_0_arm64")
    assert "numba-cuda>=0.20" in mac and not any(r.startswith("nvmath-python") for r in mac)
    linux = requirements_for("manylinux_2_28_x86_64")
    assert "numba-cuda>=0.30" in linux and any(r.startswith("nvmath-python") for r in linux)


@pytest.mark.slow
@pytest.mark.parametrize("platform", sorted(PLATFORMS))
def test_the_dependencies_install_from_wheels_on(platform, tmp_path):
    """What pip would install on a laptop of each kind (wheels only: no compiler on a student's
    machine), resolved here with --platform."""
    import subprocess
    import sys

    run = subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "-q",
                          "--only-binary=:all:", "--python-version", "3.12"]
                         + [f"--platform={tag}" for tag in TAGS.get(platform, [platform])] + [
                          "--target", str(tmp_path)] + requirements_for(platform),
                         capture_output=True, text=True, timeout=600)
    if "Could not fetch URL" in run.stderr or "Failed to establish a new connection" in run.stderr:
        pytest.skip("no package index reachable")
    assert run.returncode == 0, run.stderr[-3000:]
