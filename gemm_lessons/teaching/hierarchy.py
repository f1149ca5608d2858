"""The memory hierarchy of the GPU in use, for the primer: sizes from the driver, latencies
measured by gemm_lessons.measure.latency, each value labelled with where it comes from.

Sources, best first: the GPU in use (on a GPU: sizes from the driver now, latencies measured
by a quick run of the latency benchmarks); the latency record (results/latency-<device>.json,
written by ``python -m gemm_lessons.measure.latency`` on a GPU), which holds both; NVIDIA's documented
H100 values (device.DOCUMENTED_H100), for sizes only, when neither is at hand.
"""
from dataclasses import dataclass

from gemm_lessons.core import backend
from gemm_lessons.measure import latency
from gemm_lessons.records import results
from gemm_lessons.measure.device import DOCUMENTED_H100, HOPPER_TUNING_GUIDE, device_info, device_limits

PROGRAMMING_GUIDE = "https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html"
CC_TABLE = PROGRAMMING_GUIDE + "#features-and-technical-specifications-technical-specifications-per-compute-capability"
HOPPER_SHARED = HOPPER_TUNING_GUIDE + "#unified-shared-memory-l1-texture-cache"
_TABLE = f"[Programming Guide, technical specifications per compute capability]({CC_TABLE})"
_HOPPER = f"[Hopper tuning guide, unified shared memory/L1]({HOPPER_SHARED})"

REGISTER_ALLOCATION_UNIT = 256  # registers, handed out per warp (cuda_occupancy.h)
STATIC_SHARED_BYTES_PER_BLOCK = 48 * 1024  # cuda.shared.array / __shared__ (Hopper tuning guide)
OPTIN_SHARED_BYTES_PER_BLOCK = 227 * 1024  # dynamic, with the opt-in (Hopper tuning guide)

# The per-SM limits of compute capability 9.0 that the primer's occupancy arithmetic uses, each
# with where it is documented: (key of compiler_facts.SM_LIMITS_CC90, or None for a rule that
# blocks_per_sm applies in its code; what; value; source).  tests/teaching/test_primer_listing.py checks that the
# values are those compiler_facts computes with.
CC90_LIMITS = [
    ("registers", "32-bit registers per SM", 65536, _TABLE),
    (None, "registers are handed out per warp, in units of", REGISTER_ALLOCATION_UNIT,
     "the CUDA toolkit's occupancy calculator header `cuda_occupancy.h` (in its `include/` folder): "
     "`cudaOccRegAllocationGranularity()` gives 256 for compute capability 9"),
    ("shared_bytes", "bytes of shared memory per SM", 228 * 1024, _HOPPER),
    ("shared_reserved_per_block", "bytes of shared memory CUDA reserves per block", 1024,
     _HOPPER + ": \"CUDA reserves 1 KB of shared memory per thread block\""),
    ("threads", "resident threads per SM (64 warps)", 2048, _TABLE),
    ("blocks", "resident blocks per SM", 32, _TABLE),
    (None, "bytes of static shared memory (`cuda.shared.array`) per block at most", STATIC_SHARED_BYTES_PER_BLOCK,
     _HOPPER + " (more needs dynamic shared memory and an explicit opt-in)"),
    (None, "bytes of shared memory per block at most, dynamic, with the opt-in", OPTIN_SHARED_BYTES_PER_BLOCK,
     _HOPPER),
]


