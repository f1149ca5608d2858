"""The lessons' "Why" table: the limiter record's facts, and this notebook's measurement when it
was taken on the record's GPU."""
from types import SimpleNamespace

import pytest

from gemm_lessons.teaching import limiter_table


def test_rows_carry_the_records_ceilings_and_the_profilers_word():
    rec = limiter_table.record()
    cases = {c["case"]: c for c in rec["model"]["cases"]}
    table = limiter_table.why(["smem_tile", "cublas"])
    row = table.row("smem_tile")
    assert row.binding == cases["sgemm smem_tile"]["binding"]
    assert row.predicted_ms == pytest.approx(max(row.ceilings_ms.values()) * row.tail)
    assert row.ratio == pytest.approx(row.measured_ms / row.predicted_ms)
    assert not row.measured_here
    assert "smem_tile" in table._repr_markdown_() and table.size == "4096^3"


def test_this_notebooks_measurement_replaces_the_records_only_on_the_same_gpu():
    device = limiter_table.record()["device"]["name"]
    row = SimpleNamespace(kernel="reg1d", M=4096, N=4096, K=4096, gflops=2 * 4096 ** 3 / 1e-2 / 1e9)  # 10 ms
    same = SimpleNamespace(source=f"measured on {device}, 2026-11-28", rows=[row])
    other = SimpleNamespace(source="measured on Tesla T4, 2026-11-28", rows=[row])
    assert limiter_table.why(["reg1d"], measured=same).row("reg1d").measured_ms == pytest.approx(10.0)
    assert limiter_table.why(["reg1d"], measured=same).row("reg1d").measured_here
    assert not limiter_table.why(["reg1d"], measured=other).row("reg1d").measured_here


def test_an_unknown_rung_names_the_cases_there_are():
    with pytest.raises(KeyError, match="sgemm reg2d"):
        limiter_table.why(["no_such_rung"])


def test_transposes_and_the_copy_are_at_8192_squared():
    table = limiter_table.why(["wide", "copy"], kind="transpose")
    assert table.size == "8192^2" and table.row("copy").case == "copy"
    assert "latency" in table.row("wide").ceilings_ms


def test_the_bars_show_every_ceiling_and_colour_the_binding_one():
    import matplotlib
    matplotlib.use("Agg")
    from gemm_lessons.teaching import figures

    row = limiter_table.why(["copy"], kind="transpose").row("copy")
    ax = figures.limiter_bars(row)
    widths = [p.get_width() for p in ax.patches]
    assert widths == [row.ceilings_ms[n] for n in figures.LIMITER_LABELS if n in row.ceilings_ms]
    from matplotlib.colors import to_rgba
    coloured = [p.get_width() for p in ax.patches if p.get_facecolor() == to_rgba("tab:red")]
    assert coloured == [row.ceilings_ms[row.binding]] == [max(widths)]
    assert any(t.get_text().endswith(", binding") for t in ax.texts)
    assert any(f"measured: {row.measured_ms:.3g} ms" in t.get_text() for t in ax.texts)
