"""Lesson 08's block order: the grouped mapping is a permutation of the tiles, the kernel's 3-D grid
walks the tiles in the same order, the grouped kernel is correct (simulator), the L2 model's
numbers, and the readers of the GPU records."""
import functools
import itertools
import math
from dataclasses import replace

import pytest

from gemm_lessons.teaching import block_order
from gemm_lessons.measure import problems
from gemm_lessons.records import results
from gemm_lessons.records.schema import BenchRecord, Device, SgemmRow
from gemm_lessons.kernels.sgemm import warptile
from gemm_lessons.kernels.sgemm.warptile import TileConfig

from conftest import requires_simulator

SHAPES = list(itertools.product(range(1, 12), range(1, 8), [1, 2, 3, 4, 5, 8, 16]))  # tiles_m, tiles_n, group_m


def test_grouped_order_is_a_permutation_of_the_tiles():
    for tiles_m, tiles_n, group_m in SHAPES:
        order = block_order.launch_order(tiles_m, tiles_n, group_m)
        assert sorted(order) == [(r, c) for r in range(tiles_m) for c in range(tiles_n)]  # each tile once
        g = min(group_m, tiles_m)
        assert order[:g] == [(r, 0) for r in range(g)]  # down the first column of the first group first
        for first in range(0, tiles_m, group_m):  # a group is finished before the next one starts
            rows = min(group_m, tiles_m - first)
            start = first * tiles_n
            assert {r for r, _ in order[start:start + rows * tiles_n]} == set(range(first, first + rows))


def test_group_of_one_is_row_major():
    assert block_order.launch_order(3, 4, 1) == [(r, c) for r in range(3) for c in range(4)]


def test_the_triton_example():
    # the tutorial's picture: 9 x 9 tiles, groups of 3 rows: the first 9 blocks cover a 3 x 3 square
    assert set(block_order.launch_order(9, 9, 3)[:9]) == {(r, c) for r in range(3) for c in range(3)}
    assert len({r for r, _ in block_order.launch_order(9, 9, 1)[:9]}) == 1  # row-major: one row


def test_the_kernels_grid_walks_the_same_order():
    for tiles_m, tiles_n, group_m in SHAPES:
        cfg = replace(TileConfig(), group_m=group_m)
        M, N = tiles_m * cfg.BM - 3, tiles_n * cfg.BN - 4  # ragged last tiles
        grid = cfg.grid(M, N)
        assert block_order.kernel_order(tiles_m, tiles_n, group_m, grid) == block_order.launch_order(
            tiles_m, tiles_n, group_m), (tiles_m, tiles_n, group_m)
        idle = (-tiles_m % group_m) * tiles_n  # blocks past the last tile row, which return at once
        assert math.prod(grid) == tiles_m * tiles_n + idle


def test_config_labels_and_rules():
    assert TileConfig().short() == replace(TileConfig(), group_m=1).short()  # recorded labels unchanged
    assert TileConfig(group_m=8).short().endswith(" group 8")
    with pytest.raises(ValueError, match="positive"):
        TileConfig(group_m=0).validate()


@requires_simulator
@pytest.mark.parametrize("cfg,shape", [
    # 64x64 tiles: 5 x 3 tiles, groups of 2 rows, the last group one row; beta != 0 also catches a
    # tile computed twice (the simulator runs blocks one after another, the second would read the first's C)
    (TileConfig(BM=64, BN=64, WM=32, WN=64, max_registers=None, group_m=2), (300, 132, 20, 1.5, -0.5)),
    # the lesson's tiles: 3 x 2 tiles, groups of 2 (two idle blocks); more rows in a group than tiles
    (TileConfig(group_m=2), (300, 132, 12, 1.0, 0.0)),
    (TileConfig(BM=64, BN=64, WM=32, WN=64, max_registers=None, group_m=16), (130, 68, 8, 2.0, 1.0)),
])
def test_grouped_kernel_is_correct(cfg, shape):
    res = problems.check(functools.partial(warptile.sgemm, config=cfg), *shape, name=cfg.short())
    assert res.passed, res.message()


