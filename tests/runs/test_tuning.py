"""Lesson 08's configuration rules, sweep and records; lesson 10's leaderboard tables."""
from dataclasses import asdict, replace

import pytest

from gemm_lessons.teaching import leaderboard
from gemm_lessons.kernels import ladder
from gemm_lessons.records import results
from gemm_lessons.runs import tuning
from gemm_lessons.records.schema import TuningRow
from gemm_lessons.kernels.sgemm import warptile
from gemm_lessons.kernels.sgemm.warptile import TileConfig

from conftest import requires_simulator


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
    sweep = results.read(results.path_for("tuning", results.REFERENCE_DEVICE))  # the numbers below are the H100's
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


def _row(cfg, gflops, cublas=50000.0, spread=0.1, **facts):
    if gflops is None:  # not timed
        return TuningRow(config=asdict(cfg), label=cfg.short(), threads=cfg.threads)
    return TuningRow(config=asdict(cfg), label=cfg.short(), threads=cfg.threads, gflops=gflops,
                     gflops_p10=gflops - spread, gflops_p90=gflops + spread, pct_cublas=100 * gflops / cublas,
                     cublas_gflops_same_run=cublas, correct=True, correct_at_size=True, **facts)


def test_table_lists_every_row_with_its_threads():
    sweep = results.read(results.path_for("tuning", results.REFERENCE_DEVICE))  # the numbers below are the H100's
    table = tuning.table_markdown(sweep.rows)
    assert "| threads |" in table.splitlines()[0]
    assert len(table.splitlines()) == 2 + len(sweep.rows)
    for r in sweep.rows:
        if r.gflops:
            assert f"| {r.label} | {r.gflops / 1e3:.2f} | {r.pct_cublas:.1f}% | {r.threads} |" in table


def test_single_changes_pair_configurations_that_differ_in_those_fields_only():
    base = TileConfig(guard="select")
    rows = [_row(base, 100.0), _row(replace(base, stages=1), 80.0), _row(replace(base, WM=16, WN=128), 101.0),
            _row(replace(base, stages=1, BK=16), 90.0), _row(replace(base, WM=16), None)]
    pairs = tuning.single_changes(rows, "stages", 1)
    assert [(a.gflops, b.gflops) for a, b in pairs] == [(80.0, 100.0)]  # not the BK=16 one: two fields differ
    pairs = tuning.single_changes(rows, ("WM", "WN"), (32, 64))
    assert [(a.gflops, b.gflops) for a, b in pairs] == [(100.0, 101.0)]


def test_changes_table_says_which_pairs_share_a_run():
    base = TileConfig(guard="select")
    rows = [_row(base, 100.0, registers=128, local_bytes=0, blocks_per_sm=2),
            _row(replace(base, guard="if"), 103.0, registers=128, local_bytes=0, blocks_per_sm=2),
            _row(replace(base, pad_a=0), 100.1, registers=128, local_bytes=0, blocks_per_sm=2),
            _row(replace(base, max_registers=None), 90.0, cublas=50100.0, registers=130, local_bytes=0,
                 blocks_per_sm=1)]
    table = tuning.changes_markdown(rows)
    assert "| guard: select → if |" in table and "| +3.0% | same run, ranges apart |" in table
    assert "| pad_a: 4 → 0 |" in table and "same run, ranges overlap" in table
    assert "| max_registers: 128 → None |" in table and "| different runs | 256 | 128 → 130 | 0 | 2 → 1 |" in table
    judged = tuning.changes_markdown(rows, same=1.0)  # the verdict by lesson 08's rule: > 1% and ranges apart
    assert "verdict (±1%)" in judged and "| +3.0% | same run, ranges apart | faster |" in judged
    assert "| same run, ranges overlap | tie |" in judged


