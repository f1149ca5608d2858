"""The profiler's counters in words: each lesson's reading of its Nsight Compute table (lessons 01,
04, 06 and 08), every sentence made from the recorded (or just measured) numbers, so the text
follows the counters.  The counters themselves come from gemm_lessons.instruments.profiler
(``gl.profile``, ``profiler.recorded``); the metric names from gemm_lessons.instruments.ncu_metrics.
"""
from gemm_lessons.instruments.ncu_metrics import BLOCK_LIMITS, LESSON_ROWS, SHARED_CONFIG, fmt_time
from gemm_lessons.instruments.profiler import DEFAULT_SIZE, l2_sources, recorded
from gemm_lessons.records import results


def reading_01(prof=None):
    """Lesson 01's reading of its profiled kernels in words, from ``prof`` (default: the recorded
    counters): what the loads cost `naive` (L1, DRAM bytes and rate against the bytes of a kernel
    that reads A and B once and writes C once), its largest stall reasons with the issue-slot
    counter, and why `naive_uncoalesced` took longer (issue rate, sectors per load, its stalls)."""
    from gemm_lessons.model.counting import sgemm_min_bytes

    a, b = "naive", "naive_uncoalesced"
    prof = prof or recorded([a, b], rows=LESSON_ROWS["01"])
    if prof.counters.get(a) is None:
        return "No counters of `naive` recorded: run `python -m gemm_lessons.instruments.profiler record` on a GPU."
    v = {n: {r: prof.value(n, r) for r in ("time", "l1_hit", "dram_bytes", "issue_active", "sectors_per_request",
                                            "l2_bytes", "l2_hit")}
         for n in (a, b) if prof.counters.get(n) is not None}
    ideal = sgemm_min_bytes(*prof.size)
    t, dram = v[a]["time"], v[a]["dram_bytes"]
    stalls = prof.top_stalls(a)
    top = " and ".join(f"*{r.replace('_', ' ')}* ({p:.0f}%)" for r, p in stalls[:2])
    text = (f"Two global loads per FMA is what lesson 02 cuts. What do they cost? Source of the counters: "
            f"{prof.source}. `naive`'s "
            f"L1 hit rate was {v[a]['l1_hit']:.0f}%, and DRAM moved {dram / 1e9:.1f} GB in {fmt_time(t)} "
            f"({dram / t:,.0f} GB/s), {dram / ideal:.0f} times the {ideal / 1e6:.0f} MB of a kernel that reads A "
            "and B once and writes C once.")
    if v[a]["l2_bytes"] and v[a]["l2_hit"] is not None:
        missed = v[a]["l2_bytes"] * (1 - v[a]["l2_hit"] / 100)
        if missed > 1.1 * dram:
            text += (f" Its L2 misses ({v[a]['l2_bytes'] / 1e9:.1f} GB of L2 traffic times a miss rate of "
                     f"{100 - v[a]['l2_hit']:.0f}%) come to {missed / 1e9:.1f} GB, more than DRAM moved. "
                     + l2_sources_reading(a))
    text += f" Its most frequent stall reasons: {top}."
    if stalls and stalls[0][0] in ("long_scoreboard", "lg_throttle"):
        text += " The warps waited mostly for global memory: the loads are what held this kernel back."
    else:
        text += (" The most frequent one is not a wait for global memory: warps were ready but not picked, or "
                 "waited for a busy arithmetic pipe (which pipe, these counters do not say). "
                 + issue_reading(prof, [a]))
    if b in v and v[b]["issue_active"] and v[a]["issue_active"]:
        top_b = prof.top_stalls(b, 1)[0]
        text += (f"\n\nThe uncoalesced kernel has the same code with the two thread indices swapped. Its "
                 f"schedulers issued an instruction in {v[b]['issue_active']:.2f}% of their active cycles, `naive`'s "
                 f"in {v[a]['issue_active']:.2f}%: {v[a]['issue_active'] / v[b]['issue_active']:.2f}x as often; and "
                 f"one launch of the uncoalesced kernel took {v[b]['time'] / t:.2f}x as long. With the same code to "
                 f"run, the time went with the issue rate. Its warps mostly waited with "
                 f"*{top_b[0].replace('_', ' ')}* ({top_b[1]:.0f}%). Its warp-wide loads touched "
                 f"{v[b]['sectors_per_request']:.1f} sectors on average against {v[a]['sectors_per_request']:.1f} "
                 "(the figure at the top: A's loads touch 32 each), yet L2 traffic "
                 f"({v[b]['l2_bytes'] / 1e9:.1f} GB against {v[a]['l2_bytes'] / 1e9:.1f} GB) and DRAM traffic "
                 f"({v[b]['dram_bytes'] / 1e9:.1f} GB against {dram / 1e9:.1f} GB) stayed about the same: the L1 "
                 f"served the extra sectors (hit rate {v[b]['l1_hit']:.0f}% against {v[a]['l1_hit']:.0f}%). A likely "
                 "reading: the L1 handles a load's sectors one after another, so loads that touch 32 sectors fill "
                 "its queue, and the warps wait to issue their next load.")
    return text


