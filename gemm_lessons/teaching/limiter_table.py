"""The "Why" step of a lesson: the limiter model's ceilings for a few rungs, the binding one, the
prediction against the measurement, and the profiler's busiest unit, as one small table.

The facts come from the limiter record (``python -m gemm_lessons.runs.limiter``, results/limiter-
<device>.json): one run that timed every rung with clock and power, profiled one launch of each
(which counted its instructions, shared-memory wavefronts and bytes) and applied the model
(gemm_lessons.model.limiter).  Given this notebook's own measurement (``measured``, a
``measure_step.Comparison`` or ``Table`` taken on the record's GPU), the table sets the prediction
against that instead.  The lesson writes the sentences; this module returns numbers.
"""
from dataclasses import dataclass

from gemm_lessons.core import tables
from gemm_lessons.model.limiter import BUSY, NAMES, WHAT

SHORT = {"fp32": "FP32", "issue": "issue", "shared": "shared", "l2": "L2", "dram": "DRAM", "latency": "latency"}


def record(device=None):
    """The limiter record of ``device`` (default: the GPU in use if it has one, else the newest
    record), as a dict; FileNotFoundError with what to run when there is none."""
    import json

    from gemm_lessons.records import results

    paths = results.files("limiter")
    if device is None:
        from gemm_lessons.core import backend
        from gemm_lessons.measure.device import device_info

        here = None if backend.SIMULATOR else results.path_for("limiter", device_info().name)
        path = here if here in paths else (paths[-1] if paths else None)
    else:
        path = results.path_for("limiter", device)
        path = path if path in paths else None
    if path is None:
        raise FileNotFoundError("no limiter record in results/: on a GPU, run `bash tools/gpu_run.sh limiter` "
                                "(python -m gemm_lessons.runs.limiter measure, run under ncu, predict)")
    with open(path) as f:
        rec = json.load(f)
    if "model" not in rec:
        raise FileNotFoundError(f"{path} has no model yet: run `python -m gemm_lessons.runs.limiter predict`")
    return rec


@dataclass(frozen=True)
class Row:
    case: str                 # "sgemm reg1d", "transpose wide", "copy"
    ceilings_ms: dict         # ceiling name -> the time it alone would take, ms
    binding: str              # the model's binding ceiling
    tail: float               # the last wave's stretch (>= 1)
    predicted_ms: float       # binding ceiling x tail
    measured_ms: float
    measured_here: bool       # True: this notebook's run; False: the limiter run
    busiest: str              # the profiler's busiest unit ("latency": none at least BUSY % busy)
    busiest_pct: float        # that unit's % of peak (the highest of all, for "latency")
    utilization_pct: dict     # ceiling name -> the profiler's % of peak for its unit

    @property
    def rung(self):
        return self.case.partition(" ")[2] or self.case

    @property
    def ratio(self):
        """Measured over predicted: 1 is the model exactly; above 1, time the model does not see."""
        return self.measured_ms / self.predicted_ms

    @property
    def agrees(self):
        """The model and the profiler name the same limiter."""
        return self.binding == self.busiest


@dataclass
class LimiterTable:
    rows: list
    device: str
    date: str
    clock_mhz: float
    size: str                 # "4096^3" or "8192^2"
    decimals: int = None      # None: 3 significant figures; 2: milliseconds to 2 decimals (3 significant below 1)

    def row(self, rung):
        return next(r for r in self.rows if r.rung == rung or r.case == rung)

    def _ms(self, ms):
        if self.decimals is None or ms < 1:
            return f"{ms:.3g}" if self.decimals is None else f"{ms:#.3g}"
        return f"{ms:.{self.decimals}f}"

    def _repr_markdown_(self):
        names = [n for n in NAMES if any(n in r.ceilings_ms for r in self.rows)]
        head = ["rung"] + [SHORT[n] for n in names] + ["binding", "predicted", "measured", "measured / predicted",
                                                         "profiler's busiest unit"]
        body = []
        for r in self.rows:
            cells = [r.rung]
            for n in names:
                ms = r.ceilings_ms.get(n)
                cell = "" if ms is None else self._ms(ms)
                cells.append(f"**{cell}**" if n == r.binding else cell)
            cells += [SHORT[r.binding], self._ms(r.predicted_ms), self._ms(r.measured_ms) + ("" if r.measured_here else "*"),
                      f"{r.ratio:.2f}", (f"{SHORT[r.busiest]} ({r.busiest_pct:.0f}%)" if r.busiest != "latency"
                       else f"none above {BUSY:.0f}% (latency; highest {r.busiest_pct:.0f}%)")]
            body.append(cells)
        note = ("" if all(r.measured_here for r in self.rows) else
                " \\* measured in the limiter run (this notebook did not time that rung on this GPU).")
        if "latency" not in names:
            note += " Latency is modelled for the memory-bound kernels (lesson 09)."
        return (f"**The shortest time each resource allows, ms, at {self.size}** (model: {self.device}, SM clock "
                f"held {self.clock_mhz:,.0f} MHz; bold: the binding ceiling; predicted = binding x the last "
                f"wave's stretch).{note}\n\n"
                + tables.markdown(head, body, "l" + "r" * (len(head) - 2) + "l"))

    def __repr__(self):
        return self._repr_markdown_()


SIZES = {"sgemm": (4096, 4096, 4096), "transpose": (8192, 8192)}  # the limiter record's sizes (why's table)


def _record_size(kind):
    """The limiter record's size for a case of ``kind`` ("sgemm"; "transpose" and "copy": 8192^2)."""
    return SIZES["sgemm" if kind == "sgemm" else "transpose"]


