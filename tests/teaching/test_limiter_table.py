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


def test_a_sweep_gives_the_row_at_the_records_size_not_its_first():
    """Lesson 00 times cuBLAS at 1024^3 .. 8192^3: the table's measured time is the 4096^3 row (it
    once took the first row, 1024^3, and printed cuBLAS 40 times faster than its prediction)."""
    device = limiter_table.record()["device"]["name"]
    rows = [SimpleNamespace(kernel="cublas", M=n, N=n, K=n, gflops=2 * n ** 3 / (n / 4096 * 1e-3) / 1e9)
            for n in (1024, 4096, 8192)]  # 1024^3 in 0.25 ms, 4096^3 in 1 ms, 8192^3 in 2 ms
    sweep = SimpleNamespace(source=f"measured on {device}, 2026-11-28", rows=rows)
    row = limiter_table.why(["cublas"], measured=sweep).row("cublas")
    assert row.measured_here and row.measured_ms == pytest.approx(1.0)
    only_others = SimpleNamespace(source=sweep.source, rows=[rows[0], rows[2]])
    assert not limiter_table.why(["cublas"], measured=only_others).row("cublas").measured_here


def test_an_unknown_rung_names_the_cases_there_are():
    with pytest.raises(KeyError, match="sgemm reg2d"):
        limiter_table.why(["no_such_rung"])


def test_transposes_and_the_copy_are_at_8192_squared():
    table = limiter_table.why(["wide", "copy"], kind="transpose")
    assert table.size == "8192^2" and table.row("copy").case == "copy"
    assert "latency" in table.row("wide").ceilings_ms


def test_counts_are_the_work_behind_the_ceilings():
    c = limiter_table.counts("reg2d")
    assert c["warp_ffma"] == pytest.approx(4096 ** 3 / 32, rel=1e-6)  # M*N*K thread FFMAs, beta = 0
    row = limiter_table.why(["reg2d"]).row("reg2d")
    fp32, issue, shared = (row.ceilings_ms[n] for n in ("fp32", "issue", "shared"))
    assert c["warp_instructions"] / c["warp_ffma"] == pytest.approx(issue / fp32 * c["issue_per_cycle"] / c["ffma_per_cycle"])
    assert c["shared_wavefronts"] / c["warp_ffma"] == pytest.approx(shared / fp32 * c["wavefronts_per_cycle"] / c["ffma_per_cycle"])
    # 16 conflict-free 4-byte loads per 64 FFMAs (the tracer's count) plus the staging stores
    assert 0.25 <= c["shared_wavefronts"] / c["warp_ffma"] < 0.3
    with pytest.raises(KeyError):
        limiter_table.counts("no_such_rung")


def test_lesson_00_reads_cublas_as_issue_bound():
    """Lesson 00's Why: at 4096^3 cuBLAS is issue-bound in the model and in the profiler; 4 issue
    slots and 128 FP32 lanes (4 warp-FFMAs) per SM per cycle, so the issue time over the FP32 time
    is warp-instructions per warp-FFMA, above 1; the measured time stays at or above the prediction."""
    from gemm_lessons.model import limiter

    machine = limiter_table.record()["model"]["machine"]
    assert machine["issue_per_sm_cycle"] == limiter.DOCUMENTED["issue_per_sm_cycle"][0] == 4
    assert machine["fp32_lanes_per_sm"] // 32 == 4
    row = limiter_table.why(["cublas"]).row("cublas")
    assert row.binding == "issue" and row.busiest == "issue" and row.agrees
    assert 1 < row.ceilings_ms["issue"] / row.ceilings_ms["fp32"] < 1.3
    assert row.ceilings_ms["dram"] < 0.1 * row.ceilings_ms["fp32"]  # memory far from binding
    assert 1 <= row.ratio < 1.6 and row.tail > 1


