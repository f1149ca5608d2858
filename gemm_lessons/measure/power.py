"""The SM clock, the power and the clock-event reasons while a measurement runs, read through NVML
(NVIDIA's Python bindings, ``pip install nvidia-ml-py``; module ``pynvml``).  Nothing here changes
the GPU's clocks or limits: it only reads them.

    with PowerSampler() as s:
        timing = time_gpu(...)
    s.summary()  # {"clock_mhz": {median, min}, "power_w": {median, max}, "power_limit_w", "events": [...]}

Where NVML is missing (no bindings, no driver, the simulator) ``summary()`` returns None and says
why in ``unavailable``.
"""
import statistics
import threading
import time

# NVML's clock-event reasons (nvmlClocksEventReason*, formerly "throttle reasons"), by bit
EVENT_REASONS = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}


def event_names(mask):
    """The reasons set in an NVML clock-event bit mask, by name (unknown bits as hex)."""
    names = [name for bit, name in EVENT_REASONS.items() if mask & bit]
    rest = mask & ~sum(EVENT_REASONS)
    return names + ([hex(rest)] if rest else [])


def _nvml():
    """(pynvml, handle of the GPU numba uses) or raises with the reason."""
    import pynvml  # nvidia-ml-py
    from numba import cuda

    pynvml.nvmlInit()
    return pynvml, nvml_handle(pynvml, cuda.get_current_device())


def nvml_handle(pynvml, device):
    """NVML's handle of numba's ``device``, found by its UUID, else by its PCI address.  NVML
    numbers the GPUs of the machine, CUDA only those CUDA_VISIBLE_DEVICES shows: NVML's first GPU
    is numba's only when there is one, so with several and no match it raises rather than read
    another GPU's clock and power."""
    uuid = getattr(device, "uuid", None)
    if uuid:
        try:
            return pynvml.nvmlDeviceGetHandleByUUID(uuid.encode() if isinstance(uuid, str) else uuid)
        except Exception:  # noqa: BLE001 (a driver that does not know it: try the PCI address)
            pass
    try:
        ident = device.get_device_identity()  # numbers: domain, bus, device
        address = f"{ident['pci_domain_id']:08X}:{ident['pci_bus_id']:02X}:{ident['pci_device_id']:02X}.0"
        return pynvml.nvmlDeviceGetHandleByPciBusId(address.encode())
    except Exception:  # noqa: BLE001
        pass
    if pynvml.nvmlDeviceGetCount() == 1:
        return pynvml.nvmlDeviceGetHandleByIndex(0)
    raise RuntimeError("NVML could not find the GPU numba uses (by UUID or PCI address) among "
                       f"{pynvml.nvmlDeviceGetCount()} GPUs: clock and power not read")


class PowerSampler:
    """Reads clock, power and clock-event reasons every ``interval_s`` in a background thread."""

    def __init__(self, interval_s=0.01, nvml=None):
        self.interval_s = interval_s
        self.samples = []  # (seconds since start, SM clock MHz, power W, event mask)
        self.unavailable = None
        self._stop = threading.Event()
        self._thread = None
        self.power_limit_w = None
        try:
            self._pynvml, self._handle = nvml or _nvml()
            try:
                self.power_limit_w = self._pynvml.nvmlDeviceGetEnforcedPowerLimit(self._handle) / 1000
            except Exception:  # noqa: BLE001
                pass
        except Exception as e:  # noqa: BLE001 (any failure: no readings, and why)
            self._pynvml = None
            self.unavailable = f"NVML not available: {e!r}"

    def _read(self):
        p, h = self._pynvml, self._handle
        clock = p.nvmlDeviceGetClockInfo(h, p.NVML_CLOCK_SM)
        power = p.nvmlDeviceGetPowerUsage(h) / 1000  # mW -> W
        get_reasons = getattr(p, "nvmlDeviceGetCurrentClocksEventReasons", None) or \
            p.nvmlDeviceGetCurrentClocksThrottleReasons
        return clock, power, get_reasons(h)

    def _run(self, start):
        while not self._stop.is_set():
            try:
                self.samples.append((time.perf_counter() - start, *self._read()))
            except Exception as e:  # noqa: BLE001
                self.unavailable = f"NVML read failed: {e!r}"
                return
            self._stop.wait(self.interval_s)

    def __enter__(self):
        if self._pynvml is not None:
            self._thread = threading.Thread(target=self._run, args=(time.perf_counter(),), daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        return False

    def summary(self):
        """Median and minimum SM clock, median and maximum power, the enforced power limit and
        every clock-event reason seen (gpu_idle left out: it is set between launches)."""
        if not self.samples:
            return None
        clocks = [s[1] for s in self.samples]
        power = [s[2] for s in self.samples]
        mask = 0
        for s in self.samples:
            mask |= s[3]
        return {"samples": len(self.samples),
                "clock_mhz": {"median": statistics.median(clocks), "min": min(clocks)},
                "power_w": {"median": round(statistics.median(power), 1), "max": round(max(power), 1)},
                "power_limit_w": self.power_limit_w,
                "events": [n for n in event_names(mask) if n != "gpu_idle"]}
