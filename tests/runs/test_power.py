"""python -m gemm_lessons.runs.power: the arithmetic on the NVML samples, and the recorded run
(the measurement itself needs a GPU)."""
from gemm_lessons.records import results
from gemm_lessons.runs import power


def test_only_samples_after_the_settling_time_count():
    samples = [(0.0, 1980, 120.0, 0x1), (0.5, 1980, 400.0, 0x0),  # NVML's one-second average still rising
               (1.6, 1965, 697.0, 0x4), (2.0, 1950, 699.0, 0x4), (2.5, 1980, 696.0, 0x0)]
    got = power.summarize(samples, settle_s=1.5, power_limit_w=700.0)
    assert got["samples"] == 3
    assert got["clock_mhz"] == {"median": 1965, "min": 1950}
    assert got["power_w"] == {"median": 697.0, "max": 699.0}
    assert got["events"] == ["sw_power_cap"] and got["power_limit_w"] == 700.0  # gpu_idle left out
    assert power.summarize(samples[:2], settle_s=1.5) is None


def test_the_recorded_run_holds_every_rung_and_cublas():
    rec = power.load("NVIDIA H200")
    assert rec is not None and rec["device"]["name"] == "NVIDIA H200"
    rows = {r["kernel"]: r for r in rec["rows"]}
    assert list(rows) == power.kernels()
    for r in rows.values():
        p = r["power"]
        assert p["samples"] > 0 and p["power_w"]["median"] <= p["power_w"]["max"] <= p["power_limit_w"]
        kept = [s for s in r["trace"] if s[0] >= rec["settle_s"]]
        assert power.summarize(kept, rec["settle_s"], p["power_limit_w"]) == p  # the summary is the trace's


def test_a_power_record_is_not_taken_for_a_bench_record():
    path = results.path_for("power", "NVIDIA H200")
    assert results.kind_of(path) == "power" and path not in results.available()
