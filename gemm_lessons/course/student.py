"""python -m gemm_lessons.course.student [--out student/] [--colab OWNER/NAME[@BRANCH]]: student notebooks without the solutions.

In every code cell, the lines between ``### BEGIN SOLUTION`` and ``### END SOLUTION`` are
replaced by a skeleton: the text after ``### BEGIN SOLUTION:`` on the same line if there is
one (for example ``answer = None``), otherwise ``raise NotImplementedError(...)``.  Markdown cells
starting with ``**Solution`` are dropped.

Outputs that give an answer away are cleared (``reveals_answer``): those of solution cells, of
cells that run an exercise's check (``exercises.check(...)``) or set a prediction against the
measurement (``exercises.compare_prediction(...)``), and of any cell whose stored output holds a
check's verdict (``Correct [<exercise>]`` / ``Not yet [<exercise>]``).  The measurements
themselves (tables, plots) are the lessons' material and stay.

A lesson's Colab badge would open the teacher notebook: the student copy has none, or, with
``--colab OWNER/NAME``, one that opens the student copy published at the top of that repository.

The lessons link to the glossary and the references (``GLOSSARY.md#term``): both are copied next
to the notebooks.  A link to a file outside notebooks/ (``../tools/l2order.py``) is kept as it is
where it resolves from ``--out`` too (the default, ``student/`` beside ``notebooks/``); elsewhere
the file is copied into ``<out>/files/`` (its path in the repository) and the link points there,
so every relative link of the folder resolves.
"""
import argparse
import glob
import os
import re
import shutil
import sys

import nbformat

from gemm_lessons.course import colab
from gemm_lessons.course.lesson_source import NOTEBOOK_DIR, REPO_DIR, setup_cell_drift

BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
COPIED = ("GLOSSARY.md", "REFERENCES.md")  # the lessons link to these
LINKED_FILES = "files"  # <out>/files/<repository path>: files outside notebooks/ that a lesson links
ANSWER_CALLS = re.compile(r"\bexercises\.(check|compare_prediction)\(")
VERDICT = re.compile(r"\b(Correct|Not yet) \[[\w.-]+\]")  # exercises.Feedback's text


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


def _output_text(output):
    if output.get("output_type") == "stream":
        return output.get("text", "")
    return "\n".join(v if isinstance(v, str) else str(v) for v in output.get("data", {}).values())


def reveals_answer(cell):
    """Whether a code cell's stored outputs may give an exercise's answer away: a solution cell, a
    check or a prediction's comparison, or an output holding a check's verdict."""
    return cell.cell_type == "code" and (
        BEGIN in cell.source or ANSWER_CALLS.search(cell.source) is not None
        or any(VERDICT.search(_output_text(o)) for o in cell.get("outputs", [])))


def student_notebook(nb, colab_url=None):
    """The student copy of a lesson notebook.  Its Colab badge (under the title, where the course's
    repository is set) would open the teacher notebook, solutions included: it is dropped, or, with
    ``colab_url``, made to open that URL (the student copy where it is published)."""
    nb = nbformat.from_dict(nb)
    cells, titled = [], False
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            cell.source = colab.with_badge(cell.source, None if titled else colab_url)
            titled = True
        if cell.cell_type == "markdown" and cell.source.lstrip().startswith("**Solution"):
            continue
        if cell.cell_type == "code":
            if reveals_answer(cell):
                cell.outputs = []
                cell.execution_count = None
            if BEGIN in cell.source:
                cell.source = strip_solutions(cell.source)
        cells.append(cell)
    nb.cells = cells
    return nb


# --- links --------------------------------------------------------------------------------

# a Markdown link or image target, or an HTML href/src: (prefix, target, suffix)
LINK = re.compile(r"""(\]\()([^)\s]+)(\))|(\b(?:href|src)=")([^"]+)(")""")


CODE = re.compile(r"^(```|~~~).*?^\1[ \t]*$|(`+)(?!`).+?(?<!`)\2(?!`)", re.S | re.M)  # fenced blocks, code spans


def relative_links(text):
    """The relative link targets in Markdown or HTML ``text`` (no scheme, not a bare #anchor),
    outside code (``kernel[blocks, threads](args)`` is not a link)."""
    targets = []
    for m in LINK.finditer(CODE.sub("", text)):
        target = m.group(2) or m.group(5)
        if not re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:", target) and not target.startswith("#"):
            targets.append(target)
    return targets


