"""The student build (python -m gemm_lessons.course.student): the glossary and the references beside
the notebooks, every relative link resolving, no output that gives an answer away."""
import glob
import os
import re
import subprocess
import sys

import nbformat
import pytest

from conftest import REPO
from gemm_lessons.course import student

NOTEBOOKS = sorted(glob.glob(os.path.join(REPO, "notebooks", "*.ipynb")))


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The student build into a folder outside the checkout (the hard case for ../ links)."""
    out = str(tmp_path_factory.mktemp("student") / "out")
    written = student.build(out)
    return out, written


def _slug(heading):
    """GitHub's anchor for a Markdown heading."""
    heading = re.sub(r"<[^>]+>", "", heading).strip().lower()
    heading = re.sub(r"[^\w\- ]", "", heading)
    return heading.replace(" ", "-")


def _anchors(path):
    """The ids a Markdown file or a notebook's Markdown cells define: raw HTML ids and headings."""
    if path.endswith(".ipynb"):
        text = "\n".join(c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "markdown")
    else:
        text = open(path, encoding="utf-8").read()
    ids = set(re.findall(r'\b(?:id|name)="([^"]+)"', text))
    ids.update(_slug(h) for h in re.findall(r"^#{1,6}[ \t]+(.+?)[ \t#]*$", text, re.M))
    return ids


def _link_texts(folder):
    """(file, Markdown or HTML text) for every notebook's Markdown cells and Markdown/HTML outputs,
    and every Markdown file, in ``folder``."""
    for path in sorted(glob.glob(os.path.join(folder, "*.ipynb"))):
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type == "markdown":
                yield path, cell.source
            for output in cell.get("outputs", []):
                for mime in ("text/markdown", "text/html"):
                    if mime in output.get("data", {}):
                        yield path, output.data[mime]
    for path in sorted(glob.glob(os.path.join(folder, "*.md"))):
        yield path, open(path, encoding="utf-8").read()


def _broken(folder):
    broken, anchors = [], {}
    for path, text in _link_texts(folder):
        for target in student.relative_links(text):
            file, _, anchor = target.partition("#")
            resolved = os.path.normpath(os.path.join(os.path.dirname(path), file)) if file else path
            where = f"{os.path.basename(path)}: {target}"
            if not os.path.exists(resolved):
                broken.append(where + " (no such file)")
            elif anchor and resolved.endswith((".md", ".ipynb")):
                if resolved not in anchors:
                    anchors[resolved] = _anchors(resolved)
                if anchor not in anchors[resolved]:
                    broken.append(where + " (no such anchor)")
    return broken


def test_glossary_and_references_beside_the_notebooks(built):
    out, written = built
    assert len(written) == len(NOTEBOOKS) > 0
    for name in student.COPIED:
        copy = os.path.join(out, name)
        assert os.path.exists(copy), name
        assert open(copy, encoding="utf-8").read().startswith(
            open(os.path.join(REPO, "notebooks", name), encoding="utf-8").read()[:200])


def test_every_relative_link_of_the_student_notebooks_resolves(built):
    out, _ = built
    links = [t for _, text in _link_texts(out) for t in student.relative_links(text)]
    assert sum("GLOSSARY.md#" in t for t in links) > 50 and any("REFERENCES.md#" in t for t in links)
    assert _broken(out) == []
    # the lessons' links out of notebooks/ (../tools/x.py) point at copies inside the folder
    outside = [t for t in links if t.startswith("../")]
    assert not outside, outside[:5]
    copies = [t.partition("#")[0] for t in links if t.startswith(student.LINKED_FILES + "/")]
    assert all(os.path.exists(os.path.join(out, t)) for t in copies), copies


def test_the_default_folder_beside_notebooks_keeps_the_links(tmp_path):
    """student/ sits beside notebooks/: ../tools/x.py resolves from there as it is, so nothing is copied;
    from a folder elsewhere the file is copied into <out>/files/."""
    repo = tmp_path / "repo"
    (repo / "notebooks").mkdir(parents=True)
    (repo / "tools").mkdir()
    (repo / "tools" / "x.py").write_text("print('x')\n")
    for name in student.COPIED:
        (repo / "notebooks" / name).write_text(f'# {name}\n\n### <a id="term"></a>term\n')
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(
        "See [x](../tools/x.py), [a term](GLOSSARY.md#term) and `kernel[blocks, threads](args)`.")])
    nbformat.write(nb, str(repo / "notebooks" / "a.ipynb"))

    beside = repo / "student"
    student.build(str(beside), str(repo / "notebooks"))
    assert "[x](../tools/x.py)" in (beside / "a.ipynb").read_text()
    assert not (beside / student.LINKED_FILES).exists() and _broken(str(beside)) == []

    elsewhere = tmp_path / "elsewhere"
    student.build(str(elsewhere), str(repo / "notebooks"))
    assert "[x](files/tools/x.py)" in (elsewhere / "a.ipynb").read_text()
    assert (elsewhere / "files" / "tools" / "x.py").read_text() == "print('x')\n"
    assert _broken(str(elsewhere)) == []
    assert (repo / "notebooks" / "a.ipynb").read_text().count("../tools/x.py") == 1  # the source is not changed


