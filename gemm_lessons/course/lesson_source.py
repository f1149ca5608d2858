"""The lessons' sources: one text file per notebook, and kernel code shown from the package.

Each lesson is a pair (see jupytext.toml):

* ``lessons/NN_name.py``: the source, in jupytext's percent format (``# %%`` starts a code
  cell, ``# %% [markdown]`` a text cell).  This is the file to edit and review.
* ``notebooks/NN_name.ipynb``: what students open, with the outputs of its last run.

``python -m gemm_lessons.course.lesson_source --build`` writes each notebook's cells from its source,
keeping the stored outputs of every cell whose text did not change (JupyterLab with jupytext
installed does the same on save).  tests/course/test_lesson_sources.py fails when a notebook and its
source disagree.

Kernel cells: a kernel module marks the code a lesson shows with ``# lesson-cell: begin`` /
``# lesson-cell: end``; the lesson holds the same text in a code cell whose first line is
``# source: gemm_lessons/<path>.py`` (see HEADER).  ``--write`` copies the package's regions
into the lesson sources (then builds the notebooks); the test fails when they drift.

Setup cell: every lesson's first cell installs the course where it is missing
(``gemm_lessons.course.colab``); ``--write`` inserts or refreshes it from pyproject.toml's setting.
"""
import argparse
import difflib
import glob
import hashlib
import os
import re
import sys
import textwrap

import jupytext
import nbformat

from gemm_lessons.core.lesson_cells import BEGIN, END, region
from gemm_lessons.course import colab
from gemm_lessons.core.paths import PACKAGE_DIR, REPO_DIR

NOTEBOOK_DIR = os.path.join(REPO_DIR, "notebooks")
LESSON_DIR = os.path.join(REPO_DIR, "lessons")
HEADER = "# source: {path}  (the package runs this same code; a test keeps the two identical)"
NBVAL_CHECK = "# NBVAL_CHECK_OUTPUT"  # first line of a cell whose output nbval compares
FORMAT = "py:percent"
PAIRING = "notebooks///ipynb,lessons///py:percent"  # as in jupytext.toml
KERNELSPEC = {"name": "python3", "display_name": "Python 3", "language": "python"}
# What Google Colab reads to open a notebook on a GPU runtime, as Colab itself saves it
# (Runtime > Change runtime type > T4 GPU, the free one: compute capability 7.5, whose
# compiler facts are in results/arch-facts.md)
COLAB_METADATA = {"accelerator": "GPU", "colab": {"provenance": [], "gpuType": "T4"}}


# --- kernel cells -------------------------------------------------------------------------



def cell_text(path):
    return HEADER.format(path=path) + "\n" + region(path)


def source_cells(nb):
    """(cell index, package path, cell text) for every kernel-source cell of a notebook
    (a NotebookNode, or the path of an .ipynb or lesson .py file)."""
    if isinstance(nb, str):
        nb = read(nb)
    out = []
    for i, cell in enumerate(nb.cells):
        first = cell.source.split("\n", 1)[0]
        if cell.cell_type == "code" and first.startswith("# source: gemm_lessons/"):
            out.append((i, first.split()[2], cell.source))
    return out


def drift(directory=None):
    """List of (file, package path) whose kernel cell differs from the package, over the
    lesson sources and the notebooks (or the .py/.ipynb files of ``directory``)."""
    files = _files(directory, "*.ipynb") + _files(directory, "*.py") if directory else \
        _files(NOTEBOOK_DIR, "*.ipynb") + _files(LESSON_DIR, "*.py")
    bad = []
    for path in files:
        for _, pkg_path, text in source_cells(path):
            if text.strip() != cell_text(pkg_path).strip():
                bad.append((os.path.basename(path), pkg_path))
    return bad


def kernel_function(path):
    """The SGEMM kernel of a package region (its decorators and ``def sgemm_...(A, B, C, alpha,
    beta):`` to the end of its body), dedented: a kernel defined inside a factory function reads
    like one defined at module level."""
    lines = region(path).split("\n")
    start = next((i for i, line in enumerate(lines) if re.match(r"\s*def sgemm_\w*\(A, B, C, alpha, beta\):", line)),
                 None)
    if start is None:
        raise ValueError(f"{path}: no 'def sgemm_...(A, B, C, alpha, beta):' in its lesson-cell region")
    indent = len(lines[start]) - len(lines[start].lstrip())
    end = start + 1  # the body: every line after the def that is blank or indented deeper
    while end < len(lines) and (not lines[end].strip() or len(lines[end]) - len(lines[end].lstrip()) > indent):
        end += 1
    while start > 0 and lines[start - 1].startswith(" " * indent + "@"):  # its decorators
        start -= 1
    return textwrap.dedent("\n".join(lines[start:end])).rstrip("\n")


