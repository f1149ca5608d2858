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


def test_counts_per_warp_fma_are_the_profilers_counts_read_back_from_the_ceilings():
    """smem_tile at 4096^3 on the H200: ncu counted 9,047,638,016 warp-instructions and
    3,380,723,129 shared wavefronts for 4096^3 / 32 warp-FMAs (results/ncu-limiter-nvidia-h200.csv)."""
    warp_fmas = 4096 ** 3 / 32
    per = limiter_table.per_warp_fma("smem_tile", device="NVIDIA H200")
    assert per["issue"] == pytest.approx(9_047_638_016 / warp_fmas, rel=1e-6)
    assert per["shared"] == pytest.approx(3_380_723_129 / warp_fmas, rel=1e-6)
    m = limiter_table.machine("NVIDIA H200")
    assert m["sm_count"] == 132 and m["shared_wavefronts_per_sm_cycle"] == 1
    with pytest.raises(KeyError):
        limiter_table.per_warp_fma("no_such_rung")


def test_what_lessons_02_and_03_say_in_their_text_holds_in_the_records():
    """Lesson 02's and 03's markdown: naive is issue-bound; both smem_tile sizes and reg1d are bound
    by shared-memory wavefronts, about 1.5 per warp-FMA for smem_tile, the profiler agreeing; L2 and
    DRAM far below the binding ceiling; the 64x64 reg1d cuts wavefronts about as much as reg1d but
    nearly doubles its instructions, is issue-bound, and that ceiling lies above smem_tile's."""
    from gemm_lessons.records import results

    table = limiter_table.why(["naive", "smem_tile", "smem_tile16", "reg1d"], device="NVIDIA H200")
    assert table.row("naive").binding == table.row("naive").busiest == "issue"
    for rung in ("smem_tile", "smem_tile16", "reg1d"):
        row = table.row(rung)
        assert row.binding == row.busiest == "shared", rung
    for rung in ("naive", "smem_tile", "smem_tile16"):
        row = table.row(rung)
        assert max(row.ceilings_ms["l2"], row.ceilings_ms["dram"]) < 0.35 * row.ceilings_ms[row.binding], rung
    assert 1.5 <= limiter_table.per_warp_fma("smem_tile", device="NVIDIA H200")["shared"] < 1.6

    probe = {k["kernel"]: k for k in results.experiment_record("reg1d_64x64", device="NVIDIA H200")["kernels"]}
    v, r = probe["reg1d_64x64"], probe["reg1d"]
    assert v["binding"] == v["profiler_busiest"] == "issue"
    assert 1.7 < v["per_warp_fma"]["instructions"] / r["per_warp_fma"]["instructions"] < 2
    assert abs(v["per_warp_fma"]["shared_wavefronts"] / r["per_warp_fma"]["shared_wavefronts"] - 1) < 0.1
    assert v["ceilings_ms"]["issue"] > table.row("smem_tile").ceilings_ms["shared"]