def _relink(text, notebook_dir, out_dir, repo_dir, copied):
    """``text`` with its links to files outside ``notebook_dir`` made to resolve from ``out_dir``."""
    def fix(m):
        prefix, target, suffix = (m.group(1), m.group(2), m.group(3)) if m.group(2) else (m.group(4), m.group(5), m.group(6))
        if re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:", target) or target.startswith("#"):
            return m.group(0)
        path, _, anchor = target.partition("#")
        source = os.path.normpath(os.path.join(notebook_dir, path))
        if (os.path.dirname(source) == os.path.normpath(notebook_dir) or not os.path.exists(source)
                or os.path.normpath(os.path.join(out_dir, path)) == source):
            return m.group(0)  # a notebook or a copied page, a link that is broken anyway, or one that resolves as it is
        inside = os.path.relpath(source, repo_dir)
        if inside.startswith(".."):
            return m.group(0)  # outside the repository: not ours to copy
        dest = os.path.join(out_dir, LINKED_FILES, inside)
        if os.path.isfile(source):
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            shutil.copyfile(source, dest)
            copied.add(dest)
        new = os.path.relpath(dest, out_dir).replace(os.sep, "/") + ("#" + anchor if anchor else "")
        return prefix + new + suffix
    return LINK.sub(fix, text)


def _relink_notebook(nb, notebook_dir, out_dir, repo_dir, copied):
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            cell.source = _relink(cell.source, notebook_dir, out_dir, repo_dir, copied)
        for output in cell.get("outputs", []):
            for mime in ("text/markdown", "text/html"):
                if isinstance(output.get("data", {}).get(mime), str):
                    output.data[mime] = _relink(output.data[mime], notebook_dir, out_dir, repo_dir, copied)
    return nb


def student_colab_url(repository, branch, notebook):
    """Colab's URL of a student notebook published at the top of ``repository`` (the build's folder
    committed as it is, as TEACHING.md's JupyterHub steps do)."""
    return f"{colab.COLAB}/github/{repository}/blob/{branch}/{notebook}.ipynb"


def build(out_dir, notebook_dir=NOTEBOOK_DIR, repo_dir=None, colab_repository=None, colab_branch="main"):
    """Write the student notebooks, the glossary and the references into ``out_dir``; returns the
    notebooks' paths (``copied_files(out_dir)`` lists the rest).  ``colab_repository``: where the
    student notebooks will be published; their Colab badges open them there (none without it)."""
    notebook_dir = os.path.abspath(notebook_dir)
    repo_dir = os.path.abspath(repo_dir or os.path.dirname(notebook_dir))  # notebooks/ is at the repository's top
    os.makedirs(out_dir, exist_ok=True)
    written, copied, where = [], set(), os.path.abspath(out_dir)
    for path in sorted(glob.glob(os.path.join(notebook_dir, "*.ipynb"))):
        name = os.path.splitext(os.path.basename(path))[0]
        url = student_colab_url(colab_repository, colab_branch, name) if colab_repository else None
        nb = student_notebook(nbformat.read(path, as_version=4), url)
        nb = _relink_notebook(nb, notebook_dir, where, repo_dir, copied)
        dest = os.path.join(out_dir, os.path.basename(path))
        nbformat.write(nb, dest)
        written.append(dest)
    for name in COPIED:
        source = os.path.join(notebook_dir, name)
        if not os.path.exists(source):
            raise FileNotFoundError(f"{source}: the lessons link to it")
        with open(source, encoding="utf-8") as f:
            text = _relink(f.read(), notebook_dir, where, repo_dir, copied)
        with open(os.path.join(out_dir, name), "w", encoding="utf-8") as f:
            f.write(text)
    return written


def copied_files(out_dir):
    """What ``build`` wrote beside the notebooks: the glossary, the references, linked files."""
    files = [os.path.join(out_dir, name) for name in COPIED if os.path.exists(os.path.join(out_dir, name))]
    for root, _, names in os.walk(os.path.join(out_dir, LINKED_FILES)):
        files += sorted(os.path.join(root, n) for n in names)
    return files


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=os.path.join(REPO_DIR, "student"), help="output folder (default: student/)")
    p.add_argument("--colab", metavar="OWNER/NAME[@BRANCH]",
                   help="the GitHub repository the student notebooks will be published in (this folder's contents at "
                        "its top): each gets an Open in Colab badge for its own copy there; without it, none")
    args = p.parse_args(argv)
    repository, _, branch = (args.colab or "").partition("@")
    if args.colab and not (colab.REPOSITORY_FORM.match(repository) and colab.BRANCH_FORM.match(branch or "main")):
        p.error(f"--colab {args.colab!r}: give OWNER/NAME or OWNER/NAME@BRANCH, as on GitHub")
    if args.colab and (colab.pyproject_setting()[0] is None or setup_cell_drift()):
        # the setup cells could not install the course on Colab: unset, or not yet written into the lessons
        p.error("--colab: the lessons' setup cells do not name the course's repository, so on Colab they would stop: "
                "set repository = \"OWNER/NAME\" under [tool.gemm-lessons] in pyproject.toml, run "
                "python -m gemm_lessons.course.lesson_source --write, and build again")
    for path in build(args.out, colab_repository=repository or None, colab_branch=branch or "main") + copied_files(args.out):
        print("wrote", path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
