"""Every relative link and anchor in the course's Markdown (README and the documents beside it,
lessons/ and notebooks/ .md files, the notebooks' markdown cells) resolves, and the glossary
defines the terms it must.  The README stays a front page; the version, CITATION.cff, the
changelog and the license agree."""
import glob
import os
import re

import nbformat
import pytest
import yaml

from conftest import REPO
from gemm_lessons.course.site import DOCUMENTS

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib

INLINE = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REF_DEF = re.compile(r"^\s{0,3}\[([^\]]+)\]:\s*<?(\S+?)>?\s*$", re.M)
REF_USE = re.compile(r"\[[^\[\]]+\]\[([^\]]+)\]")
ANCHOR = re.compile(r"""<a\s+(?:[^>]*\s)?(?:id|name)=["']([^"']+)["']""")
HEADING = re.compile(r"^#{1,6}\s+(.*)$", re.M)


def _slug(heading):
    """GitHub's anchor for a heading: lower case, markup and punctuation dropped, spaces -> '-'."""
    text = re.sub(r"<[^>]+>", "", heading).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors_of(path):
    text = open(path, encoding="utf-8").read()
    return set(ANCHOR.findall(text)) | {_slug(h) for h in HEADING.findall(text)}


def documents():
    """(name, markdown text, directory its relative links start from)."""
    docs = []
    for path in [os.path.join(REPO, name + ".md") for name in ["README"] + DOCUMENTS] + sorted(
            glob.glob(os.path.join(REPO, "lessons", "*.md")) + glob.glob(os.path.join(REPO, "notebooks", "*.md"))):
        docs.append((os.path.relpath(path, REPO), open(path, encoding="utf-8").read(), os.path.dirname(path)))
    for path in sorted(glob.glob(os.path.join(REPO, "notebooks", "*.ipynb"))):
        nb = nbformat.read(path, as_version=4)
        text = "\n\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
        docs.append((os.path.relpath(path, REPO), text, os.path.dirname(path)))
    return docs


CODE = re.compile(r"```.*?```|`[^`\n]*`", re.S)


def links(text):
    text = CODE.sub("", text)  # `tile[32][33]` is code, not a reference link
    defs = dict(REF_DEF.findall(text))
    found = INLINE.findall(text) + list(defs.values())
    return found, defs


def _is_external(target):
    return re.match(r"^[a-z][a-z0-9+.-]*:", target) is not None


DOCS = documents()


def problems_of(text, base):
    """What does not resolve in one document (a list of messages)."""
    found, defs = links(text)
    problems = []
    for target in found:
        if _is_external(target):
            continue
        path, _, anchor = target.partition("#")
        full = os.path.normpath(os.path.join(base, path)) if path else None
        if full and not os.path.exists(full):
            problems.append(f"{target}: no such file")
            continue
        if not anchor:
            continue
        if full is None:
            available = set(ANCHOR.findall(text)) | {_slug(h) for h in HEADING.findall(text)}
        elif full.endswith(".md"):
            available = anchors_of(full)
        else:
            continue  # anchors inside notebooks are not checked
        if anchor not in available:
            problems.append(f"{target}: no anchor #{anchor}")
    for ref in REF_USE.findall(CODE.sub("", text)):
        if ref not in defs:
            problems.append(f"[...][{ref}]: reference never defined")
    return problems


@pytest.mark.parametrize("name,text,base", DOCS, ids=[d[0] for d in DOCS])
def test_relative_links_and_anchors_resolve(name, text, base):
    assert problems_of(text, base) == [], name


def test_glossary_anchors_used_anywhere_exist():
    anchors = anchors_of(os.path.join(REPO, "notebooks", "GLOSSARY.md"))
    used = set()
    for path in glob.glob(os.path.join(REPO, "lessons", "*")) + glob.glob(os.path.join(REPO, "notebooks", "*")):
        used.update(re.findall(r"GLOSSARY\.md#([\w-]+)", open(path, encoding="utf-8").read()))
    assert used - anchors == set()


GLOSSARY_MUST_DEFINE = [
    # the terms the issue lists: met in the lessons before they were defined
    "sass", "ptx", "ffma", "ldg", "lds", "width-128", "wavefront", "bank-conflict", "occupancy", "latency",
    "blocks-per-sm", "warp", "coalescing", "register-spill",
    # the course's own
    "rung", "tile", "bm-bn-bk", "tm-tn", "warp-tile", "arithmetic-intensity", "roofline", "percent-of-cublas",
    "host-bound", "sector", "transaction", "phase", "broadcast", "padding", "double-buffering", "split-k",
    "tf32", "sgeam",
    # the execution model and memory hierarchy of the primer
    "thread", "block", "grid", "launch", "bounds-guard", "sm", "shared-memory", "l1", "l2", "dram",
    "register", "local-memory", "ilp", "latency-hiding",
]


def test_glossary_defines_every_required_term():
    anchors = anchors_of(os.path.join(REPO, "notebooks", "GLOSSARY.md"))
    assert [t for t in GLOSSARY_MUST_DEFINE if t not in anchors] == []


