"""Lesson 10: every rung against cuBLAS, and what each technique was worth when measured.

All numbers come from one results record (``python -m gemm_lessons.runs.bench``: every rung,
variant and cuBLAS timed in one process) and, for the tile-configuration changes, from the
recorded sweep (``python -m gemm_lessons.runs.tuning``).  The leaderboard of lesson 10 (``board``,
``steps``) adds the limiter model's facts (teaching.limiter_table) and the clock and power of each
rung run back to back (gemm_lessons.runs.power).
"""
from dataclasses import dataclass

from gemm_lessons.kernels import ladder
from gemm_lessons.records import results
from gemm_lessons.core import tables
from gemm_lessons.records.results import label, sgemm_rows
from gemm_lessons.measure.timing import range_order

# (technique, lesson, the kernel without it, the kernel with it): pairs timed in the same run
TECHNIQUES = [
    ("coalesced global loads (threadIdx.x along a row of C)", "01", "naive_uncoalesced", "naive"),
    ("shared-memory tiles", "02", "naive", "smem_tile"),
    ("16x16 instead of 32x32 shared tiles", "02", "smem_tile", "smem_tile16"),
    ("16 results per thread in registers (1-D)", "03", "smem_tile", "reg1d"),
    ("a 64x64 block instead of 128x128 (1-D register tile)", "03", "reg1d", "reg1d_64x64"),
    ("8x8 outer product per thread (2-D)", "04", "reg1d", "reg2d"),
    ("no register cap (157 registers, 1 block per SM)", "04", "reg2d", "reg2d_uncapped"),
    ("a thread's 8x8 results side by side instead of spread", "04", "reg2d", "reg2d_contiguous"),
    ("transposed A tile + 128-bit loads + compile-time unrolling", "05", "reg2d", "vec"),
    # lesson 05 in steps: the same jump, one change at a time (after lesson 04's side-by-side results)
    ("the loops written out at compile time (static_range)", "05", "reg2d_contiguous", "reg2d_unrolled"),
    ("A tile stored transposed; both tiles read 16 bytes at a time (LDS.128)", "05", "reg2d_unrolled", "transposed_a"),
    ("16-byte global loads for staging (LDG.128)", "05", "transposed_a", "wide_loads"),
    ("16-byte stores of C (STG.128)", "05", "wide_loads", "vec"),
    ("writing out the k-loop too", "05", "vec", "vec_unrolled_k"),
    ("8x8 split into four 4x4 (conflict-free LDS.128)", "06", "vec", "vec_split"),
    ("two shared buffers behind a runtime buffer index (first attempt)", "07", "vec_split", "dbuf_indexed"),
    ("vec_split rewritten as lesson 07's configurable kernel, one buffer (new code, a thread's rows placed "
     "closer: more than one change)", "07", "vec_split", "dbuf_one_buffer"),
    ("two shared buffers, one barrier per slice", "07", "dbuf_one_buffer", "dbuf"),
    ("`if a and b:` around the loads instead of `if a & b:`", "07", "dbuf", "dbuf_short_circuit"),
    ("clamped loads + select instead of `if a & b:`", "07", "dbuf", "dbuf_select"),
    ("warp tile 32x64 (4x8 lanes) instead of 16x128 (2x16)", "08", "dbuf", "warptile"),
]


def table(record, sizes=None):
    """Markdown: TFLOPS, % of cuBLAS and % of FP32 peak of every rung at every recorded size."""
    sizes = sizes or sorted({r.size for r in record.sgemm}, key=lambda s: (s[0] != s[1] or s[1] != s[2], s))
    peak = record.device.peak_gflops

    def cell(name, size):
        timed = [r for r in sgemm_rows(record, name, size) if r.gflops is not None]
        if not timed:
            return ""
        r = timed[0]
        pct = 100 if r.pct_cublas is None else r.pct_cublas
        return (f"{r.gflops / 1e3:.2f} · {pct:.1f}% · {100 * r.gflops / peak:.0f}%"
                + (" (host-bound)" if r.host_bound else ""))

    rows = [["**cublas**" if name == "cublas" else name, ladder.SGEMM[name].lesson if name in ladder.SGEMM else "",
             *(cell(name, s) for s in sizes)] for name in record.ladder + ["cublas"]]
    return (f"TFLOPS · % of cuBLAS · % of FP32 peak ({peak / 1e3:.1f}), {label(record)}\n\n"
            + tables.markdown(["rung", "lesson", *(f"{m}x{n}x{k}" for m, n, k in sizes)], rows, "ll" + "r" * len(sizes)))


