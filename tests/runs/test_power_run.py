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


class _FakeNVML:
    """NVML's four readings, steady at the cap (no GPU here)."""
    NVML_CLOCK_SM = 1

    def nvmlDeviceGetClockInfo(self, h, which):
        return 1965

    def nvmlDeviceGetPowerUsage(self, h):
        return 697000  # mW

    def nvmlDeviceGetCurrentClocksEventReasons(self, h):
        return 0x4  # sw_power_cap

    def nvmlDeviceGetEnforcedPowerLimit(self, h):
        return 700000


def test_measure_runs_each_kernel_back_to_back_and_keeps_the_settled_samples(monkeypatch):
    """The measurement loop on the simulator, NVML stood in for: one row per kernel, its trace and
    the summary of the trace's settled part."""
    import pytest

    from gemm_lessons.core import backend
    from gemm_lessons.measure import power as sampler

    if not backend.SIMULATOR:
        pytest.skip("the simulator's tiny launch; on a GPU, python -m gemm_lessons.runs.power measures for real")
    monkeypatch.setattr(sampler, "_nvml", lambda: (_FakeNVML(), None))
    monkeypatch.setattr(power, "INTERVAL_S", 0.001)
    rows = power.measure(["naive"], size=(8, 8, 8), seconds=0.05, settle_s=0.0, progress=None)
    assert [r["kernel"] for r in rows] == ["naive"]
    r = rows[0]
    assert r["calls"] >= 8 and r["tflops"] > 0 and r["trace"]
    assert r["power"]["clock_mhz"]["median"] == 1965 and r["power"]["events"] == ["sw_power_cap"]
    assert r["power"]["power_limit_w"] == 700.0