def test_glossary_index_lists_every_entry():
    text = open(os.path.join(REPO, "notebooks", "GLOSSARY.md"), encoding="utf-8").read()
    entries = set(ANCHOR.findall(text.split("## Execution model", 1)[1]))
    indexed = set(re.findall(r"\]\(#([\w-]+)\)", text.split("## Execution model", 1)[0]))
    assert entries == indexed


def test_the_primer_links_the_glossary_and_references():
    text = next(t for n, t, _ in DOCS if n.endswith("00a_primer.ipynb"))
    assert "(GLOSSARY.md)" in text and "(REFERENCES.md)" in text


def test_the_link_checker_catches_broken_links(tmp_path):
    (tmp_path / "b.md").write_text('## Some Heading\n<a id="y"></a>\n')
    text = ('# Title\n\n<a id="x"></a>\n[ok](#x) [ok](#title) [ok](b.md#y) [ok](b.md#some-heading) '
            '[ok][d] [web](https://example.com/#z)\n[bad](#nope) [gone](c.md) [bad](b.md#nope) [r][undefined]\n\n[d]: b.md\n')
    assert problems_of(text, str(tmp_path)) == ["#nope: no anchor #nope", "c.md: no such file",
                                                "b.md#nope: no anchor #nope", "[...][undefined]: reference never defined"]


def test_each_source_article_lists_the_lessons_that_cite_it():
    """REFERENCES.md's "Used in" line of a source article names exactly the lessons whose
    sources section links it."""
    import glob
    ref = open(os.path.join(REPO, "notebooks", "REFERENCES.md"), encoding="utf-8").read()
    used = {m.group(1): set(re.findall(r"\[(\d\da?)\]\(\d\d", m.group(2)))
            for m in re.finditer(r'<a id="(seed-\d+)"></a>.*?\* \*\*Used in\*\*:(.*?)(?=\n\n|\n###)', ref, re.S)}
    cited = {}
    for path in glob.glob(os.path.join(REPO, "lessons", "*.py")):
        lesson = os.path.basename(path).split("_")[0]
        for seed in set(re.findall(r"REFERENCES\.md#(seed-\d+)", open(path, encoding="utf-8").read())):
            cited.setdefault(seed, set()).add(lesson)
    assert len(used) == 5 and used == cited


# --- the front page and the course's documents ----------------------------------------------

README_WORDS = 900  # the README is a front page: what it is, the headline, how to start, links


def _read(name):
    return open(os.path.join(REPO, name), encoding="utf-8").read()


def test_readme_is_a_front_page():
    readme = _read("README.md")
    assert len(readme.split()) < README_WORDS, f"README.md has {len(readme.split())} words"
    for name in DOCUMENTS + ["LICENSE", "CITATION.cff"]:  # every other document is one link away
        assert f"]({name}.md)" in readme or f"]({name})" in readme, name
    from gemm_lessons.course import readme_results
    from gemm_lessons.records import results

    record = results.load()  # the headline's figure is the ladder of the run its table shows
    figure = readme_results.headline_figure(record)
    assert figure in readme, f"README.md lacks {figure}: python -m gemm_lessons.course.readme_results --write"
    assert os.path.exists(results.path_for("plot", record.device.name, "ladder")), figure


def _pyproject():
    with open(os.path.join(REPO, "pyproject.toml"), "rb") as f:
        return tomllib.load(f)


def test_the_version_and_its_date_agree_everywhere():
    version = _pyproject()["project"]["version"]
    init = re.search(r'^__version__ = "([^"]+)"$', _read("gemm_lessons/__init__.py"), re.M).group(1)
    citation = yaml.safe_load(_read("CITATION.cff"))
    newest = re.search(r"^## (\d+\.\d+\.\d+) \((\d{4}-\d\d-\d\d)\)$", _read("CHANGELOG.md"), re.M)
    assert init == version and citation["version"] == version and newest.group(1) == version
    assert str(citation["date-released"]) == newest.group(2)


def test_citation_cff_has_what_cff_1_2_0_requires():
    """The fields CFF 1.2.0's schema requires, the license as in LICENSE, and the repository only
    where one is set (``[tool.gemm-lessons] repository``)."""
    citation = yaml.safe_load(_read("CITATION.cff"))
    assert citation["cff-version"] == "1.2.0" and citation["message"] and citation["title"]
    assert citation["authors"] == [{"name": "gemm-lessons authors"}]
    assert re.fullmatch(r"\d{4}-\d\d-\d\d", str(citation["date-released"]))
    assert citation["license"] == ["MIT", "CC-BY-4.0"]
    repository = _pyproject().get("tool", {}).get("gemm-lessons", {}).get("repository")
    if repository:
        assert citation.get("repository-code") == f"https://github.com/{repository}"
    else:
        assert "repository-code" not in citation


def test_license_says_which_license_covers_what():
    text = _read("LICENSE")
    assert "MIT License" in text and "Permission is hereby granted, free of charge" in text
    assert "https://creativecommons.org/licenses/by/4.0/legalcode" in text
    assert "notebooks/*.ipynb" in text and "gemm_lessons/" in text  # what each covers
    assert _pyproject()["project"]["license"] == "MIT"  # the package: the code only
