"""Helpers to author the lesson notebooks as Python (tools/notebooks/*.py -> notebooks/*.ipynb).

    python tools/build_notebooks.py            # write notebooks/ from tools/notebooks/
A notebook is a list of cells: md("..."), code("...", check=True) where check=True marks the
cell for nbval (its output must be the same on a GPU and on the simulator).  Kernel cells come
from the package with src("gemm_lessons/sgemm_kernels/naive.py"), so they cannot drift.
"""
import sys
import textwrap

import nbformat

sys.path.insert(0, __file__.rsplit("/tools/", 1)[0])
from gemm_lessons import lesson_source  # noqa: E402

CHECK = "# NBVAL_CHECK_OUTPUT"

SETUP = """\
import gemm_lessons as gl  # first: it chooses the GPU, or numba's CUDA simulator when there is none
from gemm_lessons import counting, exercises, figures, inspect_kernel, ladder, measure, plots, results
from gemm_lessons.jit import jit  # cuda.jit that also takes GPU-only options (max_registers) on the simulator
import functools
import numpy as np
from numba import cuda, float32
%matplotlib inline
print(gl.banner())"""


def md(text):
    return nbformat.v4.new_markdown_cell(textwrap.dedent(text).strip("\n"))


def code(text, check=False):
    text = textwrap.dedent(text).strip("\n")
    if check:
        text = CHECK + "\n" + text
    return nbformat.v4.new_code_cell(text)


def src(path):
    return nbformat.v4.new_code_cell(lesson_source.cell_text(path))


def notebook(cells):
    nb = nbformat.v4.new_notebook()
    nb.cells = cells
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    return nb
