"""python -m gemm_lessons.runs.limiter predict: the record's model section, from a stand-in
measurement and profile (the GPU steps need a GPU)."""
import csv
import io
import json

import pytest

from gemm_lessons.model import limiter as model
from gemm_lessons.records import results
from gemm_lessons.runs import limiter

DEVICE = "Test GPU"


def _profile(path, launches):
    """An ncu --csv file of ``launches`` ({metric: value} each), as ncu writes it."""
    out = io.StringIO()
    w = csv.writer(out, quoting=csv.QUOTE_ALL)
    w.writerow(["ID", "Kernel Name", "Metric Name", "Metric Unit", "Metric Value"])
    for i, launch in enumerate(launches):
        for metric, value in launch.items():
            w.writerow([i, f"kernel{i}", metric, "", value])
    path.write_text("==PROF== Connected\n" + out.getvalue())


def _launch(**over):
    base = {m: 0.0 for m in limiter.METRICS}
    base.update({"launch__grid_size": 1024, "launch__block_size": 256, "launch__occupancy_limit_blocks": 32,
                 "launch__occupancy_limit_registers": 2, "launch__occupancy_limit_shared_mem": 8,
                 "launch__occupancy_limit_warps": 8, "sm__cycles_elapsed.avg.per_second": 1.98e9,
                 "gpu__time_duration.sum": 1e6,  # ns, as --print-units base gives it
                 "lts__t_bytes.sum": 5e9, "lts__t_sectors.avg.pct_of_peak_sustained_elapsed": 50.0})  # 10 TB/s peak
    base.update(over)
    return base


@pytest.fixture
def recorded(tmp_path):
    names = [c for c, _, _ in limiter.cases()]
    record = {"device": {"name": DEVICE}, "timings": [{"case": c, "median_ms": 2.0} for c in names],
              "machine": {"sm_count": 132, "fp32_lanes_per_sm": 128, "clock_mhz": 1980, "dram_gbs": 3000,
                          "l2_gbs": 10000, "dram_latency_ns": 350, "dram_gbs_source": "measured: copy"}}
    (tmp_path / "limiter-test-gpu.json").write_text(json.dumps(record))
    launches = [_launch(**{"smsp__inst_executed.sum": 2 * 132 * 4 * 1.98e9 * 1e-3,  # 2 ms of issue
                           "smsp__issue_active.avg.pct_of_peak_sustained_active": 90.0}) for _ in names]
    _profile(tmp_path / "ncu-limiter-test-gpu.csv", launches)
    return tmp_path


def test_predict_writes_every_ceiling_the_binding_one_and_the_profilers_word(recorded):
    limiter.predict(str(recorded), DEVICE)
    rows = json.loads((recorded / "limiter-test-gpu.json").read_text())["model"]["cases"]
    assert [r["case"] for r in rows] == [c for c, _, _ in limiter.cases()]
    first = rows[0]
    assert first["binding"] == "issue" and first["profiler_busiest"] == "issue"
    assert first["ceilings_ms"]["issue"] == pytest.approx(2.0)
    # 1024 blocks, 2 per SM (registers): 264 slots, 4 waves
    assert first["waves"] == 4 and first["predicted_ms"] == pytest.approx(2.0 * 4 * 264 / 1024)
    assert first["measured_over_predicted"] == pytest.approx(2.0 / first["predicted_ms"])
    assert first["profiled_ms"] == pytest.approx(1.0)
    model = json.loads((recorded / "limiter-test-gpu.json").read_text())
    assert model["machine"]["l2_gbs"] == pytest.approx(10000) and "Nsight Compute" in model["machine"]["l2_gbs_source"]
    copy = rows[-1]
    assert copy["case"] == "copy" and "latency" in copy["ceilings_ms"]  # bytes in flight: 16 x 256 x 2 per SM


def test_predict_refuses_a_profile_of_other_launches(recorded):
    _profile(recorded / "ncu-limiter-test-gpu.csv", [_launch()])
    with pytest.raises(SystemExit, match="profile again"):
        limiter.predict(str(recorded), DEVICE)


def test_work_counts_bytes_in_flight_for_transposes_only():
    w = limiter.work_of("transpose smem_padded_32x8", _launch(**{"launch__occupancy_limit_blocks": 8,
                                                                  "launch__occupancy_limit_registers": 8}))
    assert w.blocks_per_sm == 8 and w.in_flight_per_sm == 16 * 256 * 8
    assert limiter.work_of("sgemm warptile", _launch()).in_flight_per_sm is None


def test_the_profiler_metrics_include_every_unit_the_model_names():
    assert set(model.PROFILER_UNITS.values()) <= set(limiter.METRICS)
    assert results.kind_of("results/limiter-nvidia-h200.json") == "limiter"
    assert results.kind_of("results/ncu-limiter-nvidia-h200.csv") == "ncu-limiter"
