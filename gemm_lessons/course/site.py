"""python -m gemm_lessons.course.site [--teacher | --student] [--out DIR] [--repository OWNER/NAME]: the course website.

Static HTML of the whole series: the README as the home page, every lesson notebook with its
committed outputs and plots (nothing is executed: the notebooks are run on a GPU before they are
committed), the glossary and the references, and the course's documents (COURSE.md, TEACHING.md,
RESULTS.md, DEVELOPING.md, CHANGELOG.md).  Open ``<out>/index.html``, or publish the folder
as it is (GitHub Pages included: a ``.nojekyll`` file is written).

Two editions:

* ``--teacher`` (the default; into build/site): the notebooks as committed, solutions and the
  checks' "Correct" outputs included.  For the teachers, or for a course that publishes its answers.
* ``--student`` (into build/site-student): each lesson as ``python -m gemm_lessons.course.student``
  writes it: the skeletons in place of the solutions, and no output that gives an answer away
  (see ``student.reveals_answer``: solution cells, checks, predictions' comparisons).  A page's
  download button gives that student notebook (it replaces the teacher notebook Sphinx copies
  into ``_sources/``), and the pages have no Colab or repository buttons, which would open the
  repository's notebooks, solutions included (``--repository`` is refused).

Both editions, on Sphinx's copy of each notebook (the files are not changed): a progress bar
(tqdm writes it to stderr, each update after a carriage return) shows as its final line, as plain
output, not as a stderr block; every plot gets an alt text (``figure_alt``: the title in the PNG,
else the cell's first comment line, else "figure: <lesson title>: <section>"), not the image's hash.

Choices, and why:

* Sphinx with myst-nb (what Jupyter Book 1 runs on) and sphinx-book-theme: myst-nb renders the
  stored outputs (``nb_execution_mode = "off"``) and turns the lessons' ``GLOSSARY.md#term`` and
  ``NN_name.ipynb`` links into links between pages; the theme gives a sidebar in course order and
  Colab launch buttons.
* The checkout is Sphinx's source folder (only README.md, the documents beside it in ``DOCUMENTS``
  and notebooks/ are read) and the
  configuration is the dict below, passed to Sphinx in this process: no conf.py in the repository,
  nothing copied, and a warning names the real file and line.  The changes above are made on the
  text Sphinx has read (its ``source-read`` event), not on the files.
* The course order is the order of the README's lesson table, a lesson's appendix notebook
  (``NNb_name``: its lab notes) right after the lesson; any other notebook missing from that table
  is an error (so the sidebar, the table and the folder cannot disagree).  Sphinx names a page
  after its document, so the home page is README.html; index.html is a copy of it.
* Colab buttons need the public repository, which is one setting: ``--repository OWNER/NAME``,
  else the environment variable GEMM_LESSONS_REPOSITORY, else ``[tool.gemm-lessons] repository``
  in pyproject.toml (the branch likewise: ``--branch``, GEMM_LESSONS_BRANCH, ``branch``, default
  main; ``gemm_lessons.course.colab`` reads it).  With none set, the pages have no Colab
  buttons, and the build says so in one line.
* Sphinx builds into a temporary folder that is then copied to ``--out``: myst-nb writes the
  outputs' images beside its output folder (``<out>/../jupyter_execute``), which would leave a
  stray folder next to ``--out``.
* After the build every internal link, image and anchor in the HTML is checked (``broken_links``);
  the build fails, naming them, if one does not resolve.
"""
import argparse
import base64
import copy
import glob
import os
import re
import shutil
import struct
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass, field
from html.parser import HTMLParser
from urllib.parse import unquote, urlsplit

import nbformat

from gemm_lessons.course.budget import APPENDIX
from gemm_lessons.course.colab import COLAB, SettingError, branch_setting, colab_url, repository_setting  # noqa: F401
from gemm_lessons.course.lesson_source import REPO_DIR
from gemm_lessons.course.student import student_notebook

DEFAULT_OUT = os.path.join(REPO_DIR, "build", "site")
DEFAULT_STUDENT_OUT = os.path.join(REPO_DIR, "build", "site-student")
INSTALL_HINT = 'pip install -e ".[site]"'
REFERENCE_PAGES = ["GLOSSARY", "REFERENCES"]  # notebooks/<name>.md, after the lessons
DOCUMENTS = ["COURSE", "TEACHING", "RESULTS", "DEVELOPING", "CHANGELOG"]  # <name>.md beside README.md, last


