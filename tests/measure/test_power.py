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


def test_every_timed_row_carries_what_the_sampler_read(monkeypatch):
    """measure.rung_timing times through _timed: the Timing, and the sampler's summary for the row."""
    from gemm_lessons.measure import rung_timing

    class Sampler:
        def __init__(self, interval_s):
            self.interval_s = interval_s

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def summary(self):
            return {"clock_mhz": {"median": 1980, "min": 1980}, "interval": self.interval_s}

    monkeypatch.setattr(rung_timing, "PowerSampler", Sampler)
    monkeypatch.setattr(rung_timing, "time_gpu", lambda fn, **kw: ("timing", kw))
    t, got = rung_timing._timed(lambda: None, repeats=3)
    assert t == ("timing", {"repeats": 3}) and got == {"clock_mhz": {"median": 1980, "min": 1980}, "interval": 0.05}
    row = rung_timing._bw_row("copy", 2, 2, type("T", (), {"samples": [1.0], "batch": 1, "host_ms": 0.1,
                                                           "host_bound": False, "median_ms": 1.0, "p10_ms": 1.0,
                                                           "p90_ms": 1.0})(), 16, got)
    assert row.power == got and "power" in row.to_dict()


class TwoGPUs:
    """NVML on a machine with two GPUs: handles are their indices."""
    UUIDS = [b"GPU-aaaa", b"GPU-bbbb"]
    PCI = [b"00000000:18:00.0", b"00000000:2A:00.0"]

    def nvmlDeviceGetHandleByUUID(self, uuid):
        return self.UUIDS.index(uuid)

    def nvmlDeviceGetHandleByPciBusId(self, address):
        return self.PCI.index(address)

    def nvmlDeviceGetCount(self):
        return 2

    def nvmlDeviceGetHandleByIndex(self, i):
        return i


class Device:
    def __init__(self, uuid=None, bus=0x2A):
        self.uuid, self.bus = uuid, bus

    def get_device_identity(self):
        return {"pci_domain_id": 0, "pci_bus_id": self.bus, "pci_device_id": 0}


def test_nvml_reads_the_gpu_numba_uses_not_nvmls_first():
    """With CUDA_VISIBLE_DEVICES=1 numba's device 0 is NVML's GPU 1 (2026-11-28: a run on the
    second GPU recorded the first one's idle clock, 345 MHz, while its kernels ran at full speed)."""
    nvml = TwoGPUs()
    assert power.nvml_handle(nvml, Device(uuid="GPU-bbbb")) == 1
    assert power.nvml_handle(nvml, Device(uuid="GPU-cccc")) == 1  # unknown UUID: the PCI address (bus 0x2A)
    assert power.nvml_handle(nvml, Device(uuid=None, bus=0x18)) == 0
    try:
        power.nvml_handle(nvml, Device(uuid=None, bus=0x99))
    except RuntimeError as e:
        assert "among 2 GPUs" in str(e)
    else:
        raise AssertionError("a GPU NVML cannot find must not be read as NVML's first")