def l2_sources_reading(kernel="naive", record=None):
    """Where ``kernel``'s L2 misses came from, in words, from experiments/l2_sources/l2_sources.py's record."""
    record = record or l2_sources()
    k = record and record[1].get(kernel)
    if not k:
        return ("Where the difference came from, these counters do not say (`experiments/l2_sources/l2_sources.py` splits the "
                "misses by the requests' source; no such profile is recorded for this GPU).")
    sector = 32
    sm_miss = k["lts__t_sectors_srcunit_tex_lookup_miss.sum"] * sector
    fabric_miss = k["lts__t_sectors_srcunit_ltcfabric_lookup_miss.sum"] * sector
    dram_read = k["dram__sectors_read.sum"] * sector
    where = results.ncu_where(record[0])
    all_miss = k["lts__t_sectors_lookup_miss.sum"] * sector
    return (f"A second profile of the same kernel split the L2's lookups by where each request came from "
            f"(`experiments/l2_sources/l2_sources.py`, {where}, experiments/l2_sources/ncu-l2-sources-*.csv). Of its "
            f"{all_miss / 1e9:.1f} GB of misses, the lookups of requests from the SMs missed "
            f"{sm_miss / 1e9:.1f} GB, and DRAM read {dram_read / 1e9:.1f} GB ({100 * abs(sm_miss / dram_read - 1):.1f}% "
            f"apart); the other {fabric_miss / 1e9:.1f} GB (`lts__t_sectors_srcunit_ltcfabric_lookup_miss`, in "
            "32-byte sectors) were lookups of requests that came from the *LTC fabric*, not from an SM. Since the "
            "A100 the L2 is split into two partitions; `lts` is ncu's name for one L2 slice, and the LTC fabric is "
            "the link between the partitions, so these are requests one partition passed to the other (NVIDIA's "
            "answer in [this forum thread](https://forums.developer.nvidia.com/t/whats-the-meaning-of-performance-"
            "counter-lts-t-sectors-srcunit-ltcfabric/228015), which points to the \"A100 L2 Cache\" section of the "
            "[Ampere white paper](https://images.nvidia.com/aem-dam/en-zz/Solutions/data-center/nvidia-ampere-"
            "architecture-whitepaper.pdf)). Those did not add DRAM reads beyond the SMs' misses, so the miss rate, "
            "which counts every lookup, overstates what came from DRAM.")


ISSUE_FULL = 80.0  # % of active cycles with an instruction issued that issue_reading calls full


def issue_reading(prof, names):
    """One sentence: were the schedulers' issue slots full (ISSUE_ACTIVE) for ``names``?  ISSUE_FULL %
    or more of the active cycles counts as full (at most one instruction per scheduler per cycle)."""
    busy = {n: prof.value(n, "issue_active") for n in names}
    if any(v is None for v in busy.values()):
        return ("Whether instruction issue itself was the limit, these counters do not show (the record has no "
                "issue-slot counter).")
    shown = " and ".join(f"{v:.0f}% (`{n}`)" for n, v in busy.items())
    if min(busy.values()) >= ISSUE_FULL:
        return (f"The schedulers issued an instruction in {shown} of their active cycles, close to the limit of "
                "one per cycle: issuing instructions is the likely limit (a kernel that issues fewer for the same work "
                "would tell).")
    if max(busy.values()) < ISSUE_FULL:
        return (f"The schedulers issued an instruction in {shown} of their active cycles, short of the limit of "
                "one per cycle: issue slots alone were not the limit, and these counters do not say what was.")
    return f"The schedulers issued an instruction in {shown} of their active cycles (the limit is one per cycle)."