class SiteError(SettingError):
    """The site cannot be built as asked; the message says why and what to do."""


@dataclass
class Build:
    out: str
    pages: list  # page paths relative to out, e.g. notebooks/01_naive.html
    warnings: list = field(default_factory=list)
    seconds: float = 0.0
    repository: str = None
    branch: str = None
    student: bool = False


# --- what goes in, in which order -----------------------------------------------------------

def lesson_order(readme_text, notebook_names):
    """The notebooks' names in course order: the order the README's lesson table links them, each
    lesson's appendix notebook (``11b_what_we_tried`` for lesson ``11_...``) right after it.

    ``notebook_names`` are the files in notebooks/ without .ipynb; every one must be in the table
    or be the appendix of a lesson that is, and the table must name no other."""
    section = re.search(r"^## The lessons\n(.*?)(?=^## |\Z)", readme_text, re.S | re.M)
    if not section:
        raise SiteError("README.md has no '## The lessons' section: the course order comes from its table")
    order = []
    for name in re.findall(r"\(notebooks/([^)/#]+)\.ipynb\)", section.group(1)):
        if name not in order:
            order.append(name)
    for appendix in sorted(n for n in notebook_names if APPENDIX.match(n) and n not in order):
        lesson = appendix[:APPENDIX.match(appendix).end() - len("b_")] + "_"  # "11b_..." follows "11_..."
        at = [i for i, n in enumerate(order) if n.startswith(lesson)]
        if at:
            order.insert(at[-1] + 1, appendix)
    missing = [n for n in sorted(notebook_names) if n not in order]
    unknown = [n for n in order if n not in notebook_names]
    if missing or unknown:
        problems = []
        if missing:
            problems.append("not linked from its lesson table: " + ", ".join(f"notebooks/{n}.ipynb" for n in missing))
        if unknown:
            problems.append("linked but not in notebooks/: " + ", ".join(f"{n}.ipynb" for n in unknown))
        raise SiteError("README.md's lesson table and notebooks/ disagree (" + "; ".join(problems) + ")")
    return order


# A raw-HTML anchor (``### <a id="kernel"></a>kernel``), which GitHub and JupyterLab honour, is
# invisible to Sphinx, so a link to GLOSSARY.md#kernel would not resolve; on its way into Sphinx
# (the files are not changed) it becomes a MyST target, ``(kernel)=``, before the heading or list item.
HEADING_ANCHOR = re.compile(r'^(#{1,6}[ \t]+)<a (?:id|name)="([^"]+)"></a>[ \t]*', re.M)
ITEM_ANCHOR = re.compile(r'^([ \t]*(?:[*+-]|\d+[.)])[ \t]+)<a (?:id|name)="([^"]+)"></a>[ \t]*', re.M)


def myst_targets(markdown):
    markdown = HEADING_ANCHOR.sub(lambda m: f"({m.group(2)})=\n{m.group(1)}", markdown)
    return ITEM_ANCHOR.sub(lambda m: f"{m.group(1)}({m.group(2)})=\n{' ' * len(m.group(1))}", markdown)


def toctree(caption, docnames):
    """A hidden toctree: it makes the sidebar, and shows nothing on the page."""
    entries = "\n".join(docnames)
    return f"\n\n```{{toctree}}\n:hidden:\n:caption: {caption}\n\n{entries}\n```\n"


# --- what a notebook looks like on the site (on Sphinx's copy) -----------------------------

# tqdm's line: "<description>: 42%|████      | 4/10 [00:05<00:07, 1.2s/it, ...]"
PROGRESS_BAR = re.compile(r"^(?P<desc>[^\r\n|]*?)\s*(?P<pct>\d{1,3})%\|")


def terminal_lines(text):
    """The lines a terminal shows of ``text``: each line's last stretch after a carriage return
    (a progress bar redraws itself with ``\\r``; tqdm pads each redraw to the full width)."""
    return [next((part for part in reversed(line.split("\r")) if part), "") for line in text.split("\n")]


