"""The latency micro-benchmarks' logic, checked on the simulator at tiny sizes (timing itself
needs a GPU: `python -m gemm_lessons.measure.latency`)."""
import json

import numpy as np
import pytest

from gemm_lessons.core import backend
from gemm_lessons.measure import latency

from conftest import requires_simulator


@pytest.mark.parametrize("size,node", [(4096, 128), (1 << 16, 128), (256, 4), (64, 8)])
def test_chain_is_one_cycle_through_every_node(size, node):
    chain = latency.make_chain(size, node_bytes=node, seed=3)
    stride = node // 4
    nodes = size // node
    assert chain.dtype == np.uint32 and chain.size == size // 4
    assert latency.nodes_of(chain, node) == nodes
    assert latency.cycle_length(chain) == nodes  # one cycle, no shortcut
    visited, j = set(), 0
    for _ in range(nodes):
        assert j % stride == 0  # every step lands on a node, i.e. a new cache line
        visited.add(j)
        j = int(chain[j])
    assert len(visited) == nodes and j == 0
    assert not chain[np.arange(chain.size) % stride != 0].any()  # the rest is never visited


def test_chain_is_random_not_sequential():
    chain = latency.make_chain(1 << 16)
    steps = np.diff([latency.chase_host(chain, 0, k) for k in range(64)])
    assert len(set(steps.tolist())) > 32  # a fixed stride would let hardware or caches guess


def test_chain_refuses_too_small_a_working_set():
    with pytest.raises(ValueError):
        latency.make_chain(128)


def test_default_sizes_reach_four_times_l2():
    sizes = latency.default_sizes(50 * 2**20)
    assert sizes[0] == 4096 and all(b == 4 * a for a, b in zip(sizes, sizes[1:]))
    assert sizes[-1] >= 4 * 50 * 2**20 > sizes[-2]


def _fake_record():
    sizes = latency.default_sizes(50 * 2**20)
    cycles = [30, 30, 32, 35, 250, 260, 300, 600, 700]
    return {"device": {"name": "Fake GPU", "clock_mhz": 2000.0}, "date": "2026-01-01T00:00:00+00:00",
            "limits": {"l2_bytes": 50 * 2**20},
            "global": [{"bytes": b, "cycles_per_load": float(c), "ns_per_load": c / 2.0} for b, c in zip(sizes, cycles)],
            "shared": {"words": 4096, "cycles_per_load": 29.0}}


def test_levels_pick_one_working_set_per_level():
    lv = latency.levels(_fake_record())
    assert lv["L1"]["bytes"] == 4096
    assert lv["L2"]["bytes"] == 4 * 2**20  # > 4 x 256 KiB and <= L2 / 4
    assert lv["DRAM"]["bytes"] == 256 * 2**20  # the first >= 4 x L2
    text = latency.summary_markdown(_fake_record())
    assert "Fake GPU, 2026-01-01" in text and "| L2 | 4 MiB | 260 | 130 |" in text
    assert "| shared memory | 16 KiB | 29 | 14 |" in text and "the cycles at 2000 MHz" in text


def test_nanoseconds_are_the_cycles_at_the_reported_clock():
    rec = _fake_record()
    rec["global"][0]["ns_per_load"] = 12.0  # an event timing that would imply another clock
    assert latency.ns_per_load(rec, rec["global"][0]) == 15.0  # 30 cycles at 2000 MHz
    assert latency.summary_rows(rec)[0]["ns"] == 15.0
    rec["device"].pop("clock_mhz")  # no clock: the events' nanoseconds
    assert latency.ns_per_load(rec, rec["global"][0]) == 12.0
    assert latency.ns_per_load(rec, rec["shared"]) is None


def test_load_finds_the_newest_record(tmp_path):
    assert latency.load(directory=str(tmp_path)) is None
    for date in ("2026-01-01", "2026-02-01"):
        rec = dict(_fake_record(), date=date + "T00:00:00+00:00")
        rec["device"] = dict(rec["device"], name=f"GPU {date}")
        (tmp_path / f"latency-gpu-{date}.json").write_text(json.dumps(rec))
    assert latency.load(directory=str(tmp_path))["date"].startswith("2026-02-01")
    assert latency.record_path("NVIDIA H100 80GB HBM3", "d").endswith("d/latency-nvidia-h100-80gb-hbm3.json")


@requires_simulator
@pytest.mark.parametrize("start,steps", [(0, 1), (0, 5), (96, 40)])
def test_global_chase_kernel_follows_the_chain(start, steps):
    chain = latency.make_chain(4096, seed=1)  # 32 nodes
    last, cycles, ms = latency.run_global_chase(chain, start, steps)
    assert last == latency.chase_host(chain, start, steps)
    assert cycles > 0 and ms is None  # the simulator's stand-in clock runs; events are not used


@requires_simulator
def test_shared_chase_kernel_follows_the_chain():
    chain = latency.make_chain(4 * 64, node_bytes=4, seed=2)  # 64 consecutive words
    assert latency.run_shared_chase(chain, 23, start=5)[0] == latency.chase_host(chain, 5, 23)
    with pytest.raises(ValueError):
        latency.run_shared_chase(np.zeros(latency.SHARED_WORDS + 1, np.uint32), 1)