# --- the model ----------------------------------------------------------------------------

def test_first_wave_at_8192_on_132_sms():
    # 64 x 64 tiles of 128 x 128, 264 blocks resident (132 SMs x 2)
    waves = {g: block_order.first_wave(64, 64, g, 264) for g in (1, 4, 8, 16)}
    assert [(w.a_rows, w.b_cols) for w in waves.values()] == [(5, 64), (8, 64), (8, 33), (16, 17)]
    assert all(w.blocks == 264 for w in waves.values())


def test_model_numbers():
    cfg = TileConfig()
    m = block_order.model(8192, 8192, 8192, 8, 264, 50 * 2**20, cfg)
    strips = 8 * 128 + 33 * 128
    assert m.hit_rate == pytest.approx(1 - strips / (264 * 256))
    assert m.slack == pytest.approx(50 * 2**20 / (4 * 8 * strips))
    assert m.requested_bytes == 4.0 * 8192 * 64 * 64 * 256
    # a wave that holds every block reads each input once
    once = block_order.model(1024, 512, 300, 1, 10**6, 50 * 2**20, cfg)
    assert once.dram_bytes == 4.0 * 300 * (1024 + 512)
    # one block at a time: every block reads its own strips from DRAM
    alone = block_order.model(1024, 512, 300, 4, 1, 50 * 2**20, cfg)
    assert alone.dram_bytes == alone.requested_bytes and alone.hit_rate == 0


# --- the records --------------------------------------------------------------------------

DEVICE = "Test GPU"


def _row(kernel, n, gflops, pct):
    return SgemmRow(kernel=kernel, M=n, N=n, K=n, gflops=gflops, gflops_p10=gflops * 0.99,
                    gflops_p90=gflops * 1.01, pct_cublas=pct, correct=True, median_ms=1.0)


def _record(tmp_path, speeds):
    """An l2order record: speeds = {n: {kernel: gflops}} (cuBLAS 50,000 at every size)."""
    rows = []
    for n, by in speeds.items():
        rows.append(_row("cublas", n, 50000.0, 100.0))
        rows += [_row(k, n, v, 100 * v / 50000.0) for k, v in by.items()]
    rec = BenchRecord(device=Device(name=DEVICE, sm_count=132), date="2026-12-01T00:00:00", sgemm=rows,
                      compiler={"warptile": {"registers": 128, "shared_bytes": 16896}},
                      extra={"l2_bytes": 50 * 2**20})
    path = results.path_for("experiment", DEVICE, "l2order", directory=str(tmp_path))
    (tmp_path / "experiments").mkdir(exist_ok=True)
    rec.write(path)
    return rec


def _ncu(tmp_path, launches):
    """An ncu --csv file: launches = [(kernel name, {metric: value})]."""
    head = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size",'
            '"Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"')
    lines = ["==PROF== Connected to process 1", head]
    for i, (kernel, metrics) in enumerate(launches):
        for name, value in metrics.items():
            lines.append(f'"{i}","1","python3","h","{kernel}","1","7","(256, 1, 1)","(64, 64, 1)","0","9.0",'
                         f'"Command line profiler metrics","{name}","","{value:,}"')
    (tmp_path / f"ncu-l2order-{results.slug(DEVICE)}.csv").write_text("\n".join(lines) + "\n")


def _counters(hit, dram, time_ns=20e6):
    return {"lts__t_sector_hit_rate.pct": hit, "dram__bytes_read.sum": dram,
            "lts__t_sectors_srcunit_tex_op_read.sum": 1000.0,
            "lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum": 10 * hit, "gpu__time_duration.sum": time_ns}


def test_nothing_recorded_says_so(tmp_path):
    assert block_order.load_record(directory=str(tmp_path)) is None
    assert block_order.NOT_RECORDED.startswith("Not recorded yet")