def collapse_progress(outputs):
    """A cell's outputs with each progress bar as its final line, in a plain (stdout) stream where
    its stderr stream was; any other stderr text stays stderr.  Returns a new list."""
    merged = []
    for output in outputs:  # a bar's updates may be stored as several stderr outputs in a row
        if (merged and output.get("output_type") == "stream" and output.get("name") == "stderr"
                and merged[-1].get("output_type") == "stream" and merged[-1].get("name") == "stderr"):
            merged[-1] = nbformat.from_dict(dict(merged[-1], text=merged[-1]["text"] + output["text"]))
        else:
            merged.append(output)
    result = []
    for output in merged:
        if output.get("output_type") != "stream" or output.get("name") != "stderr":
            result.append(output)
            continue
        bars, rest = [], []
        for line in terminal_lines(output["text"]):
            m = PROGRESS_BAR.match(line)
            if not m:
                rest.append(line)
            elif bars and bars[-1][0] == m["desc"] and bars[-1][1] != "100":
                bars[-1] = (m["desc"], m["pct"], line.rstrip())  # a later state of the same bar
            else:
                bars.append((m["desc"], m["pct"], line.rstrip()))
        if not bars:
            result.append(output)
            continue
        result.append(nbformat.from_dict({"output_type": "stream", "name": "stdout",
                                          "text": "".join(bar[2] + "\n" for bar in bars)}))
        if "".join(rest).strip():
            result.append(nbformat.from_dict({"output_type": "stream", "name": "stderr",
                                              "text": "\n".join(rest).strip("\n") + "\n"}))
    return result


def png_title(b64):
    """The Title text chunk of a base64 PNG (matplotlib writes one when asked to), or None."""
    try:
        data = base64.b64decode(b64)
    except (ValueError, TypeError):
        return None
    pos = 8
    while data[:8] == b"\x89PNG\r\n\x1a\n" and pos + 8 <= len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"tEXt" and b"\0" in body:
            key, value = body.split(b"\0", 1)
            if key == b"Title" and value.strip():
                return value.decode("latin-1").strip()
        if kind == b"IEND":
            break
        pos += 12 + length
    return None


def _first_comment(source):
    for line in source.splitlines():
        text = line.strip()
        if text.startswith("#") and not text.startswith(("# source:", "# NBVAL", "#!")):
            text = text.lstrip("#").strip()
            if text:
                return text
    return None


def figure_alt(cell, lesson_title, section=None):
    """A plot's alt text: the figure's title (from the PNG), else the cell's first comment line,
    else "figure: <lesson title>", with the section it is in."""
    for output in cell.get("outputs", []):
        title = png_title(output.get("data", {}).get("image/png", ""))
        if title:
            return title
    comment = _first_comment(cell.source)
    if comment:
        return comment
    return f"figure: {lesson_title}" + (f": {section}" if section and section != lesson_title else "")


HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t#]*$", re.M)
FENCE = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)  # a comment in a fenced code block is no heading


def _plain(heading):
    """A Markdown heading as text: no links, code marks, bold or raw anchors (``smem_tile`` keeps its _)."""
    heading = re.sub(r"<[^>]+>", "", heading)
    heading = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    return re.sub(r"[`*]", "", heading).strip()


def site_notebook(nb, student=False):
    """The notebook as the site shows it (a copy; ``nb`` is not changed): the student notebook
    when ``student``; progress bars collapsed; alt texts on the plots (cell metadata
    ``mystnb.image.alt``, unless the cell sets its own)."""
    nb = copy.deepcopy(nbformat.from_dict(nb))
    if student:
        nb = student_notebook(nb)
    lesson_title, section = None, None
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            for level, text in HEADING.findall(FENCE.sub("", cell.source)):
                if lesson_title is None and len(level) == 1:
                    lesson_title = _plain(text)
                elif len(level) > 1:
                    section = _plain(text)
            continue
        if cell.cell_type != "code":
            continue
        cell.outputs = collapse_progress(cell.get("outputs", []))
        if any("image/png" in o.get("data", {}) for o in cell.outputs):
            image = cell.metadata.setdefault("mystnb", {}).setdefault("image", {})
            image.setdefault("alt", figure_alt(cell, lesson_title or "gemm-lessons", section))
    return nb


# --- the build ------------------------------------------------------------------------------

