"""The limiter model: how long a kernel must take, one time per ceiling of the GPU, and which
ceiling binds.  Pure arithmetic on two sets of facts:

* ``Machine``: the GPU's ceilings (SMs, the clock it held, FP32 lanes, issue slots, shared-memory
  wavefronts per cycle, measured L2 and DRAM bandwidth, measured DRAM latency), each with where it
  comes from;
* ``Work``: what the kernel does at one problem size (FFMAs, warp-instructions issued, shared
  wavefronts, bytes from L2 and from DRAM, bytes each SM keeps in flight, blocks and blocks per SM),
  counted by the profiler, the tracer or a formula.

``predict(work, machine)`` returns one ``Ceiling`` per resource (the time the kernel would take if
that resource were all that mattered), the binding one, and the predicted time: the binding
ceiling's time stretched by the last wave's idle SMs (``tail``).  The model assumes the resources
overlap perfectly, so the prediction is a lower bound where they do not.
"""
import math
from dataclasses import dataclass, field

# Hopper's SM: four schedulers, each issuing one warp-instruction per cycle (NVIDIA H100 white
# paper, "H100 SM architecture"), 128 FP32 lanes; shared memory serves one 32-bank wavefront (128
# bytes) per cycle (CUDA C++ Programming Guide, compute capability 9.0, "Shared Memory").
DOCUMENTED = {
    "issue_per_sm_cycle": (4, "documented: 4 schedulers per SM, one warp-instruction each per cycle (H100 white paper)"),
    "shared_wavefronts_per_sm_cycle": (1, "documented: 32 banks x 4 bytes per cycle per SM (CUDA C++ Programming "
                                          "Guide, compute capability 9.0)"),
}
LATENCY_DUTY = 0.5  # a block without prefetch has its loads in flight about half its life (it loads, then stores)
NAMES = ("fp32", "issue", "shared", "l2", "dram", "latency")
WHAT = {
    "fp32": "FP32 lanes (FFMA at the clock held)",
    "issue": "instruction issue (4 warp-instructions per SM per cycle)",
    "shared": "shared-memory wavefronts (1 per SM per cycle)",
    "l2": "L2 bandwidth (measured)",
    "dram": "DRAM bandwidth (measured copy rate)",
    "latency": "DRAM latency (Little's law: bytes in flight per SM)",
}


@dataclass(frozen=True)
class Machine:
    """The ceilings of one GPU.  ``sources`` says where each number comes from."""
    name: str
    sm_count: int
    clock_mhz: float            # the SM clock the GPU held while the kernels ran
    dram_gbs: float             # measured: a float4 copy, bytes read + written per second
    l2_gbs: float               # measured: the same copy on arrays that fit in L2
    dram_latency_ns: float      # measured: a dependent load chain through DRAM
    fp32_lanes_per_sm: int = 128
    issue_per_sm_cycle: float = DOCUMENTED["issue_per_sm_cycle"][0]
    shared_wavefronts_per_sm_cycle: float = DOCUMENTED["shared_wavefronts_per_sm_cycle"][0]
    sources: dict = field(default_factory=dict)

    @property
    def hz(self):
        return self.clock_mhz * 1e6

    @property
    def peak_tflops(self):
        return 2 * self.fp32_lanes_per_sm * self.sm_count * self.hz / 1e12

    @property
    def in_flight_needed_per_sm(self):
        """Bytes each SM must keep in flight to move the copy rate across the DRAM latency
        (Little's law: bandwidth x latency, shared among the SMs)."""
        return self.dram_gbs * self.dram_latency_ns / self.sm_count  # GB/s x ns = bytes


@dataclass(frozen=True)
class Work:
    """What one launch does.  Counts are totals over the whole grid; ``ffma`` counts thread-level
    FFMAs (M*N*K for an SGEMM), ``warp_instructions`` every warp-level instruction issued."""
    ffma: float
    warp_instructions: float
    shared_wavefronts: float
    l2_bytes: float
    dram_bytes: float
    blocks: int
    blocks_per_sm: int
    in_flight_per_sm: float = None  # bytes of loads each SM keeps outstanding (None: not modelled)
    latency_duty: float = LATENCY_DUTY


@dataclass(frozen=True)
class Ceiling:
    name: str
    seconds: float

    @property
    def what(self):
        return WHAT[self.name]


@dataclass(frozen=True)
class Prediction:
    ceilings: tuple             # one Ceiling per resource modelled, in NAMES order
    binding: str                # the name of the largest
    waves: int                  # rounds of blocks the SMs run
    tail: float                 # >= 1: how much the last, partly filled wave stretches the time
    seconds: float              # the binding ceiling's time x tail

    def ceiling(self, name):
        return next((c for c in self.ceilings if c.name == name), None)


def latency_fraction(work, machine):
    """The share of the copy rate that ``work``'s bytes in flight sustain (1: enough in flight)."""
    if not work.in_flight_per_sm:
        return 1.0
    return min(1.0, work.latency_duty * work.in_flight_per_sm / machine.in_flight_needed_per_sm)


def waves(work, machine):
    """(waves, tail): rounds of ``blocks_per_sm`` blocks on every SM, and the stretch of the last
    wave's idle slots (total slots over blocks; 1 when the blocks fill every wave)."""
    slots = machine.sm_count * max(1, work.blocks_per_sm)
    n = math.ceil(work.blocks / slots)
    return n, n * slots / work.blocks


def predict(work, machine):
    """One time per ceiling, the binding one, and the predicted time (see the module's docstring)."""
    hz = machine.hz
    ceilings = [
        Ceiling("fp32", work.ffma / (machine.sm_count * machine.fp32_lanes_per_sm * hz)),
        Ceiling("issue", work.warp_instructions / (machine.sm_count * machine.issue_per_sm_cycle * hz)),
        Ceiling("shared", work.shared_wavefronts / (machine.sm_count * machine.shared_wavefronts_per_sm_cycle * hz)),
        Ceiling("l2", work.l2_bytes / (machine.l2_gbs * 1e9)),
        Ceiling("dram", work.dram_bytes / (machine.dram_gbs * 1e9)),
    ]
    if work.in_flight_per_sm:
        ceilings.append(Ceiling("latency", work.dram_bytes / (machine.dram_gbs * 1e9 * latency_fraction(work, machine))))
    binding = max(ceilings, key=lambda c: c.seconds)
    n, tail = waves(work, machine)
    return Prediction(tuple(ceilings), binding.name, n, tail, binding.seconds * tail)


# What the profiler calls busiest, for each ceiling: the Nsight Compute utilization (% of its peak)
# of the unit the ceiling is about.  Latency has no unit: a latency-bound kernel leaves every unit
# below BUSY.
PROFILER_UNITS = {
    "fp32": "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active",
    "issue": "smsp__issue_active.avg.pct_of_peak_sustained_active",
    "shared": "l1tex__data_pipe_lsu_wavefronts_mem_shared.avg.pct_of_peak_sustained_elapsed",
    "l2": "lts__t_sectors.avg.pct_of_peak_sustained_elapsed",
    "dram": "dram__throughput.avg.pct_of_peak_sustained_elapsed",
}
BUSY = 60.0  # % of peak: below this on every unit, the profiler sees no unit saturated (latency)


def busiest(utilization):
    """The profiler's word: the ceiling whose unit is busiest (``utilization``: ceiling name ->
    % of peak), or "latency" when no unit reaches BUSY."""
    name, pct = max(utilization.items(), key=lambda kv: kv[1])
    return name if pct >= BUSY else "latency"
