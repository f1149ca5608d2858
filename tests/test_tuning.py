"""Lesson 08's configuration rules, sweep and records; lesson 10's leaderboard tables."""
from dataclasses import asdict

import pytest

from gemm_lessons import leaderboard, ladder, results, tuning
from gemm_lessons.records import TuningRow
from gemm_lessons.sgemm_kernels import warptile
from gemm_lessons.sgemm_kernels.warptile import TileConfig


@pytest.mark.parametrize("bad, words", [
    (dict(WM=64, WN=64), "32 lanes"),
    (dict(TM=6), "multiples of 4"),
    (dict(BK=64), "shared memory"),
    (dict(stages=3), "stages"),
    (dict(guard="maybe"), "guard"),
    (dict(pad_a=2), "pad_a"),
    (dict(BM=64, BN=128, WM=32, WN=32, TM=4, TN=8), "split evenly"),
])
def test_invalid_configurations_name_the_rule(bad, words):
    with pytest.raises(ValueError, match=words):
        TileConfig(**bad).validate()


def test_lesson_configurations_are_valid_and_distinct():
    configs = tuning.lesson_configs()
    assert len(configs) == len(set(configs)) >= 20
    for c in configs:
        c.validate()


def test_sweep_rejects_before_compiling(monkeypatch):
    def no_compile(cfg):
        raise AssertionError("an invalid configuration reached the compiler")

    monkeypatch.setattr(warptile, "kernel_for", no_compile)
    rows = tuning.sweep([TileConfig(WM=64, WN=64)], progress=False)
    assert "32 lanes" in rows[-1].invalid


@pytest.mark.parametrize("cfg", [TileConfig(spread=True), TileConfig(BK=16, stages=1, guard="select"),
                                 TileConfig(BM=64, WM=32, WN=64, max_registers=None)])
def test_sweep_checks_each_configuration(cfg):
    rows = tuning.sweep([cfg], progress=False, check_shape=(67, 44, 36))
    assert rows[-1].correct is True, rows[-1].error


def test_recorded_sweep_matches_the_code():
    sweep = leaderboard.load_sweep()
    labels = {r.label for r in sweep.rows}
    assert labels == {c.short() for c in tuning.lesson_configs()}
    for r in sweep.rows:
        assert TileConfig(**r.config).short() == r.label
        assert r.correct and r.correct_at_size
    # the default configuration (the last rung, gl.sgemm) is the sweep's winner (fields added
    # since the sweep was recorded, such as group_m, take their defaults)
    assert TileConfig(**tuning.best(sweep.rows).config) == TileConfig()


def test_heatmap_draws_one_cell_per_measurement():
    import matplotlib
    matplotlib.use("Agg")
    rows = [TuningRow(config=asdict(TileConfig(BK=bk, stages=s)), label="x", gflops=1000.0 * (bk + s),
                      pct_cublas=50.0) for bk in (8, 16) for s in (1, 2)]
    ax = tuning.heatmap(rows, x=tuning.depth_buffers, y=tuning.tile_shape)
    assert [t.get_text() for t in ax.get_xticklabels()] == ["BK 8, 1 buf", "BK 8, 2 buf", "BK 16, 1 buf", "BK 16, 2 buf"]
    assert sum(1 for t in ax.texts if "%" in t.get_text()) == 4


def test_leaderboard_covers_every_rung_and_technique():
    record = results.load()
    table = leaderboard.table(record)
    for name in ladder.SGEMM:
        assert f"| {name} |" in table
    effects = leaderboard.technique_effects(record)
    shown = {(before, after) for _, _, before, after, *_ in effects}
    recorded = set(record.ladder) | set(record.variants)  # the kernels that existed when it was made
    names = {**ladder.SGEMM, **ladder.VARIANTS}
    for _, _, before, after in leaderboard.TECHNIQUES:
        assert before in names and after in names
        if {before, after} <= recorded:  # every pair of kernels the record knows was timed in it
            assert (before, after) in shown, (before, after)


def test_sweep_effects_are_single_changes():
    for change, base, before, after, pct in leaderboard.sweep_effects(leaderboard.load_sweep()):
        field = change.split(":")[0]
        assert field in TileConfig.__dataclass_fields__
        assert abs(100 * (after / before - 1) - pct) < 1e-9
