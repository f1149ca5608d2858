"""One source for kernel code: the package module, shown verbatim in its notebook.

A kernel module marks the code a lesson shows with ``# lesson-cell: begin`` / ``# lesson-cell:
end``.  The notebook holds the same text in a code cell whose first line is
``# source: gemm_lessons/<path>.py`` (see HEADER).  tests/test_lesson_sources.py fails when they
differ; ``python -m gemm_lessons.lesson_source --write`` copies the modules into the notebooks.
"""
import argparse
import glob
import os
import sys

import nbformat

PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
REPO_DIR = os.path.dirname(PACKAGE_DIR)
NOTEBOOK_DIR = os.path.join(REPO_DIR, "notebooks")
BEGIN, END = "# lesson-cell: begin", "# lesson-cell: end"
HEADER = "# source: {path}  (the package runs this same code; a test keeps the two identical)"


def region(path):
    """The marked region of a package file (path relative to the repository)."""
    with open(os.path.join(REPO_DIR, path)) as f:
        text = f.read()
    if BEGIN not in text or END not in text:
        raise ValueError(f"{path} has no '{BEGIN}' ... '{END}' region")
    return text.split(BEGIN, 1)[1].split(END, 1)[0].strip("\n")


def cell_text(path):
    return HEADER.format(path=path) + "\n" + region(path)


def source_cells(notebook_path):
    """(cell index, package path, cell text) for every kernel-source cell of a notebook."""
    nb = nbformat.read(notebook_path, as_version=4)
    out = []
    for i, cell in enumerate(nb.cells):
        first = cell.source.split("\n", 1)[0]
        if cell.cell_type == "code" and first.startswith("# source: gemm_lessons/"):
            out.append((i, first.split()[2], cell.source))
    return out


def drift(notebook_dir=NOTEBOOK_DIR):
    """List of (notebook, package path) whose cell differs from the package."""
    bad = []
    for nbp in sorted(glob.glob(os.path.join(notebook_dir, "*.ipynb"))):
        for _, path, text in source_cells(nbp):
            if text.strip() != cell_text(path).strip():
                bad.append((os.path.basename(nbp), path))
    return bad


def write(notebook_dir=NOTEBOOK_DIR):
    for nbp in sorted(glob.glob(os.path.join(notebook_dir, "*.ipynb"))):
        cells = source_cells(nbp)
        if not cells:
            continue
        nb = nbformat.read(nbp, as_version=4)
        for i, path, _ in cells:
            nb.cells[i].source = cell_text(path)
        nbformat.write(nb, nbp)


def main(argv=None):
    p = argparse.ArgumentParser(description="check or copy kernel sources into the notebooks")
    p.add_argument("--write", action="store_true", help="copy the package code into the notebooks")
    args = p.parse_args(argv)
    if args.write:
        write()
    bad = drift()
    for nb, path in bad:
        print(f"{nb}: the cell for {path} differs from the package")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
