import matplotlib

matplotlib.use("Agg")

import pytest

from gemm_lessons import measure, plots, results


@pytest.fixture(scope="module")
def record():
    return results.load()


def test_a_gpu_record_is_committed(record):
    assert not record["device"]["simulator"]
    assert record["device"]["peak_gflops"] > 0
    for key in ("date", "versions", "sgemm", "bandwidth", "checks", "ladder"):
        assert key in record
    assert all(c["passed"] is not False for c in record["checks"])
    assert all(r.get("correct", True) for r in record["sgemm"])
    names = {r["kernel"] for r in record["sgemm"]}
    assert "cublas" in names and set(record["ladder"]) <= names


def test_recorded_cublas_is_plausible(record):
    cub = results.sgemm_gflops(record, "cublas", (4096, 4096, 4096))
    assert 0 < cub <= record["device"]["peak_gflops"]


def test_plots_are_labelled_with_device_and_date(record):
    lbl = results.label(record)
    assert record["device"]["name"] in lbl and record["date"][:10] in lbl
    for fn in (plots.ladder, plots.versus_size, plots.roofline):
        ax = fn(record)
        assert lbl in ax.get_title()
        matplotlib.pyplot.close(ax.figure)


def test_recorded_comparison_table(record):
    table = measure.recorded(["naive", "cublas"], (4096, 4096, 4096), record)
    md = table._repr_markdown_()
    assert "recorded on" in md and record["device"]["name"] in md
    assert table.speedup("cublas", "naive") > 1
    assert table.speedup("cublas", "no-such-kernel") != table.speedup("cublas", "no-such-kernel")  # nan


def test_missing_results_give_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="gemm_lessons.bench"):
        results.load(directory=str(tmp_path))
