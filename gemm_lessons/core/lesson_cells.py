"""The code a lesson shows from a package file: the lines between ``# lesson-cell: begin`` and
``# lesson-cell: end`` (course.lesson_source keeps the lessons' copies identical to them)."""
import os

from gemm_lessons.core.paths import REPO_DIR
BEGIN, END = "# lesson-cell: begin", "# lesson-cell: end"


def region(path):
    """The marked region of a package file (path relative to the repository)."""
    with open(os.path.join(REPO_DIR, path)) as f:
        text = f.read()
    if BEGIN not in text or END not in text:
        raise ValueError(f"{path} has no '{BEGIN}' ... '{END}' region")
    return text.split(BEGIN, 1)[1].split(END, 1)[0].strip("\n")