class Effect(tuple):
    """(technique, lesson, without, with, TFLOPS without, TFLOPS with, change in %), and
    ``source``: the label of the run that timed the pair when it is not the main record, and
    ``ranges``: the p10-p90 TFLOPS of both, ((without p10, p90), (with p10, p90)), when recorded."""
    source = None
    ranges = None


def _run_name(record):
    """'NVIDIA H100 80GB HBM3, 2026-12-01, `python -m gemm_lessons.teaching.lesson05_steps`': which run."""
    words = (record.command or "").split()
    return label(record) + (f", `{' '.join(words[:3])}`" if words[:2] == ["python", "-m"] else "")


def technique_effects(record, size=(4096, 4096, 4096), extra=()):
    """Effects: one row per TECHNIQUES pair timed at ``size``, both kernels in the same run: in
    ``record``, or else in the first of ``extra`` (other records of the same GPU, such as lesson
    05's steps; None entries are skipped) that timed both, named in the row's ``source``."""
    out = []
    for what, lesson, before, after in TECHNIQUES:
        for rec in [record, *(r for r in extra if r is not None)]:
            b, a = (sgemm_rows(rec, k, size) for k in (before, after))
            if b and a and b[0].gflops is not None and a[0].gflops is not None:
                tb, ta = b[0].gflops / 1e3, a[0].gflops / 1e3
                row = Effect((what, lesson, before, after, tb, ta, 100 * (ta / tb - 1)))
                if None not in (b[0].gflops_p10, b[0].gflops_p90, a[0].gflops_p10, a[0].gflops_p90):
                    row.ranges = ((b[0].gflops_p10 / 1e3, b[0].gflops_p90 / 1e3),
                                  (a[0].gflops_p10 / 1e3, a[0].gflops_p90 / 1e3))
                if rec is not record:
                    row.source = _run_name(rec)
                out.append(row)
                break
    return out


def effect_mark(effect):
    """✅ faster, ❌ slower, ≈ neither, by the p10-p90 ranges of the two kernels: faster when the
    slowest tenth of the samples with the technique (its p10) beat the fastest tenth without (p90),
    slower the other way round; ≈ when the ranges overlap.  Without recorded ranges, 2 % either way."""
    ranges, pct = getattr(effect, "ranges", None), effect[6]
    if ranges is None:
        return "✅" if pct > 2 else ("❌" if pct < -2 else "≈")
    return {1: "✅", -1: "❌", 0: "≈"}[range_order(*ranges)]


def _tflops_range(value, rng):
    return f"{value:.2f}" + (f" ({rng[0]:.2f}-{rng[1]:.2f})" if rng else "")


def effects_markdown(effects):
    """The effects as a table, TFLOPS with their p10-p90 ranges and effect_mark's mark; pairs timed in
    another run are marked † and that run named below."""
    rows = [[what, lesson, before, after + (" †" if getattr(e, "source", None) else ""),
             f"{_tflops_range(tb, e.ranges and e.ranges[0])} → {_tflops_range(ta, e.ranges and e.ranges[1])}",
             f"{effect_mark(e)} {pct:+.1f}%"]
            for e in effects for what, lesson, before, after, tb, ta, pct in [e]]
    notes = sorted({e.source for e in effects if getattr(e, "source", None)})
    head = ["technique", "lesson", "without", "with", "TFLOPS without → with (p10-p90)", "change"]
    return (tables.markdown(head, rows, "llllrr")
            + "".join(f"\n\n† timed together in another run: {n}" for n in notes))