def sphinx_config(repository=None, branch="main", student=False):
    theme_options = {
        "home_page_in_toc": True,  # the README is the sidebar's first entry
        "show_toc_level": 2,  # the lesson's sections in the right-hand table of contents
        "use_download_button": True,  # the .ipynb itself, from _sources/ (the student notebook on the student site)
        "use_fullscreen_button": False,
    }
    if repository and student:
        raise SiteError("the student site has no Colab or repository buttons: they open the repository's "
                        "notebooks, solutions included")
    if repository:
        theme_options.update({
            "repository_url": f"https://github.com/{repository}",
            "repository_branch": branch,
            "path_to_docs": "",  # page notebooks/01_naive is notebooks/01_naive.ipynb in the repository
            "use_repository_button": True,
            "launch_buttons": {"colab_url": COLAB},
        })
    return {
        "project": "gemm-lessons",
        "extensions": ["myst_nb"],
        "root_doc": "README",
        # only the course: the rest of the checkout (lessons/*.py, results/, tools/) is not a page
        "include_patterns": ["README.md", *(f"{d}.md" for d in DOCUMENTS), "notebooks/*.ipynb", "notebooks/*.md"],
        "exclude_patterns": ["**/.ipynb_checkpoints"],
        "nb_execution_mode": "off",  # the committed outputs, recorded on a GPU
        "nb_merge_streams": True,  # one block per cell for stdout, as Jupyter shows it
        "nb_render_markdown_format": "gfm",  # Markdown outputs with their tables, as Jupyter shows them (default: commonmark, no tables)
        "myst_enable_extensions": ["dollarmath"],  # the lessons' $2MNK$
        "myst_heading_anchors": 3,  # GitHub-style #heading links
        "html_theme": "sphinx_book_theme",
        "html_title": "gemm-lessons (student edition)" if student else "gemm-lessons",
        "html_theme_options": theme_options,
    }


def _require_sphinx():
    try:
        import myst_nb  # noqa: F401
        import sphinx  # noqa: F401
        import sphinx_book_theme  # noqa: F401
    except ImportError as e:
        raise SiteError(f"building the site needs Sphinx, myst-nb and sphinx-book-theme ({e.name} is missing): "
                        f"{INSTALL_HINT}") from None


class _Tee:
    """Sphinx's warning stream: shown as they come, and kept for the summary."""

    def __init__(self, stream):
        self.stream, self.text = stream, []

    def write(self, s):
        self.text.append(s)
        if self.stream is not None:
            self.stream.write(s)

    def flush(self):
        if self.stream is not None:
            self.stream.flush()

    def warnings(self):
        return [line for line in "".join(self.text).splitlines() if "WARNING" in line or "ERROR" in line]


MARKER = ".gemm-lessons-site"  # in every built site: a folder without it is never replaced


def _check_replaceable(out):
    """``out`` may be written: it does not exist, is empty, or holds a site this module built."""
    if os.path.exists(out) and not (os.path.isdir(out) and not os.listdir(out)
                                    or os.path.exists(os.path.join(out, MARKER))):
        raise SiteError(f"{out} exists and is not a site this command built (no {MARKER} in it): "
                        "choose another --out, or remove it yourself")


def _replace(out, html):
    """Copy the built ``html`` folder to ``out``, replacing a site built before, and nothing else."""
    _check_replaceable(out)
    if os.path.exists(out):
        shutil.rmtree(out)
    shutil.copytree(html, out)


_SOURCE_LINK = re.compile(r'href="([^"/:#?]+)\.(?:md|ipynb)(#[^"]*)?"')


def _output_links(folder):
    """Links written by the notebooks' code (a table rendered as markdown in an output, e.g. the
    profiler's links to GLOSSARY.md#...) are not resolved by Sphinx, as the markdown cells' are:
    point each link to a .md or .ipynb file of the same folder at its built page."""
    for name in os.listdir(folder):
        if not name.endswith(".html"):
            continue
        path = os.path.join(folder, name)
        with open(path, encoding="utf-8") as f:
            text = f.read()
        fixed = _SOURCE_LINK.sub(lambda m: f'href="{m.group(1)}.html{m.group(2) or ""}"'
                                 if os.path.exists(os.path.join(folder, m.group(1) + ".html")) else m.group(0), text)
        if fixed != text:
            with open(path, "w", encoding="utf-8") as f:
                f.write(fixed)


def _student_sources(html, notebook_dir, names):
    """The download button's copies of the notebooks (Sphinx copies the files it read, the teacher
    notebooks) replaced by the student notebooks."""
    for name in names:
        copies = glob.glob(os.path.join(html, "_sources", "notebooks", glob.escape(name) + ".ipynb*"))
        nb = student_notebook(nbformat.read(os.path.join(notebook_dir, name + ".ipynb"), as_version=4))
        for path in copies:
            nbformat.write(nb, path)