def test_a_record_of_another_device_is_found_with_its_orders(tmp_path):
    _record(tmp_path, {4096: {"warptile": 49000.0, "warptile_group8": 49500.0},
                       8192: {"warptile": 49400.0, "warptile_group4": 48000.0, "warptile_group8": 49800.0}})
    rec = block_order.load_record(directory=str(tmp_path))  # not the reference device: the newest
    assert rec.device.name == DEVICE and block_order.groups_of(rec) == [(1, "warptile"), (4, "warptile_group4"),
                                                                       (8, "warptile_group8")]
    assert block_order._row(rec, "warptile_group4", (8192,) * 3).gflops == 48000.0
    assert block_order._row(rec, "warptile_group4", (4096,) * 3) is None
    assert block_order.load_counters(DEVICE, str(tmp_path)) is None  # no profiler counters recorded


def test_the_counters_are_read_in_launch_order(tmp_path):
    _record(tmp_path, {8192: {"warptile": 46000.0, "warptile_group4": 46100.0, "warptile_group8": 49000.0,
                              "warptile_group16": 48000.0}})
    _ncu(tmp_path, [("warptile::sgemm_warptile[abi:v1]", _counters(80.0, 8e9)),
                    ("warptile::sgemm_warptile[abi:v2]", _counters(82.0, 7e9)),
                    ("warptile::sgemm_warptile[abi:v3]", _counters(90.0, 4e9)),
                    ("warptile::sgemm_warptile[abi:v4]", _counters(91.0, 5e9)),
                    ("sm90_xmma_gemm", _counters(95.0, 1e9)), ("splitk_reduce", _counters(50.0, 1e9))])
    counters = block_order.load_counters(DEVICE, str(tmp_path))
    assert list(counters) == ["warptile", "warptile_group4", "warptile_group8", "warptile_group16", "cublas"]
    assert counters["cublas"]["dram__bytes_read.sum"] == 2e9  # cuBLAS's two launches summed
    assert "lts__t_sector_hit_rate.pct" not in counters["cublas"]  # a rate is not summed
    assert counters["warptile_group8"]["dram__bytes_read.sum"] == 4e9  # the third launch: GROUP_M = 8


def test_counters_in_another_order_are_refused(tmp_path):
    _ncu(tmp_path, [("sm90_xmma_gemm", _counters(95.0, 1e9))] * 5)
    with pytest.raises(ValueError, match="sgemm_warptile"):
        block_order.load_counters(DEVICE, str(tmp_path))


def test_the_files_have_their_kinds():
    assert results.kind_of(results.path_for("ncu-l2order", "NVIDIA H100 80GB HBM3")) == "ncu-l2order"
    assert results.kind_of(results.path_for("experiment", "NVIDIA H100 80GB HBM3", "l2order")) == "experiment"


@requires_simulator
def test_the_gpu_tool_writes_a_record_the_lesson_reads(tmp_path, monkeypatch):
    """tools/l2order.py time (its command line refuses the simulator), end to end at a tiny size
    with cuBLAS and the timer replaced (neither works here): the record lands where
    load_record looks for it."""
    import importlib.util
    import os

    import numpy as np

    from conftest import REPO
    from gemm_lessons.measure import rung_timing as benchmark, cublas, device, timing

    spec = importlib.util.spec_from_file_location("l2order_tool", os.path.join(REPO, "tools", "l2order.py"))
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)

    def fake_cublas(A, B, C, alpha=1.0, beta=0.0):
        C.copy_to_device((A.copy_to_host() @ B.copy_to_host()).astype(np.float32))

    def fake_timer(fn, **kwargs):
        fn()
        return timing.Timing([1.0, 1.0, 1.0])

    gpu = device.DeviceInfo(name=DEVICE, simulator=False, sm_count=132, compute_capability=(9, 0), clock_mhz=1980.0,
                            fp32_lanes_per_sm=128)
    monkeypatch.setattr(device, "device_info", lambda: gpu)
    monkeypatch.setattr(block_order, "SIZES", (40,))
    monkeypatch.setattr(tool, "REPEATS", {40: 3})
    monkeypatch.setattr(cublas, "sgemm", fake_cublas)
    monkeypatch.setattr(benchmark, "time_gpu", fake_timer)
    monkeypatch.setattr(benchmark, "run_checks", lambda kernels: [])
    assert tool.time_orders(str(tmp_path)) == 0
    rec = block_order.load_record(DEVICE, str(tmp_path))
    assert rec.extra["group_m"] == {"warptile": 1, "warptile_group4": 4, "warptile_group8": 8, "warptile_group16": 16}
    assert block_order.groups_of(rec) == [(1, "warptile"), (4, "warptile_group4"), (8, "warptile_group8"),
                                          (16, "warptile_group16")]
    assert all(r.correct for r in rec.sgemm if r.kernel != "cublas")
    assert block_order._row(rec, "warptile", (40, 40, 40)).gflops is not None


