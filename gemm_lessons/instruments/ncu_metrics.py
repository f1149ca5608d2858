"""What the profiler reads: Nsight Compute's metric names, the stall reasons in plain words, and the
rows of the lessons' tables (a label, the metrics behind it, how its number comes from them and
how it prints).

The metrics are Nsight Compute's, named as in its Profiling Guide
(https://docs.nvidia.com/nsight-compute/ProfilingGuide/): "Metrics Structure" for the names,
"Occupancy", "Memory Tables" and "Shared Memory" for the counters, "Warp Stall Reasons" for the
stall reasons (https://docs.nvidia.com/nsight-compute/ProfilingGuide/index.html#warp-stall-reasons).
``profiler`` runs ncu for these metrics and shows them as a table.
"""
import re
from dataclasses import dataclass

TIME = "gpu__time_duration.sum"
REGISTERS = "launch__registers_per_thread"
OCC_THEORETICAL = "sm__maximum_warps_per_active_cycle_pct"
OCC_ACHIEVED = "sm__warps_active.avg.pct_of_peak_sustained_active"
BLOCK_LIMITS = {"registers": "launch__occupancy_limit_registers",  # blocks per SM each resource allows
                "shared memory": "launch__occupancy_limit_shared_mem",
                "warps": "launch__occupancy_limit_warps",
                "blocks": "launch__occupancy_limit_blocks"}
SHARED_CONFIG = "launch__shared_mem_config_size"  # bytes of shared memory the driver set aside per SM for the launch
GLOBAL_LD_SECTORS = "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"
GLOBAL_LD_REQUESTS = "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"  # one per warp-wide load instruction
L1_HIT = "l1tex__t_sector_hit_rate.pct"
L2_BYTES = "lts__t_bytes.sum"
L2_HIT = "lts__t_sector_hit_rate.pct"
DRAM_READ, DRAM_WRITE = "dram__bytes_read.sum", "dram__bytes_write.sum"
DRAM_THROUGHPUT = "dram__throughput.avg.pct_of_peak_sustained_elapsed"
ISSUE_ACTIVE = "smsp__issue_active.avg.pct_of_peak_sustained_active"  # cycles a scheduler issued, of its active ones
SHARED = {(op, what): metric for op in ("ld", "st") for what, metric in [
    ("instructions", f"smsp__inst_executed_op_shared_{op}.sum"),
    ("wavefronts", f"l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{op}.sum"),
    ("conflicts", f"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{op}.sum")]}

# Each cycle every active warp is in one state; a stall reason's metric is the share of the
# active warp-cycles spent in it.  One line each, in plain words (the guide's table is longer).
STALL_REASONS = {
    "long_scoreboard": "waiting for data from global or local memory (a load served by L1, L2 or DRAM)",
    "short_scoreboard": "waiting for a result from shared memory (or from a slow math unit: sqrt, reciprocal)",
    "mio_throttle": "the queue into the MIO unit (shared memory, special math) is full: too many such instructions",
    "lg_throttle": "the queue for global and local memory instructions is full: too many of them at once",
    "barrier": "waiting at cuda.syncthreads() for the other warps of its block",
    "wait": "waiting a fixed number of cycles for an earlier instruction's result (one FFMA feeding the next)",
    "math_pipe_throttle": "the arithmetic unit it needs (FMA, ...) is busy with other warps' instructions",
    "not_selected": "ready, but the scheduler issued another warp's instruction in that cycle",
    "dispatch_stall": "ready, but the dispatch unit held the instruction back",
    "no_instruction": "its next instruction is not fetched yet (instruction cache miss, or just after a jump)",
    "branch_resolving": "waiting for a branch's target to be computed",
    "drain": "done, waiting for its last stores to leave before it can exit",
    "imc_miss": "waiting for a constant (a kernel argument, say) that missed the constant cache",
    "membar": "waiting at a memory fence",
    "sleeping": "all its threads are asleep or have yielded",
    "tex_throttle": "the texture unit's queue is full",
    "misc": "another hardware reason",
    "selected": "issuing an instruction: not a stall (never in the top 3)",
}
NOT_A_STALL = ("selected",)


def stall_metric(reason):
    return f"smsp__warp_issue_stalled_{reason}_per_warp_active.pct"


def _stall_reason(metric):
    m = re.fullmatch(r"smsp__warp_issue_stalled_(\w+)_per_warp_active\.pct", metric)
    return m.group(1) if m else None


STALL_METRICS = tuple(stall_metric(r) for r in STALL_REASONS)


def top_stalls(counters, n=3):
    """[(reason, % of active warp-cycles)] of one kernel's counters (metric -> value), largest
    first, without reasons at 0% and without 'selected' (a warp issuing is not stalled)."""
    found = [(r, counters[m]) for m, r in ((m, _stall_reason(m)) for m in counters) if r and r not in NOT_A_STALL
             and isinstance(counters[m], float) and counters[m] > 0]
    return sorted(found, key=lambda rv: -rv[1])[:n]


@dataclass(frozen=True)
class Row:
    label: str  # markdown: links into the glossary (the notebooks sit next to it)
    metrics: tuple  # what ncu must collect for it
    value: object  # counters (dict metric -> value) -> a number, or None where a metric is missing
    fmt: object  # number -> text


def _get(c, *metrics):
    values = [c.get(m) for m in metrics]
    return None if any(not isinstance(v, float) for v in values) else values


def _one(metric):
    return lambda c: (_get(c, metric) or [None])[0]