def this_gpu():
    """The GPU the primer speaks of, as a dict: name, compute_capability ("9.0"), sm_count,
    warp_size (None where not known), simulator (True when this machine has no GPU) and source
    (where the values come from).  On a GPU the driver reports them; on the simulator they come
    from the newest latency record in results/, else the newest bench record; None when there
    is neither."""
    if not backend.SIMULATOR:
        info, lm = device_info(), device_limits()
        cc = info.compute_capability
        return {"name": info.name, "compute_capability": f"{cc[0]}.{cc[1]}" if cc else None,
                "sm_count": info.sm_count, "warp_size": lm.get("warp_size"), "simulator": False,
                "source": "reported by the driver just now"}
    rec = latency.load()
    if rec is not None:
        d, lm = rec["device"], rec.get("limits") or {}
        cc = d.get("compute_capability") or lm.get("compute_capability")
        return {"name": d["name"], "compute_capability": f"{cc[0]}.{cc[1]}" if cc else None,
                "sm_count": d.get("sm_count") or lm.get("sm_count"), "warp_size": lm.get("warp_size"),
                "simulator": True, "source": f"the latency record of {latency.label(rec)} in results/, written by "
                                             "`python -m gemm_lessons.measure.latency`"}
    try:
        bench = results.load(directory=results.RESULTS_DIR)
    except FileNotFoundError:
        return None
    cc = bench.device.compute_capability
    return {"name": bench.device.name, "compute_capability": f"{cc[0]}.{cc[1]}" if cc else None,
            "sm_count": bench.device.sm_count, "warp_size": None, "simulator": True,
            "source": f"the benchmark record of {results.label(bench)} in results/, written by "
                      "`python -m gemm_lessons.runs.bench`"}


def _size(b):
    return latency._size(b) if b else "?"


@dataclass
class Hierarchy:
    rows: list  # dicts: level, scope, size, latency
    size_source: str
    latency_source: str
    latency_record: dict = None
    limits: dict = None

    def limits_line(self):
        """The SM count and per-SM limits, as far as they are known."""
        lm = self.limits or {}
        parts = []
        if lm.get("sm_count"):
            parts.append(f"{lm['sm_count']} SMs")
        per = [f"{lm[key]:,} {text}" for key, text in (("max_threads_per_sm", "threads"),
                                                       ("max_blocks_per_sm", "blocks"),
                                                       ("registers_per_sm", "32-bit registers")) if lm.get(key)]
        if per:
            parts.append("per SM at most " + ", ".join(per))
        if lm.get("shared_bytes_per_block"):
            parts.append(f"{_size(lm['shared_bytes_per_block'])} of shared memory per block by default "
                         f"({_size(lm.get('shared_bytes_per_block_optin'))} if the kernel asks for more)")
        return "; ".join(parts)

    def _repr_markdown_(self):
        clock = ((self.latency_record or {}).get("device") or {}).get("clock_mhz")
        ns = f" (ns: the cycles at the {clock:.0f} MHz clock the driver reports)" if clock else ""
        lines = [f"Sizes: {self.size_source}. Latencies: {self.latency_source}{ns}.", "",
                 "| level | who sees it | size | latency of one dependent load |", "|---|---|---|---|"]
        lines += [f"| {r['level']} | {r['scope']} | {r['size']} | {r['latency']} |" for r in self.rows]
        if self.limits_line():
            lines += ["", "The GPU: " + self.limits_line() + "."]
        return "\n".join(lines)

    def figure(self, ax=None, title=None):
        """The hierarchy as stacked boxes (figures.memory_hierarchy); ``title`` replaces the default,
        which sends the reader to the table for the sources."""
        from gemm_lessons.teaching import figures

        measured = "latencies measured" if self.latency_record else "latencies not measured yet"
        return figures.memory_hierarchy(
            [{"name": r["short"], "scope": r["scope"], "size": r["short_size"], "latency": r["short_latency"]}
             for r in self.rows], ax=ax,
            title=title or f"memory hierarchy, closest to the threads on top ({measured}; sources in the table)")


def _documented_limits():
    return {k: v[0] for k, v in DOCUMENTED_H100.items()}


