"""Committed notebook outputs are for students: small, no machine paths, no giant reprs,
no progress bar frozen at 0%."""
import glob
import json
import os
import re

import nbformat
import pytest

from conftest import REPO

NOTEBOOKS = sorted(glob.glob(os.path.join(REPO, "notebooks", "*.ipynb")))
MAX_NOTEBOOK_BYTES = 500_000
MAX_TEXT_CHARS = 20_000  # one output's text; a table of a few hundred lines at most
MACHINE_PATH = re.compile(r"(/work/|/root/|/home/\w+/|/tmp/|site-packages|[A-Z]:\\\\Users)")
FROZEN_BAR = re.compile(r"\b0%\|")


def _texts(nb):
    for i, cell in enumerate(nb.cells):
        for out in cell.get("outputs", []):
            if "text" in out:
                yield i, out["text"]
            for kind, value in out.get("data", {}).items():
                if kind.startswith("text/"):
                    yield i, value if isinstance(value, str) else "".join(value)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=os.path.basename)
def test_notebook_is_small(path):
    assert os.path.getsize(path) < MAX_NOTEBOOK_BYTES


@pytest.mark.parametrize("path", NOTEBOOKS, ids=os.path.basename)
def test_outputs_are_for_students(path):
    nb = nbformat.read(path, as_version=4)
    for i, text in _texts(nb):
        assert not MACHINE_PATH.search(text), f"cell {i} shows a path of the machine it ran on"
        assert len(text) < MAX_TEXT_CHARS, f"cell {i} prints {len(text):,} characters"
    for i, cell in enumerate(nb.cells):
        for out in cell.get("outputs", []):
            plain = out.get("data", {}).get("text/plain", "")
            if "application/vnd.jupyter.widget-view+json" in out.get("data", {}):
                assert not FROZEN_BAR.search(json.dumps(plain)), f"cell {i}: a progress bar saved at 0%"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=os.path.basename)
def test_printed_text_is_as_jupyterlab_shows_it(path):
    """A progress bar's frames are not stored one by one (tools/refresh_outputs.py tidies them)."""
    nb = nbformat.read(path, as_version=4)
    for i, cell in enumerate(nb.cells):
        outs = cell.get("outputs", [])
        for before, out in zip(outs, outs[1:]):
            assert not (before.output_type == out.output_type == "stream" and before.name == out.name), \
                f"cell {i}: consecutive {out.name} outputs (run lesson_source.tidy_streams)"
        for out in outs:
            if out.output_type == "stream":
                assert "\r" not in out.text, f"cell {i}: carriage returns (a progress bar's frames) in {out.name}"


def test_tidy_streams_keeps_what_a_student_sees():
    from gemm_lessons.course.lesson_source import tidy_streams
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("x")
    cell.outputs = [nbformat.v4.new_output("stream", name="stderr", text="bar:   0%\r"),
                    nbformat.v4.new_output("stream", name="stderr", text="bar:  50%\rbar: 100%"),
                    nbformat.v4.new_output("stream", name="stderr", text="\n"),
                    nbformat.v4.new_output("stream", name="stdout", text="a\r\nb\n"),
                    nbformat.v4.new_output("display_data", data={"text/plain": "t"}),
                    nbformat.v4.new_output("stream", name="stderr", text="\r\n")]
    widget = nbformat.v4.new_code_cell("w")
    view = {"model_id": "m", "version_major": 2, "version_minor": 0}
    widget.outputs = [nbformat.v4.new_output("display_data", data={
                          "application/vnd.jupyter.widget-view+json": view, "text/plain": "VBox(children=(Dropdown(...)))"}),
                      nbformat.v4.new_output("display_data", data={
                          "application/vnd.jupyter.widget-view+json": view, "text/plain": "HBox(children=(FloatProgress(value=3.0)))"})]
    nb.cells = [widget]
    shown = [o.data["text/plain"] for o in tidy_streams(nb).cells[0].outputs]
    assert shown[0].startswith("(an interactive widget") and shown[1].startswith("HBox(children=(FloatProgress")
    nb.cells = [cell]
    outs = tidy_streams(nb).cells[0].outputs
    assert [(o.output_type, o.get("name"), o.get("text")) for o in outs] == [
        ("stream", "stderr", "bar: 100%\n"), ("stream", "stdout", "a\nb\n"), ("display_data", None, None)]