def test_no_output_gives_an_answer_away(built):
    out, written = built
    cleared = 0
    for path in written:
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type != "code":
                continue
            text = "\n".join(student._output_text(o) for o in cell.outputs)
            assert not student.VERDICT.search(text), (os.path.basename(path), text[:200])
            assert "no prediction written yet" not in text, os.path.basename(path)
            if student.ANSWER_CALLS.search(cell.source):
                assert cell.outputs == [] and cell.execution_count is None
                cleared += 1
    assert cleared >= 20


def test_reveals_answer():
    code = nbformat.v4.new_code_cell
    verdict = nbformat.v4.new_output("execute_result", {"text/plain": "Correct [01-kernel]: right result"})
    table = nbformat.v4.new_output("execute_result", {"text/plain": "kernel  GFLOP/s\nnaive   1234"})
    assert student.reveals_answer(code('exercises.check("00-flops", answer)'))
    assert student.reveals_answer(code("exercises.compare_prediction(my_speedup, 5.9, 'x', src)"))
    assert student.reveals_answer(code("### BEGIN SOLUTION\nx = 1\n### END SOLUTION"))
    assert student.reveals_answer(code("feedback", outputs=[verdict]))  # a check's verdict, however it was printed
    assert not student.reveals_answer(code("table = measure_step.compare(...)", outputs=[table]))
    nb = nbformat.v4.new_notebook(cells=[code("feedback", outputs=[verdict]), code("table", outputs=[table])])
    cleared = student.student_notebook(nb)
    assert cleared.cells[0].outputs == [] and cleared.cells[1].outputs == [table]
    assert nb.cells[0].outputs == [verdict]  # the teacher notebook is not changed


def test_command_line_lists_what_it_wrote(tmp_path):
    r = subprocess.run([sys.executable, "-m", "gemm_lessons.course.student", "--out", str(tmp_path / "s")],
                       cwd=REPO, capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, PYTHONPATH=os.pathsep.join([REPO, os.environ.get("PYTHONPATH", "")])))
    assert r.returncode == 0, r.stderr
    for name in student.COPIED:
        assert f"wrote {tmp_path / 's' / name}" in r.stdout


def test_the_student_copy_never_opens_the_teacher_notebook_on_colab():
    """Where the course's repository is set, a lesson's title carries a Colab badge for the teacher
    notebook (solutions included): the student copy drops it, or with --colab points it at itself."""
    from gemm_lessons.course import colab

    title = colab.with_badge("# 01: naive\nThe idea.", colab.colab_url("octo/gemm-lessons", "main", "01_naive"))
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(title), nbformat.v4.new_code_cell("x = 1")])
    assert "octo/gemm-lessons" in nb.cells[0].source
    assert student.student_notebook(nb).cells[0].source == "# 01: naive\nThe idea."
    url = student.student_colab_url("octo/class-2027", "main", "01_naive")
    mine = student.student_notebook(nb, url).cells[0].source
    assert mine.splitlines()[1] == f"{colab.BADGE}({url})" and "gemm-lessons" not in mine
    assert url == "https://colab.research.google.com/github/octo/class-2027/blob/main/01_naive.ipynb"


def test_command_line_refuses_a_malformed_colab_repository(tmp_path):
    r = subprocess.run([sys.executable, "-m", "gemm_lessons.course.student", "--out", str(tmp_path / "s"),
                        "--colab", "https://github.com/octo/x"], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert r.returncode == 2 and "OWNER/NAME" in r.stderr


def test_command_line_refuses_colab_badges_while_the_course_repository_is_unset(tmp_path):
    """Without the course's repository the setup cells cannot install it on Colab: no badge leads there."""
    from gemm_lessons.course import colab

    if colab.pyproject_setting()[0] is not None:
        pytest.skip("pyproject.toml sets the course's repository")
    r = subprocess.run([sys.executable, "-m", "gemm_lessons.course.student", "--out", str(tmp_path / "s"),
                        "--colab", "octo/class-2027"], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert r.returncode == 2 and "lesson_source --write" in r.stderr and not (tmp_path / "s").exists()