def hierarchy(measure_now=None):
    """The hierarchy table.  On a GPU, ``measure_now`` (default True) runs the quick latency
    benchmarks; otherwise the newest latency record is used, if any."""
    rec, latency_source = None, None
    if not backend.SIMULATOR:
        limits = device_limits()
        size_source = f"reported by the driver of {device_info().name} (this GPU)"
        dram_bytes = limits["global_bytes"]
        if measure_now is None or measure_now:
            rec = latency.collect(quick=True, progress=None)
            latency_source = f"measured just now on {device_info().name} (quick run of gemm_lessons.measure.latency)"
        else:
            rec = latency.load(device_info().name)
    else:
        rec = latency.load()
        if rec is not None:
            limits = rec["limits"]
            size_source = f"reported by the driver, recorded on {latency.label(rec)}"
            dram_bytes = limits.get("global_bytes")
        else:
            limits = _documented_limits()
            limits["max_threads_per_sm"] = 32 * limits["max_warps_per_sm"]
            size_source = (f"documented for the H100 in NVIDIA's [Hopper tuning guide]({HOPPER_TUNING_GUIDE}) "
                           "(no GPU here and no latency record yet)")
            try:
                bench = results.load()
                dram_bytes = bench.device.memory_gib * 2**30
                limits["sm_count"] = bench.device.sm_count
                size_source += f"; SM count and DRAM size recorded on {results.label(bench)}"
            except FileNotFoundError:
                dram_bytes = None
    if latency_source is None:
        latency_source = (f"measured with `python -m gemm_lessons.measure.latency`, recorded on {latency.label(rec)}"
                          if rec is not None else
                          "not measured yet: run `python -m gemm_lessons.measure.latency` on a GPU to record them "
                          "(results/latency-<device>.json)")
    lv = latency.levels(rec) if rec else {}

    def lat(name, short=False):
        r = lv.get(name)
        if r is None:
            return "not measured yet" if rec is None else "?"
        if short:
            return f"{r['cycles_per_load']:.0f} cycles"
        t = latency.ns_per_load(rec, r)  # the cycles at the reported clock, as in latency.summary_markdown
        ns = f", {t:.0f} ns" if t else ""
        return f"{r['cycles_per_load']:.0f} cycles{ns} ({_size(r['bytes'])} working set)"

    shared_lat = (f"{rec['shared']['cycles_per_load']:.0f} cycles" if rec and rec.get("shared")
                  else "not measured yet")
    regs = limits.get("registers_per_sm")
    l1 = DOCUMENTED_H100["l1_shared_bytes_per_sm"]
    cc = tuple(limits.get("compute_capability") or (9, 0))
    documented_l1 = cc == (9, 0)
    l1_text = (f"{_size(l1[0])} per SM together with shared memory (documented for compute capability 9.0: "
               f"{_HOPPER})"
               if documented_l1 else "not reported by the driver")
    rows = [
        {"level": "registers", "short": "registers", "scope": "one thread",
         "size": f"{regs:,} x 4 bytes = {_size(4 * regs)} per SM" if regs else "?",
         "short_size": f"{_size(4 * regs)} per SM" if regs else "?",
         "latency": "none: an instruction reads its operands from registers", "short_latency": "none (operands)"},
        {"level": "shared memory", "short": "shared memory", "scope": "the threads of one block",
         "size": f"{_size(limits.get('shared_bytes_per_sm'))} per SM, "
                 f"{_size(limits.get('shared_bytes_per_block_optin'))} per block at most",
         "short_size": f"{_size(limits.get('shared_bytes_per_sm'))} per SM",
         "latency": shared_lat, "short_latency": shared_lat},
        {"level": "L1 cache", "short": "L1 cache", "scope": "one SM", "size": l1_text,
         "short_size": f"{_size(l1[0])} per SM with shared memory (documented)" if documented_l1 else "?",
         "latency": lat("L1"), "short_latency": lat("L1", True)},
        {"level": "L2 cache", "short": "L2 cache", "scope": "all SMs", "size": _size(limits.get("l2_bytes")),
         "short_size": _size(limits.get("l2_bytes")), "latency": lat("L2"), "short_latency": lat("L2", True)},
        {"level": "DRAM (HBM on an H100): global memory", "short": "DRAM: global memory",
         "scope": "all SMs, and the host through copies", "size": _size(dram_bytes), "short_size": _size(dram_bytes),
         "latency": lat("DRAM"), "short_latency": lat("DRAM", True)},
    ]
    return Hierarchy(rows, size_source, latency_source, rec, limits)
