"""How many words a student reads on each lesson's main path, against the lesson standard's budget.

The main path is every cell up to the first markdown cell that starts with a "Lab notes" or
"Appendix" heading: the markdown, and the text code cells print to stdout or render (a table, a
sentence; not images, not the code).  Budgets (../shared/LESSON_PLAN.md): 2,000 words a lesson, 3,000 for the primer and lesson 11's core, under
24,000 for the whole main path.

    python -m gemm_lessons.course.budget [notebooks/01_naive.ipynb ...]
"""
import glob
import os
import re
import sys

from gemm_lessons.core.paths import REPO_DIR

LESSON_WORDS = 2000
LONGER = {"00a": 3000, "11": 3000}  # the primer, lesson 11's core
COURSE_WORDS = 24000
END_OF_MAIN_PATH = re.compile(r"#+\s*(lab notes|appendix)", re.I)  # at the start of a markdown cell
APPENDIX = re.compile(r"\d+b_")  # an appendix notebook (11b_...): lab notes, no budget


def budget(path):
    """The word budget of the lesson at ``path`` (its number is the file name's prefix)."""
    number = os.path.basename(path).split("_")[0]
    return LONGER.get(number, LESSON_WORDS)


def _output_words(out):
    if out.get("output_type") == "stream":  # stderr (warnings, progress bars) is not the lesson's text
        return len(_text(out.get("text", "")).split()) if out.get("name") == "stdout" else 0
    data = out.get("data", {})
    if "text/markdown" in data:
        return len(_text(data["text/markdown"]).split())
    if "text/plain" in data and "text/html" not in data and not any(k.startswith("image/") for k in data):
        return len(_text(data["text/plain"]).split())
    return 0


def _text(value):
    return value if isinstance(value, str) else "".join(value)


def main_path_words(path):
    """Words on the main path of the notebook at ``path``."""
    import nbformat

    nb = nbformat.read(path, as_version=4)
    words = 0
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            if END_OF_MAIN_PATH.match(cell.source.strip()):
                break
            words += len(cell.source.split())
        elif cell.cell_type == "code":
            words += sum(_output_words(out) for out in cell.get("outputs", []))
    return words


def notebooks():
    """The lessons' notebooks (appendix notebooks have no budget)."""
    return sorted(p for p in glob.glob(os.path.join(REPO_DIR, "notebooks", "[0-9]*.ipynb"))
                  if not APPENDIX.match(os.path.basename(p)))


def main(argv=None):
    paths = (argv if argv is not None else sys.argv[1:]) or notebooks()
    total = 0
    for path in paths:
        words, limit = main_path_words(path), budget(path)
        total += words
        print(f"{os.path.basename(path):45s} {words:6,d} / {limit:,d}{'  OVER' if words > limit else ''}")
    print(f"{'main path, all':45s} {total:6,d} / {COURSE_WORDS:,d}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
