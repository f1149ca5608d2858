"""Running the course from its public repository: the one setting that names it, the Colab URL of a
notebook, and the notebooks' setup cell, which installs the course where it is missing (Colab).

The setting is the GitHub repository ``OWNER/NAME`` (and branch): ``--repository`` where a command
takes it, else the environment variable GEMM_LESSONS_REPOSITORY, else ``[tool.gemm-lessons]
repository`` in pyproject.toml (the branch likewise: GEMM_LESSONS_BRANCH, ``branch``, default main).
The setup cell is written from pyproject.toml alone (``python -m gemm_lessons.course.lesson_source
--write``), so that setting it there and rebuilding is the one switch that makes every notebook
installable; with no repository set, the cell stops with what to do instead.
"""
import os
import re

from gemm_lessons.core.paths import REPO_DIR

COLAB = "https://colab.research.google.com"
REPOSITORY_FORM = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]*/[A-Za-z0-9._-]+$")  # GitHub owner/name
BRANCH_FORM = re.compile(r"^[A-Za-z0-9._/-]+$")


class SettingError(Exception):
    """The repository setting is malformed or unreadable; the message says what to write."""


def _pyproject_setting(key, repo_dir=REPO_DIR):
    path = os.path.join(repo_dir, "pyproject.toml")
    if not os.path.exists(path):
        return None
    try:
        import tomllib
    except ImportError:  # Python 3.10
        try:
            import tomli as tomllib
        except ImportError:
            raise SettingError("reading pyproject.toml on Python 3.10 needs tomli: pip install tomli") from None
    with open(path, "rb") as f:
        return tomllib.load(f).get("tool", {}).get("gemm-lessons", {}).get(key)


def repository_setting(cli=None, environ=os.environ, repo_dir=REPO_DIR):
    """(owner/name or None, where it came from): the command line, then the environment, then pyproject."""
    for value, origin in ((cli, "--repository"),
                          (environ.get("GEMM_LESSONS_REPOSITORY"), "GEMM_LESSONS_REPOSITORY"),
                          (_pyproject_setting("repository", repo_dir), "[tool.gemm-lessons] repository")):
        if value:
            value = value.strip()
            if not REPOSITORY_FORM.match(value):
                raise SettingError(f"{origin} = {value!r}: expected a GitHub repository as OWNER/NAME, "
                                   "e.g. octocat/gemm-lessons")
            return value, origin
    return None, None


def branch_setting(cli=None, environ=os.environ, repo_dir=REPO_DIR):
    branch = cli or environ.get("GEMM_LESSONS_BRANCH") or _pyproject_setting("branch", repo_dir) or "main"
    if not BRANCH_FORM.match(branch):
        raise SettingError(f"branch {branch!r}: letters, digits and . _ / - only")
    return branch


def colab_url(repository, branch, notebook):
    """What a notebook page's Colab button opens (sphinx-book-theme builds the same URL)."""
    return f"{COLAB}/github/{repository}/blob/{branch}/notebooks/{notebook}.ipynb"


BADGE = "[![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)]"


def with_badge(title_cell, url):
    """A notebook's first markdown cell (its title first) with the Colab badge linking ``url`` as
    its second line, or without any badge when ``url`` is None."""
    lines = [line for line in title_cell.split("\n") if not line.startswith(BADGE)]
    if url:
        lines.insert(1, f"{BADGE}({url})")
    return "\n".join(lines)


# --- the setup cell -------------------------------------------------------------------------

SETUP_FIRST_LINE = "# Setup: where the course is not installed (Colab), install it; then say which GPU this is."
# Self-contained (the course may not be importable yet); without a GPU, the simulator path (no extra).
SETUP_CELL = SETUP_FIRST_LINE + '''
import importlib.util, shutil, subprocess, sys
REPOSITORY, BRANCH = {repository!r}, {branch!r}  # [tool.gemm-lessons] in the course's pyproject.toml
smi = shutil.which("nvidia-smi")
gpu = subprocess.run([smi, "--query-gpu=name,driver_version", "--format=csv,noheader"], capture_output=True,
                     text=True).stdout.strip().splitlines() if smi else []
gpu_name, driver = (gpu[0].rsplit(", ", 1) + [""])[:2] if gpu else ("", "")
cc = subprocess.run([smi, "--query-gpu=compute_cap", "--format=csv,noheader"], capture_output=True,
                    text=True).stdout.strip().splitlines()[:1] if gpu else []  # older drivers: not a field
cc = cc[0] if cc and cc[0].replace(".", "", 1).isdigit() else ""
if importlib.util.find_spec("gemm_lessons") is None:
    if not REPOSITORY:
        raise ModuleNotFoundError("gemm_lessons is not installed, and this notebook names no repository to install "
                                  "it from: in a clone of the course run  pip install -e .  then restart the kernel")
    major = int(driver.split(".")[0]) if driver.split(".")[0].isdigit() else 0
    # CUDA 13 needs driver 580+ and compute capability 7.5+ (it dropped Maxwell, Pascal and Volta)
    extra = ("[cu13]" if major >= 580 and not (cc and float(cc) < 7.5) else "[cu12]") if gpu_name else ""
    print(f"installing gemm-lessons{{extra}} from github.com/{{REPOSITORY}} ({{BRANCH}}) ...")
    subprocess.run([sys.executable, "-m", "pip", "install", "-q",
                    f"gemm-lessons{{extra}} @ git+https://github.com/{{REPOSITORY}}@{{BRANCH}}"], check=True)
capability = f"compute capability {{cc}}, " if cc else ""
print(f"GPU: {{gpu_name}} ({{capability}}driver {{driver}})" if gpu_name else
      "No GPU: the lessons run on numba's CUDA simulator, slowly (Colab: Runtime > Change runtime type > T4 GPU).")'''


def setup_cell(repository=None, branch="main"):
    """The text of every notebook's first cell, for this repository (None: not set)."""
    return SETUP_CELL.format(repository=repository or "", branch=branch or "main")


def pyproject_setting(repo_dir=REPO_DIR):
    """(repository or None, branch) as pyproject.toml names them, the environment not read: the
    setup cell and badges are written into the lessons, which must not depend on who built them."""
    return repository_setting(None, {}, repo_dir)[0], branch_setting(None, {}, repo_dir)


def setup_cell_from_pyproject(repo_dir=REPO_DIR):
    """The setup cell for the repository pyproject.toml names."""
    return setup_cell(*pyproject_setting(repo_dir))