def build(out=DEFAULT_OUT, repository=None, branch="main", repo_dir=REPO_DIR, verbose=False, warning_stream=None,
          student=False):
    """Build the site into ``out`` (a site built there before is replaced): the teacher edition, or
    the student edition when ``student``.  Returns a Build; raises SiteError when it fails.  Sphinx's
    warnings go to ``warning_stream`` (default: stderr) as well."""
    _require_sphinx()
    from sphinx.application import Sphinx
    from sphinx.errors import SphinxError
    from sphinx.util.console import nocolor
    from sphinx.util.docutils import docutils_namespace, patch_docutils

    nocolor()  # the warnings are also kept as text
    start = time.perf_counter()
    config = sphinx_config(repository, branch, student)  # refuses a repository for the student site
    _check_replaceable(out)  # before spending the build on it
    notebook_dir = os.path.join(repo_dir, "notebooks")
    if not os.path.isdir(notebook_dir):
        raise SiteError(f"no notebooks/ folder in {repo_dir}: build the site from a checkout of gemm-lessons")
    names = sorted(f[:-len(".ipynb")] for f in os.listdir(notebook_dir) if f.endswith(".ipynb"))
    with open(os.path.join(repo_dir, "README.md"), encoding="utf-8") as f:
        order = lesson_order(f.read(), names)
    missing = ([f"notebooks/{p}.md" for p in REFERENCE_PAGES if not os.path.exists(os.path.join(notebook_dir, p + ".md"))]
               + [f"{d}.md" for d in DOCUMENTS if not os.path.exists(os.path.join(repo_dir, d + ".md"))])
    if missing:
        raise SiteError(f"{missing[0]} not found")
    tree = (toctree("Lessons", [f"notebooks/{n}" for n in order])
            + toctree("Reference", [f"notebooks/{p}" for p in REFERENCE_PAGES])
            + toctree("The course", DOCUMENTS))

    def prepare(app, docname, source):
        suffix = app.env.doc2path(docname).suffix
        if suffix == ".md":
            source[0] = myst_targets(source[0])
        elif suffix == ".ipynb":
            source[0] = nbformat.writes(site_notebook(nbformat.reads(source[0], as_version=4), student))
        if docname == "README":
            source[0] += tree

    tee = _Tee(sys.stderr if warning_stream is None else warning_stream)
    with tempfile.TemporaryDirectory(prefix="gemm-lessons-site-") as tmp:
        html = os.path.join(tmp, "html")
        with patch_docutils(None), docutils_namespace(), warnings.catch_warnings():
            # the extensions' use of APIs Sphinx will remove: theirs to fix, and hundreds of lines
            warnings.filterwarnings("ignore", message=r".* is deprecated\. Check CHANGES for Sphinx API modifications")
            try:
                app = Sphinx(repo_dir, None, html, os.path.join(tmp, "doctrees"), "html",
                             confoverrides=config,
                             status=sys.stdout if verbose else None, warning=tee, freshenv=True)
                app.connect("source-read", prepare)
                app.build()
            except SphinxError as e:
                raise SiteError(f"Sphinx failed: {e}") from e
        if app.statuscode:
            raise SiteError(f"Sphinx failed (status {app.statuscode}); its messages are above")
        _output_links(os.path.join(html, "notebooks"))
        if student:
            _student_sources(html, notebook_dir, names)
        shutil.copyfile(os.path.join(html, "README.html"), os.path.join(html, "index.html"))
        open(os.path.join(html, ".nojekyll"), "w").close()  # GitHub Pages: serve _static/ and _images/ as they are
        with open(os.path.join(html, MARKER), "w") as f:
            f.write("built by python -m gemm_lessons.course.site, which replaces this folder when it builds again\n")
        if os.path.exists(os.path.join(html, ".buildinfo")):
            os.remove(os.path.join(html, ".buildinfo"))  # Sphinx's incremental-build record: this build is always fresh
        _replace(out, html)
    pages = (["index.html", "README.html"] + [f"notebooks/{n}.html" for n in order + REFERENCE_PAGES]
             + [f"{d}.html" for d in DOCUMENTS])
    absent = [p for p in pages if not os.path.exists(os.path.join(out, p))]
    if absent:
        raise SiteError(f"Sphinx wrote no {', '.join(absent)}")
    broken = broken_links(out)
    if broken:
        raise SiteError(f"{len(broken)} internal link(s) do not resolve:\n  " + "\n  ".join(broken[:50]))
    return Build(out, pages, tee.warnings(), time.perf_counter() - start, repository, branch, student)


# --- checking the result --------------------------------------------------------------------