def test_work_is_what_the_profiler_counted_and_gives_the_ceilings_back():
    """The counts behind a row: the issue ceiling is the warp-instructions over the SMs' issue
    rate, the FP32 ceiling the FFMAs over their lanes; so their ratio is warp-instructions per
    warp-FFMA (lesson 01's Why)."""
    m = limiter_table.record()["model"]["machine"]
    w = limiter_table.work("naive")
    row = limiter_table.why(["naive"]).row("naive")
    hz = m["clock_mhz"] * 1e6
    assert w.ffma == 4096 ** 3
    assert row.ceilings_ms["issue"] == pytest.approx(
        w.warp_instructions / (m["sm_count"] * m["issue_per_sm_cycle"] * hz) * 1e3)
    assert row.ceilings_ms["fp32"] == pytest.approx(w.ffma / (m["sm_count"] * m["fp32_lanes_per_sm"] * hz) * 1e3)
    assert w.warp_instructions == limiter_table.work("naive_uncoalesced").warp_instructions
    with pytest.raises(KeyError, match="sgemm reg2d"):
        limiter_table.work("no_such_rung")


def test_the_copy_row_takes_this_notebooks_copy_float4():
    device = limiter_table.record()["device"]["name"]
    row = SimpleNamespace(kernel="copy_float4", rows=8192, cols=8192, median_ms=0.25)
    same = SimpleNamespace(source=f"measured on {device}, 2026-11-28", rows=[row])
    copy = limiter_table.why(["copy"], kind="transpose", measured=same).row("copy")
    assert copy.measured_here and copy.measured_ms == pytest.approx(0.25)


def test_machine_and_work_rebuild_the_records_latency_ceiling():
    """Little's law from the record's machine and the profiled work: the share of the copy rate a
    transpose's bytes in flight sustain is the record's DRAM ceiling over its latency ceiling."""
    from gemm_lessons.model.limiter import latency_fraction

    m = limiter_table.machine()
    assert m.in_flight_needed_per_sm == pytest.approx(m.dram_gbs * m.dram_latency_ns / m.sm_count)
    table = limiter_table.why(["smem_padded", "smem_padded_32x8", "wide"], kind="transpose")
    for rung in ("smem_padded", "smem_padded_32x8", "wide"):
        w = limiter_table.work(rung, kind="transpose")
        c = table.row(rung).ceilings_ms
        assert latency_fraction(w, m) == pytest.approx(c["dram"] / c["latency"])
    assert limiter_table.work("smem_padded", kind="transpose").in_flight_per_sm == 4 * 32 * 32 * 2
    with pytest.raises(KeyError, match="transpose wide"):
        limiter_table.work("no_such_rung", kind="transpose")


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


def test_counts_per_warp_fma_are_the_profilers_counts_read_back_from_the_ceilings():
    """smem_tile at 4096^3 on the H200: ncu counted 9,047,638,016 warp-instructions and
    3,380,723,129 shared wavefronts for 4096^3 / 32 warp-FMAs (results/ncu-limiter-nvidia-h200.csv)."""
    warp_fmas = 4096 ** 3 / 32
    per = limiter_table.per_warp_fma("smem_tile", device="NVIDIA H200")
    assert per["issue"] == pytest.approx(9_047_638_016 / warp_fmas, rel=1e-6)
    assert per["shared"] == pytest.approx(3_380_723_129 / warp_fmas, rel=1e-6)
    m = limiter_table.machine("NVIDIA H200")
    assert m.sm_count == 132 and m.shared_wavefronts_per_sm_cycle == 1
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


def test_what_lesson_06_says_in_its_text_holds_in_the_record():
    """Lesson 06's markdown and takeaway: vec is shared-bound with issue right behind; the split
    removes about a third of the wavefronts, leaves the instructions as they were, so issue binds and
    the model predicts only a small gain; the profiler's busiest unit agrees for both; cuBLAS's issue
    ceiling is lower than vec_split's."""
    table = limiter_table.why(["vec", "vec_split", "cublas"], device="NVIDIA H200")
    v, s, c = (table.row(r) for r in ("vec", "vec_split", "cublas"))
    assert v.binding == v.busiest == "shared" and s.binding == s.busiest == "issue"
    assert v.ceilings_ms["issue"] < v.ceilings_ms["shared"] < 1.05 * v.ceilings_ms["issue"]  # "right behind"
    nv, ns = limiter_table.counts("vec", device="NVIDIA H200"), limiter_table.counts("vec_split", device="NVIDIA H200")
    assert 0.3 < 1 - ns["shared_wavefronts"] / nv["shared_wavefronts"] < 0.4  # "a third"
    assert ns["warp_instructions"] == pytest.approx(nv["warp_instructions"], rel=1e-3)  # "the same instructions"
    assert round(100 * (v.predicted_ms / s.predicted_ms - 1)) == 2  # the takeaway's "the model predicts +2%"
    assert c.ceilings_ms["issue"] < s.ceilings_ms["issue"]
    assert s.utilization_pct["issue"] > v.utilization_pct["issue"]  # "issue more often"
    assert s.utilization_pct["shared"] < v.utilization_pct["shared"]


