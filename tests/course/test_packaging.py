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


NO_INDEX = ("Could not fetch URL", "Failed to establish a new connection")  # what pip says offline


@pytest.mark.slow
def test_an_installed_wheel_finds_the_recorded_runs(tmp_path):
    """A wheel has no checkout: the lessons read the records it ships (Colab, pip install from a URL).
    Installed with its dependencies in a fresh venv and run from outside the repository, so that
    neither the checkout nor the editable install can stand in for it."""
    import subprocess
    import sys
    import zipfile

    build = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp_path), REPO],
                           capture_output=True, text=True, timeout=600)
    if build.returncode and any(s in build.stderr + build.stdout for s in NO_INDEX + ("Could not find a version",)):
        pytest.skip("no package index reachable to fetch the build backend")
    assert build.returncode == 0, build.stderr[-2000:]
    wheel = next(tmp_path.glob("gemm_lessons-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    assert "gemm_lessons/recorded/limiter-nvidia-h200.json" in names
    assert "gemm_lessons/recorded_experiments/splitk/splitk-probe-nvidia-h100-80gb-hbm3.json" in names
    # a fresh venv (no system site-packages), its own Jupyter paths, nothing of the checkout's environment
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True, timeout=300)
    bindir = venv / ("Scripts" if os.name == "nt" else "bin")
    python = str(bindir / ("python.exe" if os.name == "nt" else "python"))
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONUSERBASE", "VIRTUAL_ENV", "JUPYTER_PATH")}
    env.update(PATH=str(bindir) + os.pathsep + env.get("PATH", ""), VIRTUAL_ENV=str(venv), PYTHONNOUSERSITE="1",
               JUPYTER_DATA_DIR=str(tmp_path / "jupyter-data"), JUPYTER_CONFIG_DIR=str(tmp_path / "jupyter-config"),
               GEMM_LESSONS_SIMULATOR="1")
    # the wheel, its dependencies from the index, and what executes a notebook below
    install = subprocess.run([python, "-m", "pip", "install", "-q", "--disable-pip-version-check", str(wheel),
                              "nbclient", "nbformat", "ipykernel"],
                             cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
    if install.returncode and any(s in install.stderr + install.stdout for s in NO_INDEX):
        pytest.skip("no package index reachable to install the wheel's dependencies")
    assert install.returncode == 0, install.stderr[-3000:]
    probe = ("import os, sys, gemm_lessons; from gemm_lessons.records import results; "
             "here = os.path.realpath(sys.prefix); assert here == os.path.realpath(os.environ['VIRTUAL_ENV']); "
             "assert os.path.realpath(gemm_lessons.__file__).startswith(here), gemm_lessons.__file__; "
             "assert os.path.realpath(results.RESULTS_DIR).startswith(here), results.RESULTS_DIR; "
             "r = results.load(); print(r.device.name); "
             "print(len(results.experiment_record('splitk')) > 0)")
    run = subprocess.run([python, "-c", probe], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
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
               "    nb.cells.append(nbformat.v4.new_code_cell('import os, sys, gemm_lessons\\n'\n"
               "        'here = os.path.realpath(sys.prefix)\\n'\n"
               "        'assert here == os.path.realpath(os.environ[\"VIRTUAL_ENV\"]), here\\n'\n"
               "        'assert os.path.realpath(gemm_lessons.__file__).startswith(here), gemm_lessons.__file__'))\n"
               "    NotebookClient(nb, timeout=600, kernel_name='python3', resources={'metadata': {'path': '.'}}).execute()\n"
               "    print('executed', path)\n")
    run = subprocess.run([python, "-c", execute, *WHEEL_NOTEBOOKS], cwd=lessons, env=env, capture_output=True,
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


def marker_environment(platform):
    """The marker values of a CPython 3.12 machine on ``platform`` (those that markers here test)."""
    return dict(PLATFORMS[platform], python_version="3.12", python_full_version="3.12.0",
                os_name="nt" if platform.startswith("win") else "posix", implementation_name="cpython",
                implementation_version="3.12.0", platform_python_implementation="CPython")


def requirements_for(platform, extra=None):
    """The project's dependencies that apply on ``platform`` (its markers evaluated there, Python 3.12),
    with those of ``extra`` when named (what ``pip install "gemm-lessons[extra]"`` asks for there)."""
    from packaging.requirements import Requirement

    env = marker_environment(platform)
    project = _pyproject()["project"]
    listed = project["dependencies"] + (project["optional-dependencies"][extra] if extra else [])
    reqs = [Requirement(r) for r in listed]
    wanted = [r for r in reqs if r.marker is None or r.marker.evaluate(env)]
    return [str(Requirement(f"{r.name}[{','.join(sorted(r.extras))}]{r.specifier}" if r.extras
                            else f"{r.name}{r.specifier}")) for r in wanted]


CUDA_EXTRAS = ["cu12", "cu13"]  # the GPU path (README: pick the one that matches the driver)


def cuda_platforms():
    """Where the CUDA extras apply: where the base set has the GPU path (nvmath-python; macOS has none)."""
    return sorted(p for p in PLATFORMS if any(r.startswith("nvmath-python") for r in requirements_for(p)))


def test_macos_gets_the_simulator_set():
    mac = requirements_for("macosx_14_0_arm64")
    assert "numba-cuda>=0.20" in mac and not any(r.startswith("nvmath-python") for r in mac)
    linux = requirements_for("manylinux_2_28_x86_64")
    assert "numba-cuda>=0.30" in linux and any(r.startswith("nvmath-python") for r in linux)


def test_the_cuda_extras_apply_on_linux_and_windows():
    assert cuda_platforms() == ["manylinux_2_28_x86_64", "win_amd64"]
    assert set(CUDA_EXTRAS) <= set(_pyproject()["project"]["optional-dependencies"])


# pip with the dependencies' markers evaluated on the target: --platform and --python-version pick wheels
# but leave markers to this machine (pypa/pip#11664), so a Linux-only dependency (nvidia-cufile-cu12
# from cuda-bindings[all]) would be asked for on Windows, which has no wheel of it
PIP_ON = ("import json, runpy, sys; import pip._vendor.packaging.markers as markers; "
          "env = dict(markers.default_environment(), **json.loads(sys.argv.pop(1))); "
          "markers.default_environment = lambda: dict(env); sys.argv[0] = 'pip'; "
          "runpy.run_module('pip', run_name='__main__', alter_sys=True)")


@pytest.mark.slow
@pytest.mark.parametrize("platform, extra", [(p, None) for p in sorted(PLATFORMS)]
                         + [(p, e) for p in cuda_platforms() for e in CUDA_EXTRAS])
def test_the_dependencies_install_from_wheels_on(platform, extra, tmp_path):
    """What pip would install on a laptop of each kind (wheels only: no compiler on a student's
    machine), and with each CUDA extra where it applies (a GPU machine), resolved here with --platform."""
    import json
    import subprocess
    import sys

    run = subprocess.run([sys.executable, "-c", PIP_ON, json.dumps(marker_environment(platform)),
                          "install", "--dry-run", "--ignore-installed", "-q",
                          "--only-binary=:all:", "--python-version", "3.12"]
                         + [f"--platform={tag}" for tag in TAGS.get(platform, [platform])] + [
                          "--target", str(tmp_path)] + requirements_for(platform, extra),
                         capture_output=True, text=True, timeout=600)
    if "Could not fetch URL" in run.stderr or "Failed to establish a new connection" in run.stderr:
        pytest.skip("no package index reachable")
    assert run.returncode == 0, run.stderr[-3000:]
