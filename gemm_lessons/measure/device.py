"""What machine are we on?  Name, SMs, clocks, and the peak FP32 rate derived from them."""
from dataclasses import dataclass, asdict
from typing import Optional

from numba import cuda

from gemm_lessons.model.ceilings import shared_bandwidth_gbs
from gemm_lessons.core import backend, tables

# FP32 FMA lanes ("CUDA cores") per SM by compute capability (CUDA C Programming Guide,
# "Arithmetic Instructions" throughput table).  One FMA counts as 2 FLOP.
_FP32_LANES_PER_SM = {
    (5, 0): 128, (5, 2): 128, (5, 3): 128,
    (6, 0): 64, (6, 1): 128, (6, 2): 128,
    (7, 0): 64, (7, 2): 64, (7, 5): 64,
    (8, 0): 64, (8, 6): 128, (8, 7): 128, (8, 9): 128,
    (9, 0): 128,
    (10, 0): 128, (10, 3): 128, (11, 0): 128, (12, 0): 128, (12, 1): 128,
}


@dataclass(frozen=True)
class DeviceInfo:
    name: str
    simulator: bool
    sm_count: Optional[int] = None
    compute_capability: Optional[tuple] = None
    clock_mhz: Optional[float] = None
    fp32_lanes_per_sm: Optional[int] = None
    memory_gib: Optional[float] = None
    memory_clock_mhz: Optional[float] = None
    memory_bus_bits: Optional[int] = None

    @property
    def peak_gflops(self):
        """SMs x FP32 lanes x 2 FLOP per FMA x clock (boost clock as the driver reports it)."""
        if None in (self.sm_count, self.fp32_lanes_per_sm, self.clock_mhz):
            return None
        return self.sm_count * self.fp32_lanes_per_sm * 2 * self.clock_mhz / 1e3

    @property
    def memory_bandwidth_gbs(self):
        """Theoretical DRAM bandwidth: 2 transfers per clock (DDR) x bus width in bytes."""
        if None in (self.memory_clock_mhz, self.memory_bus_bits):
            return None
        return 2 * self.memory_clock_mhz * 1e6 * self.memory_bus_bits / 8 / 1e9

    @property
    def shared_bandwidth_gbs(self):
        return shared_bandwidth_gbs(self.sm_count, self.clock_mhz)

    def as_dict(self):
        d = asdict(self)
        d["peak_gflops"] = self.peak_gflops
        d["memory_bandwidth_gbs"] = self.memory_bandwidth_gbs
        return d

    def _repr_markdown_(self):
        if self.simulator:
            return ("**CUDA simulator** (no GPU here): kernels run as Python threads, correctness "
                    "checks work at small sizes, timings are not measured; plots show recorded "
                    "GPU results.")
        rows = [
            ("GPU", self.name),
            ("SMs", self.sm_count),
            ("compute capability", "%d.%d" % self.compute_capability),
            ("clock (MHz)", f"{self.clock_mhz:.0f}" if self.clock_mhz else "?"),
            ("FP32 lanes per SM", self.fp32_lanes_per_sm),
            ("peak FP32 (GFLOPS)", f"{self.peak_gflops:,.0f}" if self.peak_gflops else "?"),
            ("memory (GiB)", f"{self.memory_gib:.1f}" if self.memory_gib else "?"),
            ("DRAM bandwidth, theoretical (GB/s)",
             f"{self.memory_bandwidth_gbs:,.0f}" if self.memory_bandwidth_gbs else "?"),
        ]
        return tables.markdown(["", ""], rows)


def _attr(dev, name):
    try:
        return getattr(dev, name)
    except Exception:  # an attribute the driver no longer reports (e.g. CLOCK_RATE in CUDA 13)
        return None


_CACHE = []


def device_info() -> DeviceInfo:
    """Describe the current device (cached).  On the simulator, ``.simulator`` is True."""
    if _CACHE:
        return _CACHE[0]
    if backend.SIMULATOR:
        info = DeviceInfo(name="CUDA simulator", simulator=True)
    else:
        dev = cuda.get_current_device()
        name = dev.name.decode() if isinstance(dev.name, bytes) else str(dev.name)
        cc = tuple(dev.compute_capability)
        clock = _attr(dev, "CLOCK_RATE")
        mclock = _attr(dev, "MEMORY_CLOCK_RATE")
        free, total = cuda.current_context().get_memory_info()
        info = DeviceInfo(
            name=name,
            simulator=False,
            sm_count=_attr(dev, "MULTIPROCESSOR_COUNT"),
            compute_capability=cc,
            clock_mhz=clock / 1e3 if clock else None,
            fp32_lanes_per_sm=_FP32_LANES_PER_SM.get(cc),
            memory_gib=total / 2**30,
            memory_clock_mhz=mclock / 1e3 if mclock else None,
            memory_bus_bits=_attr(dev, "GLOBAL_MEMORY_BUS_WIDTH"),
        )
    _CACHE.append(info)
    return info


