"""The NVML sampler, with a stand-in for NVML (no GPU here)."""
import time

from gemm_lessons.measure import power


class FakeNVML:
    NVML_CLOCK_SM = 1

    def __init__(self):
        self.calls = 0

    def nvmlDeviceGetClockInfo(self, h, which):
        self.calls += 1
        return 1980 if self.calls % 2 else 1755

    def nvmlDeviceGetPowerUsage(self, h):
        return 697000  # mW

    def nvmlDeviceGetCurrentClocksEventReasons(self, h):
        return 0x1 | 0x4  # idle between launches, software power cap

    def nvmlDeviceGetEnforcedPowerLimit(self, h):
        return 700000


def test_samples_clock_power_and_reasons():
    with power.PowerSampler(interval_s=0.001, nvml=(FakeNVML(), None)) as s:
        time.sleep(0.05)
    got = s.summary()
    assert got["samples"] >= 2 and got["clock_mhz"]["min"] == 1755
    assert got["power_w"] == {"median": 697.0, "max": 697.0} and got["power_limit_w"] == 700
    assert got["events"] == ["sw_power_cap"]  # gpu_idle is left out


def test_event_names():
    assert power.event_names(0x4 | 0x40) == ["sw_power_cap", "hw_thermal_slowdown"]
    assert power.event_names(0x1000) == ["0x1000"]


def test_without_nvml_it_says_why(monkeypatch):
    def no_nvml():
        raise RuntimeError("no driver")

    monkeypatch.setattr(power, "_nvml", no_nvml)
    with power.PowerSampler() as s:
        pass
    assert s.summary() is None and "no driver" in s.unavailable
