"""python -m gemm_lessons.course.student [--out student/]: student notebooks without the solutions.

In every code cell, the lines between ``### BEGIN SOLUTION`` and ``### END SOLUTION`` are
replaced by a skeleton: the text after ``### BEGIN SOLUTION:`` on the same line if there is
one (for example ``answer = None``), otherwise ``raise NotImplementedError(...)``.  Outputs of
solution cells are cleared.  Markdown cells starting with ``**Solution`` are dropped.
"""
import argparse
import glob
import os
import sys

import nbformat

from gemm_lessons.course.lesson_source import NOTEBOOK_DIR, REPO_DIR

BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"


def strip_solutions(source):
    out, inside = [], False
    for line in source.split("\n"):
        stripped = line.strip()
        if stripped.startswith(BEGIN):
            if inside:
                raise ValueError("nested BEGIN SOLUTION")
            inside = True
            indent = line[: len(line) - len(line.lstrip())]
            skeleton = stripped[len(BEGIN):].lstrip(":").strip()
            out.append(indent + (skeleton + "  # YOUR CODE HERE" if skeleton else
                                 'raise NotImplementedError("your code here")'))
        elif stripped.startswith(END):
            if not inside:
                raise ValueError("END SOLUTION without BEGIN")
            inside = False
        elif not inside:
            out.append(line)
    if inside:
        raise ValueError("BEGIN SOLUTION without END")
    return "\n".join(out)


def student_notebook(nb):
    nb = nbformat.from_dict(nb)
    cells = []
    for cell in nb.cells:
        if cell.cell_type == "markdown" and cell.source.lstrip().startswith("**Solution"):
            continue
        if cell.cell_type == "code" and BEGIN in cell.source:
            cell.source = strip_solutions(cell.source)
            cell.outputs = []
            cell.execution_count = None
        cells.append(cell)
    nb.cells = cells
    return nb


def build(out_dir, notebook_dir=NOTEBOOK_DIR):
    os.makedirs(out_dir, exist_ok=True)
    written = []
    for path in sorted(glob.glob(os.path.join(notebook_dir, "*.ipynb"))):
        nb = student_notebook(nbformat.read(path, as_version=4))
        dest = os.path.join(out_dir, os.path.basename(path))
        nbformat.write(nb, dest)
        written.append(dest)
    return written


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=os.path.join(REPO_DIR, "student"))
    args = p.parse_args(argv)
    for path in build(args.out):
        print("wrote", path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