class _PageLinks(HTMLParser):
    """The ids a page defines and the links (href, src) it makes."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.ids, self.links = set(), []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if attrs.get("id"):
            self.ids.add(attrs["id"])
        if tag == "a" and attrs.get("name"):
            self.ids.add(attrs["name"])
        for attr in ("href", "src"):
            if attrs.get(attr):
                self.links.append(attrs[attr])


def page_links(path):
    parser = _PageLinks()
    with open(path, encoding="utf-8") as f:
        parser.feed(f.read())
    return parser


def broken_links(out):
    """Every link, image or script of every page under ``out`` that points inside the site but at
    no file, or at an id its page does not have: a list of 'page: target' strings."""
    pages, broken = {}, []
    for root, dirs, files in os.walk(out):
        dirs[:] = [d for d in dirs if not d.startswith("_")]  # _static/, _sources/: the theme's and the sources, not pages
        for f in files:
            if f.endswith(".html"):
                path = os.path.join(root, f)
                pages[os.path.normpath(path)] = page_links(path)
    for page, parsed in sorted(pages.items()):
        for link in parsed.links:
            parts = urlsplit(link)
            if parts.scheme or parts.netloc or link.startswith("#") and not parts.fragment:
                continue  # another site, data:, javascript:, or a bare '#' (a button)
            target = os.path.normpath(os.path.join(os.path.dirname(page), unquote(parts.path))) if parts.path else page
            if os.path.isdir(target):
                target = os.path.join(target, "index.html")
            where = f"{os.path.relpath(page, out)}: {link}"
            if not target.startswith(os.path.normpath(out) + os.sep):
                broken.append(where + " (outside the site)")
            elif not os.path.exists(target):
                broken.append(where + " (no such file)")
            elif parts.fragment and target.endswith(".html"):
                ids = pages[target].ids if target in pages else page_links(target).ids
                if unquote(parts.fragment) not in ids:
                    broken.append(where + " (no such anchor)")
    return broken


# --- command line ---------------------------------------------------------------------------

def main(argv=None):
    p = argparse.ArgumentParser(description="the course website: the README, the lessons with their recorded "
                                            "outputs, the glossary and the references, as static HTML")
    edition = p.add_mutually_exclusive_group()
    edition.add_argument("--teacher", dest="student", action="store_false",
                         help="the notebooks as committed, solutions and checks' outputs included (the default)")
    edition.add_argument("--student", dest="student", action="store_true",
                         help="the student notebooks: skeletons instead of solutions, no output that gives an "
                              "answer away, the student notebook behind the download button, no Colab buttons")
    p.set_defaults(student=False)
    p.add_argument("--out", help="output folder, replaced (default: build/site; build/site-student with --student)")
    p.add_argument("--repository", help="GitHub OWNER/NAME for the Colab buttons (default: $GEMM_LESSONS_REPOSITORY, "
                                        "then [tool.gemm-lessons] repository in pyproject.toml); teacher site only")
    p.add_argument("--branch", help="the branch Colab opens (default: $GEMM_LESSONS_BRANCH, then "
                                    "[tool.gemm-lessons] branch, then main)")
    p.add_argument("--verbose", action="store_true", help="show Sphinx's progress")
    args = p.parse_args(argv)
    out = args.out or (DEFAULT_STUDENT_OUT if args.student else DEFAULT_OUT)
    try:
        if args.student:
            if args.repository:
                raise SiteError("--repository with --student: the student site has no Colab or repository buttons "
                                "(they would open the repository's notebooks, solutions included)")
            repository, branch = None, None
            print("site: the student edition: no solutions, no Colab buttons; the download button gives the student notebook")
        else:
            repository, _ = repository_setting(args.repository)
            branch = branch_setting(args.branch)
            if repository is None:
                print("site: no repository set (--repository OWNER/NAME, GEMM_LESSONS_REPOSITORY or [tool.gemm-lessons] "
                      "repository in pyproject.toml): the pages have no Colab buttons")
        result = build(os.path.abspath(out), repository, branch or "main", verbose=args.verbose, student=args.student)
    except SettingError as e:  # SiteError included
        print(f"site: {e}", file=sys.stderr)
        return 1
    colab = f", Colab buttons open {repository} at {branch}" if repository else ""
    lessons = sum(p.startswith("notebooks/") for p in result.pages) - len(REFERENCE_PAGES)
    edition = "student" if result.student else "teacher"
    print(f"site: {edition} edition: the home page, {lessons} lessons, "
          f"{', '.join(p.lower() for p in REFERENCE_PAGES + DOCUMENTS)} in {result.seconds:.1f} s, "
          f"{len(result.warnings)} Sphinx warnings{colab}; open {os.path.join(result.out, 'index.html')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
