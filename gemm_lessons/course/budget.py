"""How many words a student reads on each lesson's main path, against the lesson standard's budget.

The main path is every cell up to the first markdown cell that starts with a "Lab notes" or
"Appendix" heading: the markdown, and the text code cells print to stdout or render (a table, a
sentence; not images, not the code).  Budgets (../shared/LESSON_PLAN.md): 2,000 words a lesson, 3,000 for the primer and lesson 11's core, under
24,000 for the whole main path.

    python -m gemm_lessons.course.budget [notebooks/01_naive.ipynb ...]
    python -m gemm_lessons.course.budget --course   # COURSE.md's words and reading times, rewritten
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


WORDS_PER_MINUTE = 200
COURSE_ROW = re.compile(r"^\| (?P<n>\w+) \| (?P<nb>[^|]+) \| (?P<words>[\d,]+) \| (?P<min>\d+) min \|(?P<rest>.*)$")
COURSE_HOURS = re.compile(r"(At 200 words a minute the main path is about )[\d.]+( hours of reading)")
COURSE_TOTAL = re.compile(r"^\| \| all (?P<count>\d+) \| (?P<words>[\d,]+) \| (?P<min>\d+) min \|(?P<rest>.*)$")


def course_table(text, words_of):
    """COURSE.md's text with each lesson's main-path words and reading time (at WORDS_PER_MINUTE)
    set from ``words_of`` (lesson number -> words), and the total row summed."""
    lines, total, count = [], 0, 0
    for line in text.splitlines():
        m = COURSE_ROW.match(line)
        if m and m.group("n") in words_of:
            words = words_of[m.group("n")]
            total, count = total + words, count + 1
            line = (f"| {m.group('n')} | {m.group('nb')} | {words:,} | {round(words / WORDS_PER_MINUTE)} min |"
                    + m.group("rest"))
        t = COURSE_TOTAL.match(line)
        if t:
            line = f"| | all {count} | {total:,} | {round(total / WORDS_PER_MINUTE)} min |" + t.group("rest")
        lines.append(line)
    return _with_hours("\n".join(lines) + "\n", total)


def reading_hours(text, words_of):
    """``text`` (the README) with its "At 200 words a minute the main path is about N hours of
    reading" set from ``words_of``, the sum COURSE.md's table gives."""
    return _with_hours(text, sum(words_of.values()))


def _with_hours(text, words):
    return COURSE_HOURS.sub(lambda m: f"{m.group(1)}{words / WORDS_PER_MINUTE / 60:.1f}{m.group(2)}", text)


def lesson_words():
    """Lesson number ("00a", "01", ...) -> main-path words of its notebook."""
    return {os.path.basename(p).split("_")[0]: main_path_words(p) for p in notebooks()}


def main(argv=None):
    import argparse

    parser = argparse.ArgumentParser(prog="python -m gemm_lessons.course.budget",
                                     description="Each lesson's main-path words against its budget (as the stop hook "
                                                 "counts them), or, with --course, COURSE.md's table and the README's hours rewritten.")
    parser.add_argument("notebooks", nargs="*", help="notebooks to count (default: every lesson)")
    parser.add_argument("--course", action="store_true", help="rewrite COURSE.md's words and reading times, and the README's hours")
    args = parser.parse_args(argv)
    if args.course:
        words_of = lesson_words()
        for name, rewrite in (("COURSE.md", course_table), ("README.md", reading_hours)):
            path = os.path.join(REPO_DIR, name)
            with open(path) as f:
                text = rewrite(f.read(), words_of)
            with open(path, "w") as f:
                f.write(text)
            print("rewrote", path)
        return 0
    missing = [p for p in args.notebooks if not os.path.isfile(p)]
    if missing:
        parser.error(f"no such notebook: {', '.join(missing)} (give paths such as notebooks/05_*.ipynb)")
    total = 0
    for path in args.notebooks or notebooks():
        words, limit = main_path_words(path), budget(path)
        total += words
        print(f"{os.path.basename(path):45s} {words:6,d} / {limit:,d}{'  OVER' if words > limit else ''}")
    print(f"{'main path, all':45s} {total:6,d} / {COURSE_WORDS:,d}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
