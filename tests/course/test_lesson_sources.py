"""The kernel code a notebook shows is the code the package runs."""
import glob
import os

from gemm_lessons.course import lesson_source

from conftest import REPO

KERNEL_MODULES = sorted(
    os.path.relpath(p, REPO) for p in glob.glob(os.path.join(REPO, "gemm_lessons", "**", "*.py"), recursive=True)
    if lesson_source.BEGIN in open(p).read())


def test_every_kernel_module_has_a_region():
    names = {os.path.basename(p) for p in KERNEL_MODULES}
    assert {"naive.py", "naive_uncoalesced.py", "smem_tile.py", "reg1d.py", "reg2d.py", "reg2d_unrolled.py",
            "transposed_a.py", "wide_loads.py", "vec.py", "wide.py"} <= names


def test_notebook_cells_match_the_package():
    assert lesson_source.drift() == []


def test_every_ladder_kernel_is_shown_in_a_notebook():
    shown = set()
    for nb in glob.glob(os.path.join(lesson_source.NOTEBOOK_DIR, "*.ipynb")):
        shown.update(path for _, path, _ in lesson_source.source_cells(nb))
    for module in ["naive", "naive_uncoalesced", "smem_tile", "reg1d", "reg2d", "reg2d_unrolled", "transposed_a",
                   "wide_loads", "vec", "dbuf_first_attempt", "warptile"]:
        assert f"gemm_lessons/kernels/sgemm/{module}.py" in shown
    for module in ["naive", "smem_tile", "wide"]:
        assert f"gemm_lessons/kernels/transpose/{module}.py" in shown


def test_every_notebook_has_a_lesson_source():
    assert lesson_source.lesson_sources() and lesson_source.unpaired() == []


def test_notebooks_match_their_lesson_sources():
    assert lesson_source.mismatches() == []


def test_a_changed_lesson_source_is_detected(tmp_path, monkeypatch):
    src = lesson_source.lesson_sources()[0]
    text = open(src).read()
    copy = tmp_path / os.path.basename(src)
    copy.write_text(text.replace("# %% [markdown]\n", "# %% [markdown]\n# An added sentence.\n", 1))
    monkeypatch.setattr(lesson_source, "LESSON_DIR", str(tmp_path))
    assert [nb for nb, _ in lesson_source.mismatches()] == [os.path.basename(src)[:-3] + ".ipynb"]


def test_build_keeps_outputs_of_unchanged_cells(tmp_path, monkeypatch):
    src = lesson_source.lesson_sources()[0]
    stored = lesson_source.read(lesson_source.notebook_for(src))
    outputs = [c.get("outputs") for c in stored.cells if c.cell_type == "code"]
    assert any(outputs)  # the committed notebook has outputs to keep
    nb = lesson_source.build_notebook(src)
    assert [c.get("outputs") for c in nb.cells if c.cell_type == "code"] == outputs


def test_drift_is_detected(tmp_path):
    import nbformat

    nb = nbformat.v4.new_notebook()
    text = lesson_source.cell_text("gemm_lessons/kernels/sgemm/naive.py")
    nb.cells = [nbformat.v4.new_code_cell(text.replace("acc += A[row, k] * B[k, col]", "acc += 1"))]
    nbformat.write(nb, str(tmp_path / "x.ipynb"))
    assert lesson_source.drift(str(tmp_path)) == [("x.ipynb", "gemm_lessons/kernels/sgemm/naive.py")]


def test_every_notebook_opens_on_a_colab_gpu_runtime():
    """Colab reads the notebook's metadata to pick a GPU runtime (T4, compute capability 7.5)."""
    import json

    notebooks = glob.glob(os.path.join(lesson_source.NOTEBOOK_DIR, "*.ipynb"))
    assert notebooks
    for path in notebooks:
        meta = json.load(open(path))["metadata"]
        assert meta.get("accelerator") == "GPU", path
        assert meta.get("colab", {}).get("gpuType") == "T4" and meta["colab"].get("provenance") == [], path


def test_build_adds_the_colab_metadata_to_a_new_notebook(tmp_path, monkeypatch):
    monkeypatch.setattr(lesson_source, "NOTEBOOK_DIR", str(tmp_path))  # no stored notebook to copy it from
    nb = lesson_source.build_notebook(lesson_source.lesson_sources()[0])
    assert nb.metadata["accelerator"] == "GPU" and nb.metadata["colab"] == {"provenance": [], "gpuType": "T4"}