@requires_simulator
@pytest.mark.parametrize("chains,warps", [(1, 1), (4, 2)])
def test_ffma_kernel_computes_every_chain_and_records_each_warp(chains, warps):
    out, clocks = latency.run_ffma(chains, warps, steps=3)
    assert out.shape == (32 * warps,) and clocks.shape == (warps, 2)
    np.testing.assert_allclose(out, latency.ffma_reference(chains, 3), rtol=1e-6)
    assert (clocks[:, 1] > clocks[:, 0]).all()


@requires_simulator
def test_measure_functions_run_end_to_end_at_tiny_sizes():
    rows = latency.measure_global([4096, 8192], steps=4, repeats=2, progress=None)
    assert [r["bytes"] for r in rows] == [4096, 8192]
    assert all(r["nodes"] == r["warm_steps"] and r["ns_per_load"] is None for r in rows)
    # every launch goes on where the last stopped: 1 warm pass + 2 x 4 steps from node 0
    chain = latency.make_chain(4096)
    assert rows[0]["last_index"] == latency.chase_host(chain, 0, 32 + 8)
    shared = latency.measure_shared(words=64, steps=4, repeats=2)
    assert shared["words"] == 64 and len(shared["cycles_runs"]) == 2
    ffma = latency.measure_ffma(chains_list=(1, 2), warps_list=(1, 2), steps=2, repeats=1)
    assert [r["chains"] for r in ffma["ilp"]] == [1, 2] and [r["warps"] for r in ffma["warps"]] == [1, 2]


@requires_simulator
def test_the_command_refuses_on_the_simulator(capsys):
    with pytest.raises(SystemExit) as e:
        latency.main([])
    assert "simulator" in str(e.value) and "GPU" in str(e.value)
    assert backend.SIMULATOR


def _bench(name="Fake GPU", gbs=3000.0, kernel="copy_float4"):
    from types import SimpleNamespace as NS

    return NS(device=NS(name=name), bandwidth=[NS(kernel=kernel, gbs=gbs, rows=8192, cols=8192)])


def _record_with_limits():
    rec = _fake_record()
    rec["limits"].update(sm_count=100, max_threads_per_sm=2000)
    return rec


def test_bytes_in_flight_is_littles_law_on_the_reads():
    f = latency.bytes_in_flight(_record_with_limits(), _bench())
    assert f["read_gbs"] == 1500.0 and f["t_ns"] == 350.0  # the DRAM row of the fake record: 700 cycles, 350 ns
    assert f["bytes"] == pytest.approx(1500e9 * 350e-9)  # GB/s x ns = bytes
    assert f["per_sm"] == pytest.approx(f["bytes"] / 100)
    assert f["per_thread"] == pytest.approx(f["bytes"] / 100 / 2000)
    assert f["loads_per_thread"] == pytest.approx(f["per_thread"] / 4)


@pytest.mark.parametrize("change,message", [
    (lambda rec, bench: setattr(bench.device, "name", "Other GPU"), "not the same GPU"),
    (lambda rec, bench: setattr(bench.bandwidth[0], "kernel", "memcpy_d2d"), "no copy_float4 row"),
    (lambda rec, bench: rec["global"].pop(), "no DRAM"),
    (lambda rec, bench: rec["limits"].pop("max_threads_per_sm"), "threads per SM"),
])
def test_bytes_in_flight_says_what_is_missing(change, message):
    rec, bench = _record_with_limits(), _bench()
    change(rec, bench)
    with pytest.raises(ValueError, match=message):
        latency.bytes_in_flight(rec, bench)


def test_ffma_latency_and_the_source_of_a_record():
    rec = _fake_record()
    assert latency.ffma_latency(rec) is None and latency.ffma_latency(None) is None
    rec["ffma"] = {"ilp": [{"chains": 1, "cycles_per_ffma": 4.5}, {"chains": 2, "cycles_per_ffma": 2.3}]}
    assert latency.ffma_latency(rec) == 4.5
    assert "read from the saved record `results/latency-fake-gpu.json`" in latency.source(rec)
    assert latency.source(dict(rec, quick=True)).startswith("measured just now on Fake GPU")


@requires_simulator
def test_collect_builds_a_record(monkeypatch):
    """collect() is what the primer runs on a GPU: its bookkeeping (versions, commit, limits)
    must work; the measurements themselves are stubbed here."""
    monkeypatch.setattr(latency, "device_limits", lambda: {"l2_bytes": 1024, "sm_count": 1})
    monkeypatch.setattr(latency, "measure_global", lambda sizes, *a, **k: [{"bytes": s} for s in sizes])
    monkeypatch.setattr(latency, "measure_shared", lambda **k: {"cycles_per_load": 1.0})
    monkeypatch.setattr(latency, "measure_ffma", lambda **k: {"ilp": [], "warps": []})
    for quick in (True, False):
        rec = latency.collect(quick=quick, progress=None)
        assert rec["quick"] is quick and rec["global"] == [{"bytes": 4096}] and "versions" in rec
        assert ("nvidia_smi_after" in rec) is not quick