def test_pieces_of_a_warp_wide_16_byte_load():
    # B read by 2 x 16 lanes: lane l reads the float4 at column (l % 16) * 4
    assert tuning.pieces_16_bytes([16 * (lane % 16) for lane in range(32)]) == (16, 8)
    # ... by 4 x 8 lanes: column (l % 8) * 4; A by 4 x 8 lanes: row (l // 8) * 4 of the transposed tile
    assert tuning.pieces_16_bytes([16 * (lane % 8) for lane in range(32)]) == (8, 8)
    assert tuning.pieces_16_bytes([16 * (lane // 8) for lane in range(32)]) == (4, 1)
    assert tuning.pieces_16_bytes([None] * 31 + [0]) == (1, 1)


@requires_simulator
def test_without_padding_the_a_stores_conflict_2_way_and_the_loads_do_not_change():
    padded, unpadded = tuning.shared_traffic([tuning.SWEEP_BASE, replace(tuning.SWEEP_BASE, pad_a=0)])
    assert padded["loads"]["conflicts"] == padded["stores"]["conflicts"] == 0
    assert unpadded["loads"] == padded["loads"]
    assert unpadded["stores"]["conflicts"] > 0 and unpadded["worst_store_degree"] == 2
    assert unpadded["stores"]["wavefronts"] < padded["loads"]["wavefronts"] / 4  # the stores: a small share
    assert "| 2-way |" in tuning.traffic_markdown([unpadded]) and "no conflict" in tuning.traffic_markdown([padded])
    # one buffer (the one the slice is read from), as lesson 08's tracer cell counts: per warp per k-step
    # 12 load wavefronts and 1 store (with K = BK the kernel also stages an empty next slice into sA1, sB1)
    one, = tuning.shared_traffic([tuning.SWEEP_BASE], arrays=("sA0", "sB0"))
    per_step = 8 * tuning.SWEEP_BASE.BK  # warps x k-steps of the one slice
    assert one["loads_paired"]["wavefronts"] / per_step == 12 and one["stores"]["wavefronts"] / per_step == 1
    assert padded["stores"]["wavefronts"] == 2 * one["stores"]["wavefronts"]


def _pair(sweep, fields, before, **where):
    """The one pair of single_changes whose 'before' configuration has the fields in ``where``."""
    pairs = [(a, b) for a, b in tuning.single_changes(sweep.rows, fields, before)
             if all(getattr(TileConfig(**a.config), k) == v for k, v in where.items())]
    assert len(pairs) == 1, (fields, where, pairs)
    return pairs[0]


def test_lesson_08_reading_of_the_recorded_sweep():
    """What lesson 08 says about the sweep it renders (results.course_path("tuning")), checked
    against that record: the base has every single change the lesson prints around it; the warp
    tile ties in every pair (so the sweep has no preference), padding off too (the Lab notes),
    the guard does not; the fastest configuration is timed and correct."""
    from gemm_lessons.records.schema import TuningRecord

    sweep = TuningRecord.read(results.course_path("tuning"))
    timed = [r for r in sweep.rows if r.config and r.gflops]
    base = [r for r in timed if TileConfig(**r.config) == tuning.SWEEP_BASE]
    assert len(base) == 1
    around = {fields if isinstance(fields, str) else tuple(fields)
              for fields, before in tuning.CHANGES for a, b in tuning.single_changes(timed, fields, before)
              if base[0] in (a, b)}
    assert {"stages", "BK", "max_registers", ("WM", "WN"), "pad_a", "spread", "guard"} <= around
    def tie(a, b):  # the lesson's rule: a change counts above 1 % with p10-p90 ranges apart
        return abs(tuning.change_pct(a, b)) <= 1 or not tuning.ranges_apart(a, b)

    warp = tuning.single_changes(timed, ("WM", "WN"), (32, 64))
    assert warp and all(tie(a, b) for a, b in warp)
    assert all(tie(a, b) for a, b in tuning.single_changes(timed, "pad_a", 4))
    guard = tuning.single_changes(timed, "guard", "select")
    assert len(guard) == 1 and not tie(*guard[0]) and tuning.change_pct(*guard[0]) > 0
    # "the same configurations, timed on this GPU in two runs days apart, differ by less [than 1%]"
    # and "two runs of one kernel can differ by more than either run's p10-p90 range" (the Lab notes)
    from gemm_lessons.kernels.sgemm import dbuf_first_attempt

    bench = results.load(results.COURSE_DEVICE)
    assert bench.device.name == sweep.device.name == results.COURSE_DEVICE and bench.date[:10] != sweep.date[:10]
    twins = {"warptile": TileConfig(), "dbuf_select": replace(dbuf_first_attempt.DBUF_CONFIG, guard="select")}
    pairs = [(results.sgemm_rows(bench, name, (4096, 4096, 4096))[0],
              next(r for r in timed if TileConfig(**r.config) == cfg)) for name, cfg in twins.items()]
    assert all(abs(tuning.change_pct(b, s)) < 1 for b, s in pairs)
    assert any(tuning.ranges_apart(b, s) for b, s in pairs)
    # "The sweep found nothing faster than lesson 07's dbuf": its fastest is TileConfig() (dbuf with
    # the squarer warp tile, which ties), and the one faster change is dbuf's own guard
    best = tuning.best(sweep.rows)
    assert best is not None and best.correct and best.correct_at_size
    assert TileConfig(**best.config) == TileConfig() == replace(dbuf_first_attempt.DBUF_CONFIG, WM=32, WN=64)
    faster = [f for f, before in tuning.CHANGES for a, b in tuning.single_changes(timed, f, before)
              if base[0] in (a, b) and not tie(a, b) and tuning.change_pct(base[0], b if a is base[0] else a) > 0]
    assert faster == ["guard"] and dbuf_first_attempt.DBUF_CONFIG.guard == "if"
    # "without the cap, the extra registers cost a block per SM; BK 16 spills to local memory"
    cap = next(b for a, b in tuning.single_changes(timed, "max_registers", 128) if a is base[0])
    assert cap.registers > base[0].registers and cap.blocks_per_sm < base[0].blocks_per_sm
    deep = next(b for a, b in tuning.single_changes(timed, "BK", 8) if a is base[0])
    assert deep.local_bytes > 0 == base[0].local_bytes
    # the heatmap's grid: every configuration of the tile shapes x BK x buffers was timed
    grid = {replace(tuning.SWEEP_BASE, **shape, BK=bk, stages=s) for shape in tuning.TILE_SHAPES
            for bk in (8, 16) for s in (1, 2)}
    assert len([r for r in timed if TileConfig(**r.config) in grid]) == len(grid) == 16


def test_warptile_is_dbuf_with_another_warp_tile():
    """Lesson 08: warptile differs from dbuf only in WM x WN; the sweep's base only in its guard."""
    from gemm_lessons.kernels.sgemm import dbuf_first_attempt as dbuf

    assert replace(dbuf.DBUF_CONFIG, WM=32, WN=64) == TileConfig() == ladder.SGEMM["warptile"].kernel.config
    assert (dbuf.DBUF_CONFIG.WM, dbuf.DBUF_CONFIG.WN) == (16, 128)
    assert replace(tuning.SWEEP_BASE, guard="if") == TileConfig() and tuning.SWEEP_BASE.guard == "select"


def test_lesson_08_model_predicts_the_tie():
    """Lesson 08's Predict: the limiter run counted the same instructions and shared wavefronts per
    warp-FFMA for dbuf and warptile, so the model predicts the same time; issue binds, and the
    shared ceiling lies below it."""
    from gemm_lessons.teaching import limiter_table

    d, w = limiter_table.counts("dbuf"), limiter_table.counts("warptile")
    for key in ("warp_instructions", "shared_wavefronts"):
        assert abs(w[key] / w["warp_ffma"] / (d[key] / d["warp_ffma"]) - 1) < 1e-3
    t = limiter_table.why(["dbuf", "warptile"])
    assert t.row("dbuf").binding == t.row("warptile").binding
    assert abs(t.row("dbuf").predicted_ms / t.row("warptile").predicted_ms - 1) < 5e-3
    for name in ("dbuf", "warptile"):
        row = t.row(name)
        assert row.binding == "issue" and row.ceilings_ms["shared"] < row.ceilings_ms["issue"]
        # 12 load + 1 store wavefronts per warp and k-step of 64 FFMA (the paired-load rule)
        n = limiter_table.counts(name)
        assert abs(n["shared_wavefronts"] / n["warp_ffma"] - 13 / 64) < 0.005


def test_lesson_08_lane_orders_by_the_paired_load_rule():
    """Lesson 08's lane orders: LDS.128 wavefronts of A (a lane's 16 bytes at its thread row) and
    B (at its column) by the paired-load rule: 12 per k-step for dbuf's and warptile's row-major
    orders and for lesson 06's 4 x 8 with lanes along rows (B pairs, A does not); 8 for the
    interleaved order of the Lab notes.  And the Idea's 4-byte loads: a 2 x 16 warp's B reads are
    2-way, a 4 x 8 warp's conflict-free."""
    from gemm_lessons.instruments import bank_model

    def per_k_step(row, col):
        a, b = (bank_model.wavefronts([16 * f(l) for l in range(32)], 16, paired_loads=True).wavefronts
                for f in (row, col))
        return a, b, 2 * a + 2 * b

    assert per_k_step(lambda l: l // 16, lambda l: l % 16) == (2, 4, 12)
    assert per_k_step(lambda l: l // 8, lambda l: l % 8) == (2, 4, 12)
    assert per_k_step(lambda l: l % 4, lambda l: l // 4) == (4, 2, 12)
    row = lambda l: ((l >> 1) & 1) | (((l >> 4) & 1) << 1)  # noqa: E731
    col = lambda l: (l & 1) | (((l >> 2) & 3) << 1)  # noqa: E731
    assert len({(row(l), col(l)) for l in range(32)}) == 32 and per_k_step(row, col) == (2, 2, 8)
    assert bank_model.wavefronts([16 * (l % 16) for l in range(32)], 4).degree == 2
    assert bank_model.wavefronts([16 * (l % 8) for l in range(32)], 4).wavefronts == 1


def test_one_rule_calls_a_timed_change_faster_or_slower():
    """timing.range_order is the rule of both lesson 08's single changes (tuning.ranges_apart) and
    lesson 10's effects (leaderboard.effect_mark): apart only when the p10-p90 ranges do not overlap."""
    from types import SimpleNamespace

    from gemm_lessons.teaching import leaderboard
    from gemm_lessons.measure.timing import range_order

    assert range_order((1, 2), (3, 4)) == 1 and range_order((3, 4), (1, 2)) == -1
    assert range_order((1, 3), (2, 4)) == 0 and range_order((1, 2), (2, 3)) == 0  # touching ranges overlap
    row = lambda lo, hi: SimpleNamespace(gflops_p10=lo, gflops_p90=hi)  # noqa: E731
    for before, after in [((1, 2), (3, 4)), ((3, 4), (1, 2)), ((1, 3), (2, 4))]:
        effect = type("E", (tuple,), {})(("t", "08", "a", "b", 1.0, 1.0, 0.0))
        effect.ranges = (before, after)
        mark = leaderboard.effect_mark(effect)
        assert (mark != "≈") == tuning.ranges_apart(row(*before), row(*after))
        assert mark == {1: "✅", -1: "❌", 0: "≈"}[range_order(before, after)]