def _at_size(row, size):
    """Whether a timed row is at the limiter record's ``size`` (an SGEMM row's M, N, K, a bandwidth
    row's rows, cols)."""
    shape = (row.M, row.N, row.K) if hasattr(row, "K") else (getattr(row, "rows", None), getattr(row, "cols", None))
    return shape == size


def _measured_ms(measured, case, device):
    """This notebook's median for ``case``, in ms, when ``measured`` was taken on ``device`` at the
    limiter record's size (a sweep's other sizes are not the table's)."""
    if measured is None:
        return None
    source = getattr(measured, "source", "")
    if device not in source or "recorded" in source:
        return None
    kind, _, name = case.partition(" ")
    name = name or kind
    names = {name, "copy_float4"} if name == "copy" else {name}  # the copy is "copy_float4" in the bench's tables
    rows = getattr(measured, "rows", [])
    row = next((r for r in rows if r.kernel in names and _at_size(r, _record_size(kind))), None)
    if row is None:
        return None
    if hasattr(row, "gflops"):
        return 2 * row.M * row.N * row.K / (row.gflops * 1e9) * 1e3
    return getattr(row, "median_ms", None)


def machine(device=None):
    """The limiter record's machine (a gemm_lessons.model.limiter.Machine: SMs, the clock held, the
    copy rate, the DRAM latency, ...)."""
    from gemm_lessons.runs.limiter import machine_of

    return machine_of(record(device))


def work(rung, kind="sgemm", device=None):
    """The model's Work of one rung (a gemm_lessons.model.limiter.Work: instructions, wavefronts,
    bytes, blocks per SM, bytes of loads each SM keeps in flight), from the limiter run's profile
    (results/ncu-limiter-<device>.csv); ``rung`` and ``kind`` as in ``why``."""
    from gemm_lessons.records import results
    from gemm_lessons.runs.limiter import cases, work_of

    rec = record(device)
    case = rung if rung == "copy" else f"{kind} {rung}"
    launches = dict(zip([c for c, _, _ in cases()],
                        results.ncu_launches(results.path_for("ncu-limiter", rec["device"]["name"]))))
    if case not in launches:
        raise KeyError(f"the limiter profile has no case {case!r}; it has {sorted(launches)}")
    return work_of(case, launches[case])


def per_warp_fma(rung, device=None):
    """What the profiler counted for one warp-FMA (an FMA instruction of a warp: 32 FMAs) of the
    SGEMM ``rung`` in the limiter run (``counts`` divided by its warp-FFMAs): {"issue":
    warp-instructions issued, "shared": shared-memory wavefronts} per warp-FMA."""
    n = counts(rung, device=device)
    return {"issue": n["warp_instructions"] / n["warp_ffma"], "shared": n["shared_wavefronts"] / n["warp_ffma"]}


def why(rungs, kind="sgemm", measured=None, device=None, decimals=None):
    """The limiter table of ``rungs`` (SGEMM rungs at 4096^3, or with ``kind="transpose"`` the
    transposes at 8192^2; "copy" is the device copy, "cublas"/"cublas_sgeam" the library).
    ``decimals=2`` prints milliseconds to 2 decimals (2.90, not 2.9; below 1 ms, 3 significant
    figures: 0.290); the default prints 3 significant figures."""
    rec = record(device)
    cases = {c["case"]: c for c in rec["model"]["cases"]}
    rows = []
    for rung in rungs:
        case = rung if rung == "copy" else f"{kind} {rung}"
        if case not in cases:
            raise KeyError(f"the limiter record has no case {case!r}; it has {sorted(cases)}")
        c = cases[case]
        here = _measured_ms(measured, case, rec["device"]["name"])
        util = c["profiler_utilization_pct"]
        busiest_pct = util[c["profiler_busiest"]] if c["profiler_busiest"] in util else max(util.values())
        rows.append(Row(case, c["ceilings_ms"], c["binding"], c["tail"], c["predicted_ms"],
                        here if here is not None else c["measured_ms"], here is not None,
                        c["profiler_busiest"], busiest_pct, util))
    sides = _record_size(kind)
    size = f"{sides[0]}^{len(sides)}"  # "4096^3", "8192^2"
    return LimiterTable(rows, rec["device"]["name"], rec["date"][:10], rec["model"]["machine"]["clock_mhz"], size,
                        decimals)


def counts(rung, kind="sgemm", device=None):
    """What the limiter run's profiler counted for one launch of ``rung`` (4096^3 for an SGEMM):
    ``warp_ffma`` (FFMA instructions of whole warps: thread FFMAs / 32), ``warp_instructions``
    (every warp-level instruction issued) and ``shared_wavefronts``, each read back from its ceiling
    (the count over its rate at the record's clock), and the SM's rates per cycle: ``ffma_per_cycle``
    (warp-FFMAs: FP32 lanes / 32), ``issue_per_cycle``, ``wavefronts_per_cycle``."""
    rec = record(device)
    m = rec["model"]["machine"]
    case = rung if rung == "copy" else f"{kind} {rung}"
    c = next((c for c in rec["model"]["cases"] if c["case"] == case), None)
    if c is None:
        raise KeyError(f"the limiter record has no case {case!r}")
    cycles = {name: ms * 1e-3 * m["clock_mhz"] * 1e6 * m["sm_count"] for name, ms in c["ceilings_ms"].items()}
    rates = {"ffma_per_cycle": m["fp32_lanes_per_sm"] / 32, "issue_per_cycle": m["issue_per_sm_cycle"],
             "wavefronts_per_cycle": m["shared_wavefronts_per_sm_cycle"]}
    return {"warp_ffma": cycles["fp32"] * rates["ffma_per_cycle"],
            "warp_instructions": cycles["issue"] * rates["issue_per_cycle"],
            "shared_wavefronts": cycles["shared"] * rates["wavefronts_per_cycle"], **rates}