def test_lesson_08_reading_of_model_against_profiler_holds_for_the_record():
    """Lesson 08 reads the recorded counters against the model: the model undercounts every
    order's DRAM reads, row-major order's most; it gets GROUP_M = 8 and 16 right in direction;
    for GROUP_M = 4 it predicts no gain where the profiler measured a large one."""
    record = block_order.load_record()
    counters = block_order.load_counters(record.device.name)
    n, resident, l2 = block_order.PROFILE_SIZE, block_order.resident_blocks(record), block_order.l2_size(record)[0]
    measured = {g: counters[name]["dram__bytes_read.sum"] for g, name in block_order.groups_of(record)}
    modelled = {g: block_order.model(n, n, n, g, resident, l2).dram_bytes for g in measured}
    ratio = {g: measured[g] / modelled[g] for g in measured}
    assert min(ratio.values()) > 1 and max(ratio, key=ratio.get) == 1
    for g in (8, 16):
        assert modelled[g] < modelled[1] and measured[g] < measured[1]
    assert modelled[4] / modelled[1] > 0.95 and measured[4] / measured[1] < 0.8
    # "at 8192^3 every grouped order read less from DRAM than row-major order and still ran a little slower"
    speed = {g: block_order._row(record, name, (n, n, n)).gflops for g, name in block_order.groups_of(record)}
    assert all(measured[g] < measured[1] and speed[g] < speed[1] for g in measured if g != 1)


def test_lesson_08_l2_section_holds_for_the_records():
    """Lesson 08: "DRAM was a few percent busy" (the limiter run, warptile) and "grouping reads far
    less from DRAM and moves the time by a few percent at most" (the block-order record)."""
    from gemm_lessons.runs import tuning
    from gemm_lessons.teaching import limiter_table

    row = limiter_table.why(["warptile"]).row("warptile")
    assert row.utilization_pct["dram"] < 10 and row.ceilings_ms["dram"] < 0.2 * row.ceilings_ms[row.binding]
    record = block_order.load_record()
    counters = block_order.load_counters(record.device.name)
    dram = {g: counters[name]["dram__bytes_read.sum"] for g, name in block_order.groups_of(record)}
    assert min(dram.values()) < 0.7 * dram[1]
    for size in {r.size for r in record.sgemm}:
        base = block_order._row(record, "warptile", size)
        for g, name in block_order.groups_of(record):
            assert abs(tuning.change_pct(base, block_order._row(record, name, size))) < 5


def test_l2_size_says_where_it_comes_from_without_repeating_the_device():
    record = block_order.load_record()
    size, text = block_order.l2_size(record)
    if record is not None and record.extra.get("l2_bytes"):
        assert size == record.extra["l2_bytes"] and text == f"{size / 2**20:.0f} MiB, as the driver reported it"
    assert block_order.l2_size(None) == (block_order.ASSUMED_L2_BYTES, block_order.l2_size(None)[1])
    assert "assumed" in block_order.l2_size(None)[1]