def banner():
    """The notebook's one provenance line, for its first cell: the GPU, its FP32 peak at the rated
    clock, the date, the versions and the commit; on the simulator, which recorded run the lesson's
    tables and plots show instead."""
    from gemm_lessons.measure import provenance

    commit = (provenance.git_commit() or "no git checkout")[:7]
    info = device_info()
    if info.simulator:
        from gemm_lessons.records import results

        try:
            record = results.load()
            shown = (f"tables and plots show the recorded run on {record.device.name}, {record.date[:10]} "
                     f"(commit {(record.git_commit or '?')[:7]})")
        except FileNotFoundError:
            shown = "no recorded GPU run was found in results/"
        return (f"CUDA simulator ({backend.REASON}): kernels run at small sizes for correctness, nothing is "
                f"timed; {shown}. Code at commit {commit}.")
    v = provenance.versions()
    cublas = v.get("cublas")
    return (f"Run on {info.name} ({info.sm_count} SMs; FP32 peak {info.peak_gflops / 1e3:.1f} TFLOPS at "
            f"{info.clock_mhz:,.0f} MHz), {provenance.now()[:10]}; numba-cuda {v['numba_cuda']}, "
            f"CUDA {v.get('cuda_driver', '?')}" + (f", cuBLAS {cublas}" if cublas else "") + f"; commit {commit}.")


# Sizes and per-SM limits the driver reports (cuDeviceGetAttribute, read through numba's
# Device object): name in this package -> CU_DEVICE_ATTRIBUTE_<name>.
_LIMITS = {
    "sm_count": "MULTIPROCESSOR_COUNT",
    "warp_size": "WARP_SIZE",
    "max_threads_per_block": "MAX_THREADS_PER_BLOCK",
    "max_threads_per_sm": "MAX_THREADS_PER_MULTIPROCESSOR",
    "max_blocks_per_sm": "MAX_BLOCKS_PER_MULTIPROCESSOR",
    "registers_per_sm": "MAX_REGISTERS_PER_MULTIPROCESSOR",
    "registers_per_block": "MAX_REGISTERS_PER_BLOCK",
    "shared_bytes_per_sm": "MAX_SHARED_MEMORY_PER_MULTIPROCESSOR",
    "shared_bytes_per_block": "MAX_SHARED_MEMORY_PER_BLOCK",
    "shared_bytes_per_block_optin": "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN",
    "shared_reserved_per_block": "RESERVED_SHARED_MEMORY_PER_BLOCK",
    "l2_bytes": "L2_CACHE_SIZE",
    "memory_bus_bits": "GLOBAL_MEMORY_BUS_WIDTH",
}


def device_limits():
    """The memory hierarchy's sizes and the per-SM limits of the current GPU, as the driver
    reports them (a dict; None on the simulator).  The L1 size is not among the driver's
    attributes: on recent GPUs L1 and shared memory are one array per SM, split per kernel."""
    if backend.SIMULATOR:
        return None
    from numba import cuda

    dev = cuda.get_current_device()
    limits = {key: _attr(dev, attr) for key, attr in _LIMITS.items()}
    limits["global_bytes"] = cuda.current_context().get_memory_info()[1]
    limits["compute_capability"] = list(dev.compute_capability)
    return limits


# What NVIDIA documents for the H100 (compute capability 9.0), for when neither a GPU nor a
# record is at hand, and for what the driver does not report (the L1 size).  Each value names
# its source; the primer prints them as "documented", never as measured.
HOPPER_TUNING_GUIDE = "https://docs.nvidia.com/cuda/hopper-tuning-guide/index.html"
DOCUMENTED_H100 = {
    "registers_per_sm": (65536, "64K 32-bit registers per SM", HOPPER_TUNING_GUIDE),
    "max_registers_per_thread": (255, "at most 255 registers per thread", HOPPER_TUNING_GUIDE),
    "max_warps_per_sm": (64, "at most 64 resident warps per SM", HOPPER_TUNING_GUIDE),
    "max_blocks_per_sm": (32, "at most 32 resident blocks per SM", HOPPER_TUNING_GUIDE),
    "shared_bytes_per_sm": (228 * 1024, "up to 228 KB of shared memory per SM", HOPPER_TUNING_GUIDE),
    "shared_bytes_per_block_optin": (227 * 1024, "up to 227 KB per block", HOPPER_TUNING_GUIDE),
    "l1_shared_bytes_per_sm": (256 * 1024, "256 KB of combined L1 cache, texture cache and shared memory per SM",
                               HOPPER_TUNING_GUIDE),
    "l2_bytes": (50 * 2**20, "50 MB of L2 cache on the H100", HOPPER_TUNING_GUIDE),
}