def test_decimals_two_prints_milliseconds_to_two_decimals():
    t = limiter_table.why(["vec", "vec_split"], decimals=2)
    md = t._repr_markdown_()
    r = t.row("vec_split")
    assert f"**{r.ceilings_ms['issue']:.2f}**" in md and f"| {r.predicted_ms:.2f} |" in md
    assert f"{r.ceilings_ms['l2']:#.3g}" in md  # below 1 ms: 3 significant figures, trailing zero kept
    assert f"{limiter_table.why(['vec']).row('vec').ceilings_ms['issue']:.3g}" in limiter_table.why(["vec"])._repr_markdown_()


def test_what_lesson_07_says_in_its_text_holds_in_the_record_and_the_code():
    """Lesson 07: a second buffer adds no work (one barrier per warp per slice is a tiny share of
    dbuf_one_buffer's instructions), so it moves no ceiling between the twins dbuf_one_buffer and dbuf; it
    removes stall time (issue busier). The rewrite to make_kernel cuts the issue ceiling. The first
    attempt guards its loads as vec_split does (one condition), so the only change is the buffer; the
    Lab notes' constants of DBUF_CONFIG (pieces 8 rows apart against vec_split's 64, pad 4, cap 128)."""
    import inspect
    import os

    from gemm_lessons.kernels.sgemm import dbuf_first_attempt, vec

    table = limiter_table.why(["vec_split", "dbuf_one_buffer", "dbuf"], device="NVIDIA H200")
    s, one, two = (table.row(r) for r in ("vec_split", "dbuf_one_buffer", "dbuf"))
    n = limiter_table.counts("dbuf_one_buffer", device="NVIDIA H200")
    per_slice = n["warp_instructions"] / ((4096 // 128) ** 2 * 8 * (4096 // 8))
    assert 100 / per_slice < 0.5  # "one barrier fewer"
    m = limiter_table.machine("NVIDIA H200")  # "plenty to cover it": a scheduler's 4 warps' slice vs a DRAM load
    assert 4 * per_slice > 2 * m.dram_latency_ns * m.clock_mhz / 1e3
    assert all(abs(two.ceilings_ms[k] / one.ceilings_ms[k] - 1) < 0.02 for k in ("fp32", "issue", "shared"))
    # "moved no binding ceiling": L2 and DRAM stay far below issue; "at 0.99x the instructions"
    assert min(two.ceilings_ms["issue"] / two.ceilings_ms[k] for k in ("l2", "dram")) > 5
    n2 = limiter_table.counts("dbuf", device="NVIDIA H200")
    assert abs(n2["warp_instructions"] / n["warp_instructions"] - 1) < 0.02
    # the Predict bound is computed for the twin pair: the twin's measured/predicted over cuBLAS's
    assert one.ratio > table.row("dbuf").ratio
    assert one.binding == two.binding == s.binding == "issue"
    assert two.measured_ms - two.predicted_ms < one.measured_ms - one.predicted_ms  # "removed stall time"
    assert two.utilization_pct["issue"] > one.utilization_pct["issue"]
    assert one.ceilings_ms["issue"] < s.ceilings_ms["issue"]  # the rewrite "cut" the issue ceiling
    lines = inspect.getsource(dbuf_first_attempt.sgemm_dbuf_indexed).splitlines()
    guards = [a for a, b in zip(lines, lines[1:]) if "load4(A" in b or "load4(B" in b]  # the line before each load
    assert len(guards) == 4 and all(" & " in g and " and " not in g for g in guards)
    assert "if (row0 + a_r < M) & (k0 + a_c < K):" in inspect.getsource(vec)
    cfg = dbuf_first_attempt.DBUF_CONFIG
    assert (cfg.lanes[0] * 4, dbuf_first_attempt.GAP, cfg.pad_a, cfg.max_registers, cfg.guard) == (8, 64, 4, 128, "if")
    text = open(os.path.join(os.path.dirname(__file__), "..", "..", "lessons", "07_double_buffering.py")).read()
    assert "8 rows apart (`vec_split`: 64)" in text and "caps\n# registers at 128" in text and "by 4 floats" in text