def roofline_rows(record, counters=None, size=(4096, 4096, 4096)):
    """Per SGEMM rung at ``size``: (rung, TFLOPS, FLOP per global byte asked for, the global
    ceiling there, FLOP per shared byte, the shared ceiling there, FLOP per DRAM byte measured
    by ncu or None), ceilings in TFLOPS: min(FP32 peak, bandwidth x intensity)."""
    from gemm_lessons.model import counting

    M, N, K = size
    flop = counting.sgemm_flops(M, N, K)
    peak = record.device.peak_gflops
    bw = results.copy_bandwidth_gbs(record)
    shared_bw = record.device.shared_bandwidth_gbs
    out = []
    for name in record.ladder or []:
        rows = sgemm_rows(record, name, size)
        if not rows or name not in counting.RUNG_TILES:
            continue
        traffic = counting.sgemm_traffic(name, M, N, K)
        x_global = flop / (4 * traffic["global"])
        x_shared = flop / (4 * traffic["shared"]) if traffic["shared"] else None
        c = (counters or {}).get(name, {})
        dram = c.get("dram__bytes_read.sum")
        x_dram = flop / (dram + c.get("dram__bytes_write.sum", 0)) if dram else None
        out.append((name, rows[0].gflops / 1e3, x_global, min(peak, bw * x_global) / 1e3, x_shared,
                    min(peak, shared_bw * x_shared) / 1e3 if x_shared else None, x_dram))
    return out


def device_records(directory=results.RESULTS_DIR):
    """The bench record of every GPU in ``directory``, the reference device (results.REFERENCE_DEVICE) first."""
    records = [results.read(p) for p in results.files("bench", directory)]
    return sorted(records, key=lambda r: (r.device.name != results.REFERENCE_DEVICE, r.device.name))


def _bandwidth(record, kernel, shape):
    rows = [r for r in record.transpose or [] if r.kernel == kernel and (r.rows, r.cols) == tuple(shape)]
    return rows[0] if rows and rows[0].gbs is not None else None


def devices_ratios(a, b, size=(4096, 4096, 4096), shape=(8192, 8192)):
    """How ``b`` compares with ``a`` (bench records): FP32 peak, measured copy, and the speed of
    every SGEMM rung (at ``size``) and transpose (at ``shape``) timed on both, as b / a."""
    def sgemm(record, name):
        rows = [r for r in sgemm_rows(record, name, size) if r.gflops is not None]
        return rows[0].gflops if rows else None

    def bandwidth(record, name):
        row = _bandwidth(record, name, shape)
        return row.gbs if row else None

    both = lambda f, names: {n: f(b, n) / f(a, n) for n in names if f(a, n) and f(b, n)}  # noqa: E731
    kernels = [r.kernel for r in a.transpose or [] if (r.rows, r.cols) == tuple(shape)]
    copy = both(bandwidth, ["copy_float4"])
    return {"peak": b.device.peak_gflops / a.device.peak_gflops, "copy": copy.get("copy_float4"),
            "sgemm": both(sgemm, a.ladder + ["cublas"]),
            "transpose": both(bandwidth, [k for k in kernels if k != "copy_float4"])}