def reading_04(prof=None, traced_conflicts=None, size=DEFAULT_SIZE, tile=(128, 128, 8)):
    """Lesson 04's reading of its profiled kernels in words, from ``prof`` (default: the recorded
    counters): what lifting the register cap changed (blocks/SM, occupancy, waits on global
    memory, time), and the bank-conflict row against the tracer: ``traced_conflicts``, the
    tracer's load conflicts of `reg2d_contiguous` in one block and one slice (BM x BN x BK =
    ``tile``), times the blocks and slices of ``size``."""
    names = ("reg2d", "reg2d_uncapped", "reg2d_contiguous")
    prof = prof or recorded(list(names), size=size, rows=LESSON_ROWS["04"])
    if any(prof.counters.get(n) is None for n in names):
        return "No counters of the three kernels recorded: run `python -m gemm_lessons.instruments.profiler record` on a GPU."
    v = {n: {r: prof.value(n, r) for r in ("time", "blocks_per_sm", "occupancy", "shared_ld_conflicts")}
         for n in names}
    waits = {n: dict(prof.top_stalls(n, 10)) for n in names}
    a, b, c = names
    text = (f"Reading the table ({prof.source}): without the register cap, `{b}` fits "
            f"{v[b]['blocks_per_sm']:.0f} block(s) per SM against {v[a]['blocks_per_sm']:.0f}, its achieved "
            f"occupancy is {v[b]['occupancy']:.1f}% against {v[a]['occupancy']:.1f}%, its warps spent "
            f"{waits[b].get('long_scoreboard', 0):.0f}% of their cycles waiting on global or local memory (long "
            f"scoreboard) against {waits[a].get('long_scoreboard', 0):.0f}%, and one launch took "
            f"{v[b]['time'] / v[a]['time']:.2f}x as long, as fewer resident warps hiding less of the loads' latency "
            "would make it (the counters show the waits, not their cause). ")
    text += shared_limit_reading(prof, a, b)
    M, N, K = size
    BM, BN, BK = tile
    blocks, slices = -(-M // BM) * -(-N // BN), -(-K // BK)
    if traced_conflicts is not None and v[c]["shared_ld_conflicts"]:
        expected = traced_conflicts * blocks * slices
        text += (f"The bank-conflict row: the tracer's {traced_conflicts:,} conflicts of `{c}` in one block and "
                 f"one slice, times {blocks:,} blocks and {slices:,} slices, make {expected / 1e6:,.1f} M; the "
                 f"profiler counted {v[c]['shared_ld_conflicts'] / 1e6:,.1f} M "
                 f"({100 * v[c]['shared_ld_conflicts'] / expected:.2f}% of it). ")
    if v[a]["shared_ld_conflicts"]:
        text += (f"For `{a}`, where the tracer finds none, the profiler counted {v[a]['shared_ld_conflicts']:,.0f}, "
                 f"{v[a]['shared_ld_conflicts'] / (blocks * slices):.2f} per block and slice: conflicts the "
                 "addresses do not explain (lesson 06 meets such extras too). ")
    top_c = prof.top_stalls(c, 1)[0]
    text += (f"`{c}`'s largest stall reason is {top_c[0].replace('_', ' ')} ({top_c[1]:.0f}%)"
             + (": waiting on shared memory, as its conflicts suggest" if top_c[0] == "short_scoreboard" else "")
             + f"; its launch took {v[c]['time'] / v[a]['time']:.2f}x as long as `{a}`'s.")
    return text


def shared_limit_reading(prof, a, b):
    """Why kernel ``b``'s blocks/SM names shared memory as a limit when kernel ``a``, with the same
    shared arrays, fits more blocks by shared memory: ncu counts that limit against the shared memory
    the driver set aside for the launch (SHARED_CONFIG, where recorded).  Empty when it does not."""
    limit = {n: (prof.counters.get(n) or {}).get(BLOCK_LIMITS["shared memory"]) for n in (a, b)}
    reg = (prof.counters.get(b) or {}).get(BLOCK_LIMITS["registers"])
    if None in (limit[a], limit[b], reg) or not limit[b] < limit[a] or limit[b] != reg:
        return ""
    config = {n: (prof.counters.get(n) or {}).get(SHARED_CONFIG) for n in (a, b)}
    text = (f"The table also names shared memory as a limit of `{b}`: {limit[b]:.0f} block(s) per SM against "
            f"{limit[a]:.0f} for `{a}`, whose shared arrays are the same size. ncu counts that limit against the "
            "shared memory the driver set aside on each SM for the launch (the rest of the same storage serves as "
            "L1 cache; the driver chooses the split, see the [CUDA C++ Programming Guide on the shared memory "
            "carveout](https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#shared-memory-8-x))")
    if None not in config.values():
        text += (f". It set aside {config[b] / 1024:,.0f} KiB for `{b}` against {config[a] / 1024:,.0f} KiB for "
                 f"`{a}`: " + ("less, enough for the blocks the registers allow. The registers set the limit; the "
                               "shared-memory limit follows it. " if config[b] < config[a] else
                               "not less, so the split does not explain the lower limit. "))
    else:
        text += (". A likely reading, not recorded here (the record has no `launch__shared_mem_config_size`): "
                 "the driver set aside shared memory for the one block the registers allow, so the registers set "
                 "the limit and the shared-memory limit follows it. ")
    return text


def store_wavefronts_reading(prof, traces, traced_shape, bk=8):
    """Lesson 06: the profiler's shared-store wavefronts of each kernel at ``prof.size`` against
    the tracer's count of one block at ``traced_shape`` (M, N, K), scaled to the whole grid (the
    number of blocks, and the slices of BK along K): one generated sentence."""
    M, N, K = prof.size
    tm, tn, tk = traced_shape
    parts = []
    for name, trace in traces.items():
        got = prof.value(name, "shared_st_wavefronts")
        if got is None:
            continue
        blocks = (M // tm) * (N // tn)
        scaled = trace.totals("st")["wavefronts"] * blocks * (K // bk) / (tk // bk)
        parts.append(f"`{name}` {got / 1e6:,.1f} M against {scaled / 1e6:,.1f} M ({100 * (got / scaled - 1):+.1f}%)")
    if not parts:
        return "No shared-store wavefronts in this profile."
    return (f"Shared-store wavefronts at {M}x{N}x{K}, the profiler ({prof.source}) against the tracer's count of one "
            f"block at K = {tk} scaled to the grid ({M // tm} x {N // tn} blocks, {K // bk} slices of {bk}): "
            + "; ".join(parts) + ". Why the profiler counts more was not found.")


def reading_08(prof=None):
    """Lesson 08's reading of its two profiled kernels (dbuf, warptile), in words, from ``prof``
    (default: the recorded counters): how far apart their durations and rates are, whether DRAM
    was busy, and the largest stall reason with what it means."""
    prof = prof or recorded(["dbuf", "warptile"], rows=LESSON_ROWS["08"])
    names = ("dbuf", "warptile")
    if any(prof.counters.get(n) is None for n in names):
        return "No counters of both kernels recorded: run `python -m gemm_lessons.instruments.profiler record` on a GPU."
    t = {n: prof.value(n, "time") for n in names}
    ratio = t["warptile"] / t["dbuf"]
    rates = ("occupancy", "l2_hit", "dram_throughput")  # percentages
    gap = max(abs(prof.value("warptile", r) - prof.value("dbuf", r)) for r in rates)
    text = (f"Reading the table ({prof.source}): one launch of `warptile` took {ratio:.3f}x as long as one of "
            f"`dbuf` under the profiler (the table rounds both to 0.01 ms)")
    if abs(ratio - 1) < 0.02 and gap < 1:
        text += (f", and their occupancy, L2 hit rate and DRAM throughput differ by at most {gap:.1f} points: "
                 "these counters do not tell the two kernels apart. ")
    else:
        text += f"; their occupancy, L2 hit rate and DRAM throughput differ by up to {gap:.1f} points. "
    occ = {n: (prof.value(n, "occupancy"), prof.value(n, "occupancy_theoretical")) for n in names}
    text += ("Achieved occupancy: " + " and ".join(f"{occ[n][0]:.1f}% (`{n}`)" for n in names)
             + f"; their registers allow {max(o[1] for o in occ.values()):.0f}% (theoretical). ")
    dram = max(prof.value(n, "dram_throughput") for n in names)
    if dram < 20:
        text += f"DRAM was at most {dram:.1f}% busy: DRAM bandwidth was not what held them back. "
    top = {}
    for n in names:
        reason, share = prof.top_stalls(n, 1)[0]
        top[n] = (reason.replace("_", " "), share)
    reasons = {r for r, _ in top.values()}
    if reasons == {"not selected"}:
        text += (f"The largest stall reason of both is *not selected* ({top['dbuf'][1]:.0f}% and "
                 f"{top['warptile'][1]:.0f}% of active warp-cycles): a warp was ready to issue but its scheduler "
                 "issued another warp's instruction, so there were ready warps to hide latency with. "
                 + issue_reading(prof, names))
    else:
        text += "Largest stall reasons: " + ", ".join(f"{n} {r} ({v:.0f}%)" for n, (r, v) in top.items()) + "."
    return text