def _ratio(num, den):
    def value(c):
        v = _get(c, num, den)
        return v[0] / v[1] if v and v[1] else None
    return value


def _sum(*metrics):
    return lambda c: sum(_get(c, *metrics)) if _get(c, *metrics) else None


def _blocks_per_sm(c):
    limits = {name: c.get(metric) for name, metric in BLOCK_LIMITS.items()}
    if any(not isinstance(v, float) for v in limits.values()):
        return None
    return min(limits.values())


def limited_by(c):
    """The resources that allow the fewest blocks per SM (those named in BLOCK_LIMITS)."""
    limits = {name: c[metric] for name, metric in BLOCK_LIMITS.items()}
    return [name for name, v in limits.items() if v == min(limits.values())]


def fmt_time(ns):
    return f"{ns / 1e6:,.2f} ms" if ns >= 1e6 else f"{ns / 1e3:,.1f} µs"


def fmt_bytes(b):
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if b >= scale:
            return f"{b / scale:,.2f} {unit}"
    return f"{b:,.0f} B"


def fmt_count(n):
    return f"{n / 1e6:,.1f} M" if n >= 1e6 else f"{n:,.0f}"


def fmt_pct(p):
    return f"{p:.1f}%"


ROWS = {
    "time": Row("duration (one launch, under ncu)", (TIME,), _one(TIME), fmt_time),
    "registers": Row("[registers](GLOSSARY.md#register) per thread", (REGISTERS,), _one(REGISTERS),
                     lambda v: f"{v:.0f}"),
    "blocks_per_sm": Row("[blocks/SM](GLOSSARY.md#blocks-per-sm), limited by",
                         tuple(BLOCK_LIMITS.values()) + (SHARED_CONFIG,),
                         _blocks_per_sm, None),  # formatted with the limiting resource, in Profile
    "occupancy_theoretical": Row("theoretical [occupancy](GLOSSARY.md#occupancy)", (OCC_THEORETICAL,),
                                 _one(OCC_THEORETICAL), fmt_pct),
    "occupancy": Row("achieved [occupancy](GLOSSARY.md#occupancy)", (OCC_ACHIEVED,), _one(OCC_ACHIEVED), fmt_pct),
    "sectors_per_request": Row("global loads: [sectors](GLOSSARY.md#sector) per warp instruction",
                               (GLOBAL_LD_SECTORS, GLOBAL_LD_REQUESTS),
                               _ratio(GLOBAL_LD_SECTORS, GLOBAL_LD_REQUESTS), lambda v: f"{v:.2f}"),
    "l1_hit": Row("[L1](GLOSSARY.md#l1) hit rate", (L1_HIT,), _one(L1_HIT), fmt_pct),
    "l2_bytes": Row("[L2](GLOSSARY.md#l2) traffic", (L2_BYTES,), _one(L2_BYTES), fmt_bytes),
    "l2_hit": Row("L2 hit rate", (L2_HIT,), _one(L2_HIT), fmt_pct),
    "dram_bytes": Row("[DRAM](GLOSSARY.md#dram) traffic, read + written", (DRAM_READ, DRAM_WRITE),
                      _sum(DRAM_READ, DRAM_WRITE), fmt_bytes),
    "dram_throughput": Row("DRAM throughput, % of peak", (DRAM_THROUGHPUT,), _one(DRAM_THROUGHPUT), fmt_pct),
    "issue_active": Row("[issue](GLOSSARY.md#issue) slots busy: cycles a scheduler issued an instruction",
                        (ISSUE_ACTIVE,), _one(ISSUE_ACTIVE), fmt_pct),
    **{f"shared_{op}_{what}": Row(
        f"shared {'loads' if op == 'ld' else 'stores'}: "
        + {"instructions": "warp instructions", "wavefronts": "[wavefronts](GLOSSARY.md#wavefront)",
           "conflicts": "[bank conflicts](GLOSSARY.md#bank-conflict)"}[what],
        (metric,), _one(metric), fmt_count) for (op, what), metric in SHARED.items()},
}
STALL_ROWS = 3  # the table's last rows: the top 3 stall reasons
STALLS = "stalls"  # in a lesson's rows: the top stall reasons

# What each lesson's table shows: what the lesson's text is about.
LESSON_ROWS = {
    "01": ("time", "sectors_per_request", "l1_hit", "l2_bytes", "l2_hit", "dram_bytes", "issue_active", STALLS),
    "04": ("time", "registers", "blocks_per_sm", "occupancy_theoretical", "occupancy", "shared_ld_conflicts", STALLS),
    "06": ("time", "shared_ld_instructions", "shared_ld_wavefronts", "shared_ld_conflicts",
           "shared_st_instructions", "shared_st_wavefronts", "shared_st_conflicts", STALLS),
    "08": ("time", "registers", "blocks_per_sm", "occupancy_theoretical", "occupancy", "l2_hit", "dram_throughput",
           "issue_active", STALLS),
}
ALL_ROWS = tuple(ROWS) + (STALLS,)
# The kernels each lesson profiles (ladder names): what `record` profiles for the recorded file.
LESSON_CASES = {"01": ("naive", "naive_uncoalesced"), "04": ("reg2d", "reg2d_uncapped", "reg2d_contiguous"),
                "06": ("vec", "vec_split"), "08": ("dbuf", "warptile")}


def metrics_for(rows):
    out = []
    for key in rows:
        for m in (STALL_METRICS if key == STALLS else ROWS[key].metrics):
            if m not in out:
                out.append(m)
    return out