def grid_blocks(name, size):
    """Blocks in a rung's grid at ``size`` = (M, N, K): ceil(M / BM) x ceil(N / BN), from its tile."""
    from gemm_lessons.model import counting

    BM, BN, _, _ = counting.RUNG_TILES[name]
    M, N, _ = size
    return -(-M // BM) * -(-N // BN)


def transpose_suite_markdown(suite, kernel="library"):
    """One generated paragraph on a recorded transpose suite: how ``kernel`` stood against sgeam,
    single calls and back-to-back, and which shapes stayed below 95% back-to-back."""
    s = results.transpose_suite_summary(suite, kernel)

    def shape(x):
        return "x".join(map(str, x))

    below = [(r["kernels"][kernel]["pct_sgeam"], r["shape"]) for r in suite["rows"]
             if r["kernels"].get(kernel, {}).get("correct") and r["kernels"][kernel]["pct_sgeam"] < 95]
    text = (f"Over {s['shapes']} shapes ({s['ran']} correct), `{kernel}` ran at a geometric mean of "
            f"{s['geomean_single']:.0f}% of sgeam's speed in single calls and {s['geomean_back_to_back']:.0f}% "
            f"back-to-back (recorded on {suite['device']}, {suite['date'][:10]}). ")
    big = results.transpose_suite_summary(suite, kernel, min_bytes=results.LARGE_TRANSPOSE_BYTES)
    if big.get("ran") and big["ran"] < s["ran"]:
        square = [r["copy_gbs"] for r in suite["rows"] if r["shape"] == [8192, 8192] and r.get("copy_gbs")]
        at_least = (f"; at the {square[0]:,.0f} GB/s of this suite's copy at 8192x8192, at least "
                    f"{results.LARGE_TRANSPOSE_BYTES / square[0] / 1e3:.1f} µs on the GPU" if square else "")
        text += (f"Over the {big['ran']} of them that move at least {results.LARGE_TRANSPOSE_BYTES // 2**20} MiB "
                 f"(read plus written{at_least}), where the kernels rather than the calls are likely compared: "
                 f"{big['geomean_single']:.0f}% in single calls, {big['geomean_back_to_back']:.0f}% back-to-back. ")
    if below:
        text += ("Below 95% back-to-back: " + ", ".join(f"{shape(x)} ({v:.0f}%)" for v, x in sorted(below, key=lambda b: b[1]))
                 + ".")
    else:
        text += "No shape stayed below 95% back-to-back."
    groups = {True: [], False: []}  # both sides multiples of 4 (16-byte accesses possible) or not
    for r in suite["rows"]:
        k = r["kernels"].get(kernel, {})
        if k.get("correct"):
            groups[r["shape"][0] % 4 == 0 and r["shape"][1] % 4 == 0].append(k["pct_sgeam"])
    for wide, what in ((True, "whose sides are multiples of 4"), (False, "with a side that is not")):
        if groups[wide]:
            text += (f" Back-to-back on the {len(groups[wide])} shapes {what}: {min(groups[wide]):.0f}% to "
                     f"{max(groups[wide]):.0f}% of sgeam.")
    return text


# ---- lesson 10: the leaderboard with its limiter, clock and power (facts; the lesson writes the sentences) ----

# The steps the limiter run timed and profiled at 4096^3, each a pair of TECHNIQUES (same run, same inputs)
MODEL_STEPS = [("naive_uncoalesced", "naive"), ("naive", "smem_tile"), ("smem_tile", "smem_tile16"),
               ("smem_tile", "reg1d"), ("reg1d", "reg2d"), ("reg2d", "vec"), ("vec", "vec_split"),
               ("vec_split", "dbuf_one_buffer"), ("dbuf_one_buffer", "dbuf"), ("dbuf", "warptile")]


def lesson_device():
    """The GPU lesson 10 reads: the one in use, or on the simulator the limiter record's GPU (the
    reference GPU when there is no limiter record)."""
    from gemm_lessons.core import backend

    if not backend.SIMULATOR:
        from gemm_lessons.measure.device import device_info

        return device_info().name
    from gemm_lessons.teaching import limiter_table

    try:
        return limiter_table.record()["device"]["name"]
    except FileNotFoundError:
        return results.REFERENCE_DEVICE


def lesson_record():
    """The bench record of ``lesson_device()`` (every rung and variant at every size, one run), or
    the reference GPU's when that device has none."""
    try:
        return results.load(lesson_device())
    except FileNotFoundError:
        return results.load()


def clock_power(names=None, size=(4096, 4096, 4096)):
    """The SM clock and power of each of ``names`` (default: the ladder and cuBLAS) in a sustained
    run, each kernel launched back to back for seconds (gemm_lessons.runs.power): measured now on a
    GPU, else the recorded run of ``lesson_device()``.  A dict: ``rows`` {kernel: row of
    runs.power}, ``source``, ``seconds`` (each kernel's run), or None when there is neither a GPU
    nor a record."""
    import datetime

    from gemm_lessons.core import backend
    from gemm_lessons.runs import power

    if not backend.SIMULATOR:
        from gemm_lessons.measure.device import device_info

        rows = power.measure(names, size, progress=None)
        return {"rows": {r["kernel"]: r for r in rows},
                "source": f"measured on {device_info().name}, {datetime.date.today().isoformat()}",
                "seconds": power.SECONDS}
    rec = power.load(lesson_device())
    if rec is None:
        return None
    return {"rows": {r["kernel"]: r for r in rec["rows"]},
            "source": f"recorded on {rec['device']['name']}, {rec['date'][:10]}",
            "seconds": rec.get("seconds", power.SECONDS)}


@dataclass(frozen=True)
class BoardRow:
    rung: str
    lesson: str
    tflops: float           # at the median time
    pct_cublas: float       # cuBLAS's time over this rung's, in %, same run (None without cuBLAS)
    pct_peak: float         # of the FP32 peak at the clock held while timed (the model's clock if not read)
    binding: str            # the model's binding ceiling
    busiest: str            # the profiler's busiest unit
    busiest_pct: float
    ratio: float            # measured / predicted
    clock_mhz: float = None  # sustained run (runs.power): SM clock (median) and watts (median), NVML
    clock_min_mhz: float = None
    timed_clock_mhz: float = None  # SM clock (median) while its time was taken (short bursts)
    watts: float = None
    events: tuple = ()      # NVML's reasons for holding the clock back (sw_power_cap, ...)


@dataclass
class Board:
    """Lesson 10's one table: every rung at 4096^3 with its limiter, clock and power."""
    rows: list
    source: str             # where the times come from
    power_source: str = None
    power_limit_w: float = None
    power_seconds: float = None  # how long the sustained run kept each kernel going

    def row(self, rung):
        return next(r for r in self.rows if r.rung == rung)

    def _repr_markdown_(self):
        from gemm_lessons.teaching.limiter_table import SHORT

        power = any(r.clock_mhz for r in self.rows)
        head = ["rung", "lesson", "TFLOPS", "% of cuBLAS", "% of FP32 peak", "binding ceiling (model)",
                "profiler's busiest unit",
                "measured / predicted"] + ([f"SM clock (MHz): timed / {self._sustained()}", "power (W)"] if power else [])
        body = []
        for r in self.rows:
            cells = [r.rung, r.lesson, f"{r.tflops:.2f}", "" if r.pct_cublas is None else f"{r.pct_cublas:.1f}%",
                     f"{r.pct_peak:.0f}%",
                     SHORT[r.binding], f"{SHORT.get(r.busiest, r.busiest)} ({r.busiest_pct:.0f}%)", f"{r.ratio:.2f}"]
            if power:
                cells += [("–" if r.timed_clock_mhz is None else f"{r.timed_clock_mhz:,.0f}") + " / "
                          + ("–" if r.clock_mhz is None else f"{r.clock_mhz:,.0f}"),
                          "–" if r.watts is None else f"{r.watts:.0f}" + (" (cap)" if "sw_power_cap" in r.events else "")]
            body.append(cells)
        note = (f"; clock and power {self._sustained()}, {self.power_source} (power cap "
                f"{self.power_limit_w:.0f} W)" if power else "")
        return (f"**SGEMM 4096^3**: times {self.source}{note}\n\n"
                + tables.markdown(head, body, "llrrrllr" + ("rr" if power else "")))

    def _sustained(self):
        return "sustained" + (f" ({self.power_seconds:g} s)" if self.power_seconds else "")

    def __repr__(self):
        return self._repr_markdown_()


def _flop(table):
    n = int(table.size.split("^")[0])
    return 2 * n ** 3


def board(why_table, measured=None, power=None):
    """The leaderboard of ``why_table`` (limiter_table.why over the rungs and cuBLAS), with the
    clock and power of ``clock_power()`` where it has the rung.  ``measured`` is the comparison
    whose times the why table used, for its label."""
    from gemm_lessons.teaching import limiter_table

    flop = _flop(why_table)
    cub = next((r for r in why_table.rows if r.rung == "cublas"), None)
    power_rows = (power or {}).get("rows", {})
    rec = limiter_table.record(why_table.device)
    recorded = {t["case"]: t.get("power") for t in rec["timings"]}
    machine = rec["model"]["machine"]
    rows = []
    for r in why_table.rows:
        p = (power_rows.get(r.rung) or {}).get("power") or {}
        timed = (next((x.power for x in getattr(measured, "rows", []) if x.kernel == r.rung), None)
                 if r.measured_here else recorded.get(r.case)) or {}
        lesson = ladder.SGEMM[r.rung].lesson if r.rung in ladder.SGEMM else (
            ladder.VARIANTS[r.rung].lesson if r.rung in ladder.VARIANTS else "")
        tflops = flop / (r.measured_ms * 1e-3) / 1e12
        clock = (timed.get("clock_mhz") or {}).get("median") or machine["clock_mhz"]
        peak = 2 * machine["fp32_lanes_per_sm"] * machine["sm_count"] * clock * 1e6 / 1e12
        rows.append(BoardRow(r.rung, lesson, tflops,
                             100 * cub.measured_ms / r.measured_ms if cub else None, 100 * tflops / peak,
                             r.binding, r.busiest,
                             r.busiest_pct, r.ratio, clock_mhz=(p.get("clock_mhz") or {}).get("median"),
                             clock_min_mhz=(p.get("clock_mhz") or {}).get("min"),
                             timed_clock_mhz=(timed.get("clock_mhz") or {}).get("median"),
                             watts=(p.get("power_w") or {}).get("median"), events=tuple(p.get("events") or ())))
    here = all(r.measured_here for r in why_table.rows)
    source = (getattr(measured, "source", "") if here and measured is not None
              else f"recorded on {why_table.device}, {why_table.date}, the limiter run")
    limits = [((power_rows.get(r.rung) or {}).get("power") or {}).get("power_limit_w") for r in why_table.rows]
    return Board(rows, source, (power or {}).get("source"), next((x for x in limits if x), None),
                 (power or {}).get("seconds"))


def issue_counts(why_table, rung):
    """(warp-instructions the rung issues, of them FFMA) at the why table's size, from the model's
    issue and FP32 ceilings: issue time x SMs x 4 per cycle x clock; FP32 time x SMs x 4 x clock
    (128 lanes = 4 warp-FFMAs per SM per cycle)."""
    from gemm_lessons.teaching import limiter_table

    machine = limiter_table.record(why_table.device)["model"]["machine"]
    per_ms = machine["sm_count"] * machine["clock_mhz"] * 1e3  # SM cycles per ms, all SMs
    row = why_table.row(rung)
    return (row.ceilings_ms["issue"] * per_ms * machine["issue_per_sm_cycle"],
            row.ceilings_ms["fp32"] * per_ms * machine["fp32_lanes_per_sm"] / 32)


@dataclass(frozen=True)
class Step:
    """One same-run step of the ladder, its speed-up split as the model sees it:
    speedup = model x stalls, model = predicted before / after (less work at the binding
    ceiling), stalls = (measured / predicted) before / after (less time the model does not see)."""
    change: str
    lesson: str
    before: str
    after: str
    speedup: float
    model: float
    stalls: float
    binding_before: str
    binding_after: str
    ms_before: float        # the before rung's binding ceiling, ms
    ms_after: float         # the after rung's binding ceiling, ms


def steps(why_table, pairs=MODEL_STEPS):
    """Step per pair of ``pairs`` whose two rungs the why table has (TECHNIQUES names the change)."""
    names = {(b, a): (what, lesson) for what, lesson, b, a in TECHNIQUES}
    have = {r.rung: r for r in why_table.rows}
    out = []
    for b, a in pairs:
        if b in have and a in have and (b, a) in names:
            x, y = have[b], have[a]
            out.append(Step(*names[(b, a)], b, a, x.measured_ms / y.measured_ms, x.predicted_ms / y.predicted_ms,
                            x.ratio / y.ratio, x.binding, y.binding, x.ceilings_ms[x.binding],
                            y.ceilings_ms[y.binding]))
    return out


def steps_markdown(rows, source, change=True):
    """The steps as a table: the change (with ``change=False`` only its lesson), its speed-up and
    the model's split of it."""
    from gemm_lessons.teaching.limiter_table import SHORT

    body = [[f"{s.lesson} · {s.change}" if change else s.lesson, f"{s.before} → {s.after}", f"{s.speedup:.2f}x", f"{s.model:.2f}x",
             f"{s.stalls:.2f}x", f"{SHORT[s.binding_before]} {s.ms_before:.3g} → {SHORT[s.binding_after]} {s.ms_after:.3g}"]
            for s in rows]
    return (f"**Each step at 4096^3**, {source}\n\n"
            + tables.markdown(["lesson · change" if change else "lesson", "from → to", "speed-up", "predicted time falls",
                               "fewer stalls (below 1: more)", "binding ceiling, ms"], body, "llrrrl"))


def effects_of(comparison):
    """technique_effects over the rows of one measure_step comparison (one run, one size)."""
    from types import SimpleNamespace

    return technique_effects(SimpleNamespace(sgemm=comparison.rows), comparison.size)