def kernel_diff(before, after, context=0):
    """What changed from one kernel to the next: a unified diff of kernel_function of two
    package files (paths relative to the repository), ``context`` unchanged lines around each change."""
    a, b = kernel_function(before).split("\n"), kernel_function(after).split("\n")
    return "\n".join(difflib.unified_diff(a, b, before, after, n=context, lineterm=""))


def write_kernel_cells():
    """Copy every package region into the lesson sources that show it."""
    for path in lesson_sources():
        nb = read(path)
        cells = source_cells(nb)
        if any(nb.cells[i].source != cell_text(p) for i, p, _ in cells):
            for i, p, _ in cells:
                nb.cells[i].source = cell_text(p)
            _write_source(nb, path)


# --- the setup cell (gemm_lessons.course.colab) ----------------------------------------------

def _title(nb):
    """The index of a lesson's first markdown cell (its title, where the Colab badge goes)."""
    return next(i for i, c in enumerate(nb.cells) if c.cell_type == "markdown")


def _colab_link(path, repository, branch):
    """The Colab URL of a lesson's notebook, or None when no repository is set."""
    return colab.colab_url(repository, branch, os.path.basename(path)[:-3]) if repository else None


def setup_cell_drift():
    """Lesson sources whose first cell is not the setup cell for pyproject's repository, or whose
    title cell's Colab badge does not match it (a badge exactly where a repository is set)."""
    repository, branch = colab.pyproject_setting()
    text = colab.setup_cell(repository, branch)
    bad = []
    for path in lesson_sources():
        nb = read(path)
        title = nb.cells[_title(nb)].source
        first = nb.cells[0]
        if (first.cell_type != "code" or first.source != text
                or colab.with_badge(title, _colab_link(path, repository, branch)) != title):
            bad.append(os.path.basename(path))
    return bad


def write_setup_cells():
    """Make every lesson source's first cell the setup cell (moved there, inserted or rewritten:
    it runs before anything else, and no text announcing the next cell's output is cut from it),
    and its title cell's Colab badge the one for pyproject's repository (none where none is set)."""
    repository, branch = colab.pyproject_setting()
    text = colab.setup_cell(repository, branch)
    for path in lesson_sources():
        nb = read(path)
        before = [c.source for c in nb.cells]
        nb.cells = [c for c in nb.cells if not (c.cell_type == "code" and c.source.startswith(colab.SETUP_FIRST_LINE))]
        nb.cells.insert(0, nbformat.v4.new_code_cell(text))
        t = _title(nb)
        nb.cells[t].source = colab.with_badge(nb.cells[t].source, _colab_link(path, repository, branch))
        if [c.source for c in nb.cells] != before:
            _write_source(nb, path)


# --- lesson sources and notebooks ---------------------------------------------------------

def _files(directory, pattern):
    return sorted(glob.glob(os.path.join(directory, pattern)))


def lesson_sources():
    return _files(LESSON_DIR, "[0-9]*.py")


def notebook_for(source_path):
    return os.path.join(NOTEBOOK_DIR, os.path.basename(source_path)[:-3] + ".ipynb")


def read(path):
    """A lesson source (.py, percent format) or a notebook (.ipynb) as a NotebookNode."""
    if path.endswith(".py"):
        return jupytext.read(path, fmt=FORMAT)
    return nbformat.read(path, as_version=4)


def _write_source(nb, path):
    nb = nbformat.from_dict(nb)
    nb.metadata = {"jupytext": {"notebook_metadata_filter": "-all", "cell_metadata_filter": "-all"}}
    jupytext.write(nb, path, fmt=FORMAT)


def _inputs(nb):
    return [(c.cell_type, c.source) for c in nb.cells]


def tidy_streams(nb):
    """Each cell's printed text as a student's JupyterLab shows it: consecutive stream outputs of
    one name (stdout, stderr) merged, and a line rewritten with carriage returns (a progress bar's
    frames) kept as its last frame, as JupyterLab draws it; a widget's text fallback (its object
    repr) replaced by a sentence saying what it is. Returns the notebook, changed in place."""
    for cell in nb.cells:
        merged = []
        for out in cell.get("outputs", []):
            last = merged[-1] if merged else None
            if (out.get("output_type") == "stream" and last is not None
                    and last.get("output_type") == "stream" and last.get("name") == out.get("name")):
                last["text"] = last["text"] + out["text"]
            else:
                merged.append(out)
        for out in merged:
            if out.get("output_type") == "stream":
                text = out["text"].replace("\r\n", "\n")
                out["text"] = "\n".join(line.rsplit("\r", 1)[-1] for line in text.split("\n"))
        for out in merged:  # a widget's text fallback is its object repr: say what it is instead
            data = out.get("data") or {}
            plain = data.get("text/plain", "")
            plain = "".join(plain) if isinstance(plain, list) else plain
            if WIDGET_VIEW in data and plain and "Progress" not in plain:  # a progress bar's repr says how far it got
                data["text/plain"] = WIDGET_TEXT
        if "outputs" in cell:
            cell["outputs"] = [o for o in merged if o.get("output_type") != "stream" or o["text"].strip()]
    return nb


WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_TEXT = "(an interactive widget: run this cell in JupyterLab to use it; the picture shows its first view)"


def build_notebook(source_path):
    """The notebook for a lesson source: its cells, with the stored outputs of unchanged cells."""
    nb = read(source_path)
    dest = notebook_for(source_path)
    if os.path.exists(dest):  # outputs and metadata of the cells whose text is unchanged
        old = read(dest)
        stored = {(c.cell_type, c.source): c for c in old.cells}
        for i, cell in enumerate(nb.cells):
            match = stored.get((cell.cell_type, cell.source))
            if match is not None:
                cell.id, cell.metadata = match.get("id", cell.get("id")), match.metadata
                if cell.cell_type == "code":
                    cell.outputs, cell.execution_count = match.outputs, match.execution_count
            else:  # a new or changed cell: no outputs, an id that the same text always gets
                cell.id = hashlib.sha1(f"{i}:{cell.source}".encode()).hexdigest()[:8]
        nb.metadata = old.metadata
    nb.metadata.setdefault("kernelspec", KERNELSPEC)
    nb.metadata.setdefault("language_info", {"name": "python"})
    nb.metadata.setdefault("accelerator", COLAB_METADATA["accelerator"])
    colab = nb.metadata.setdefault("colab", {})
    for key, value in COLAB_METADATA["colab"].items():
        colab.setdefault(key, value)
    nb.metadata.setdefault("jupytext", {})["formats"] = PAIRING
    for key in ("notebook_metadata_filter", "cell_metadata_filter", "text_representation"):
        nb.metadata["jupytext"].pop(key, None)
    return nb


def build(names=()):
    """Write notebooks/NN_*.ipynb from lessons/NN_*.py (only those starting with ``names``)."""
    for path in lesson_sources():
        if names and not os.path.basename(path).startswith(tuple(names)):
            continue
        dest = notebook_for(path)
        nb = build_notebook(path)
        if not os.path.exists(dest) or nbformat.writes(nb) != nbformat.writes(read(dest)):
            nbformat.write(nb, dest)
            print("wrote", os.path.relpath(dest, REPO_DIR))


def unpaired():
    """Lesson sources without a notebook and notebooks without a source."""
    sources = {os.path.basename(p)[:-3] for p in lesson_sources()}
    notebooks = {os.path.basename(p)[:-6] for p in _files(NOTEBOOK_DIR, "*.ipynb")}
    return sorted(sources ^ notebooks)


def mismatches():
    """(notebook, first differing cell index) for every notebook whose cells differ from its
    lesson source (cell types and text; outputs are not compared)."""
    bad = []
    for path in lesson_sources():
        dest = notebook_for(path)
        if not os.path.exists(dest):
            continue
        a, b = _inputs(read(path)), _inputs(read(dest))
        if a != b:
            first = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
            bad.append((os.path.basename(dest), first))
    return bad


def main(argv=None):
    p = argparse.ArgumentParser(description="check the lesson sources against the package and notebooks")
    p.add_argument("--write", action="store_true",
                   help="copy the package's kernel regions and the setup cell (with pyproject.toml's repository, "
                        "and its Colab badge under each title) into the lesson sources, then build")
    p.add_argument("--build", nargs="*", metavar="NN",
                   help="write the notebooks from the lesson sources (all, or those starting with NN)")
    args = p.parse_args(argv)
    if args.write:
        write_kernel_cells()
        write_setup_cells()
        build()
    elif args.build is not None:
        build(args.build)
    problems = [f"{f}: the cell for {path} differs from the package" for f, path in drift()]
    problems += [f"{nb}: cell {i} differs from its lesson source (run --build)" for nb, i in mismatches()]
    problems += [f"{f}: its first cell is not the setup cell for pyproject's repository, or its Colab badge "
                 "is not (run --write)" for f in setup_cell_drift()]
    problems += [f"{name}: has no partner (lessons/{name}.py <-> notebooks/{name}.ipynb)" for name in unpaired()]
    print("\n".join(problems) or "lesson sources, notebooks and package agree")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
