"""Lesson 10's facts: the leaderboard (limiter, clock, power), the steps split into less work x
fewer stalls, the instruction counts of the Predict step, the ceilings figure."""
from types import SimpleNamespace

import matplotlib

matplotlib.use("Agg")

import pytest

from gemm_lessons.kernels import ladder
from gemm_lessons.records import results
from gemm_lessons.teaching import leaderboard, limiter_table, plots

RUNGS = list(ladder.SGEMM) + ["cublas"]


@pytest.fixture(scope="module")
def why():
    return limiter_table.why(RUNGS)


def test_the_board_is_the_why_table_with_speed_clock_and_power(why):
    power = leaderboard.clock_power()
    board = leaderboard.board(why, power=power)
    assert [r.rung for r in board.rows] == RUNGS
    for r, w in zip(board.rows, why.rows):
        assert r.binding == w.binding and r.busiest == w.busiest and r.ratio == pytest.approx(w.ratio)
        assert r.tflops == pytest.approx(2 * 4096 ** 3 / (w.measured_ms * 1e-3) / 1e12)
        p = power["rows"][r.rung]["power"]
        assert r.watts == p["power_w"]["median"] and r.clock_mhz == p["clock_mhz"]["median"]
        assert r.timed_clock_mhz is not None  # the limiter run read the clock while it timed
    assert board.row("cublas").pct_cublas == pytest.approx(100)
    text = board._repr_markdown_()
    assert why.date in text and power["source"] in text and "(the limiter run)" not in text
    assert power["seconds"] > 0 and f"sustained ({power['seconds']:g} s)" in text and "back to back" not in text
    capped = [r for r in board.rows if "sw_power_cap" in r.events]
    assert text.count("(cap)") == len(capped)


def test_a_measurement_on_the_records_gpu_replaces_times_and_timed_clock(why):
    device = limiter_table.record()["device"]["name"]
    rows = [SimpleNamespace(kernel=k, M=4096, N=4096, K=4096, gflops=2 * 4096 ** 3 / 1e-2 / 1e9,  # 10 ms each
                            power={"clock_mhz": {"median": 1900, "min": 1890}}) for k in RUNGS]
    run = SimpleNamespace(source=f"measured on {device}, 2026-12-01", rows=rows)
    board = leaderboard.board(limiter_table.why(RUNGS, measured=run), run)
    assert board.source == run.source
    assert all(r.timed_clock_mhz == 1900 and r.pct_cublas == pytest.approx(100) for r in board.rows)
    peak = 2 * 128 * 132 * 1900e6 / 1e12
    assert board.row("naive").pct_peak == pytest.approx(100 * board.row("naive").tflops / peak)


def test_each_step_is_less_work_times_fewer_stalls():
    names = sorted({k for pair in leaderboard.MODEL_STEPS for k in pair})
    steps = leaderboard.steps(limiter_table.why(names))
    assert [(s.before, s.after) for s in steps] == leaderboard.MODEL_STEPS
    labels = {(b, a): what for what, _, b, a in leaderboard.TECHNIQUES}
    for s in steps:
        assert s.speedup == pytest.approx(s.model * s.stalls)
        assert s.change == labels[(s.before, s.after)]
    text = leaderboard.steps_markdown(steps, "recorded on X, 2026-11-28")
    assert "2026-11-28" in text and text.count("\n| ") == len(steps) + 1
    assert "predicted time falls" in text and "below 1: more" in text and steps[0].change in text
    short = leaderboard.steps_markdown(steps, "recorded on X, 2026-11-28", change=False)
    assert short.count("\n| ") == len(steps) + 1 and steps[0].change not in short


def test_issue_counts_give_the_ffmas_of_the_product(why):
    issued, ffma = leaderboard.issue_counts(why, "warptile")
    assert ffma == pytest.approx(4096 ** 3 / 32, rel=0.01)  # M*N*K thread-FFMAs, 32 to a warp-instruction
    assert issued > ffma


def test_the_lesson_reads_the_limiter_gpus_bench_record_on_the_simulator():
    rec = leaderboard.lesson_record()
    assert rec.device.name == limiter_table.record()["device"]["name"]
    run = SimpleNamespace(rows=results.sgemm_rows(rec, size=(4096, 4096, 4096)), size=(4096, 4096, 4096))
    assert list(leaderboard.effects_of(run)) == list(leaderboard.technique_effects(rec))


def test_the_ceilings_figure_has_a_column_per_rung_and_says_where_from(why):
    ax = plots.ceilings(why, source="measured on GPU X, 2026-12-01")
    assert [t.get_text() for t in ax.get_xticklabels()] == RUNGS
    assert why.device in ax.get_title() and "GPU X, 2026-12-01" in ax.get_title()
    title = plots.ceilings(why, measured=False).get_title()
    assert "allows (the model alone)" in title and ", (" not in title
    assert "model alone" in plots.ceilings(why, measured=False).get_title()
