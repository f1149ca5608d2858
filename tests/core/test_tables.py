"""The one table renderer: markdown for notebooks and the README, aligned text for the console."""
import pytest

from gemm_lessons.core import tables


def test_markdown_layout():
    md = tables.markdown(["rung", "lesson", "TFLOPS"], [["naive", "01", "1.33"], ["cublas", "", 51.71]], "llr")
    assert md == ("| rung | lesson | TFLOPS |\n"
                  "|---|---|---:|\n"
                  "| naive | 01 | 1.33 |\n"
                  "| cublas |  | 51.71 |")


def test_markdown_defaults_to_left_alignment_and_allows_no_rows():
    assert tables.markdown(["a", "b"], []) == "| a | b |\n|---|---|"


def test_text_pads_columns_to_the_widest_cell():
    out = tables.text(["kernel", "GB/s", "note"], [["wide", "2,869", ""], ["cublas_sgeam", "454", "WRONG"]], "lrl")
    assert out.splitlines() == ["kernel         GB/s  note",
                                "wide          2,869",
                                "cublas_sgeam    454  WRONG"]


@pytest.mark.parametrize("render", [tables.markdown, tables.text])
def test_rows_and_alignments_must_match_the_headers(render):
    with pytest.raises(ValueError):
        render(["a", "b"], [["only one"]])
    with pytest.raises(ValueError):
        render(["a", "b"], [["x", "y"]], "lrr")
