"""The "Measure" step of every lesson: time kernels next to cuBLAS, or show recorded numbers.

On a GPU, ``compare`` times each kernel and cuBLAS in the same process on the same inputs,
checks every result against cuBLAS, and returns a table.  On the simulator nothing is timed:
the table shows the recorded GPU results for the same kernels and size, labelled with the
device and date they were measured on.
"""
import datetime
from dataclasses import dataclass, field, replace

from gemm_lessons.core import backend, tables
from gemm_lessons.measure import rung_timing, provenance
from gemm_lessons.records import results
from gemm_lessons.measure.device import device_info
from gemm_lessons.records.schema import BandwidthRow, BenchRecord, Device, SgemmRow


def _today():
    return datetime.date.today().isoformat()


def _name(row):
    """The kernel's name, flagged host-bound where issuing a call took the host at least 80% of the
    GPU's time per call (timing.Timing.host_bound), with both times: the GPU may then have waited
    for the host between calls.  The label says what was measured, not why the host was slow
    (Python's launch overhead for a kernel, the driver's call for cudaMemcpy)."""
    if not row.host_bound:
        return row.kernel
    if getattr(row, "host_issue_ms", None) and getattr(row, "median_ms", None):
        return (f"{row.kernel} (host-bound: the host took {row.host_issue_ms * 1e3:,.0f} µs to issue a call, "
                f"the GPU {row.median_ms * 1e3:,.0f} µs to run it)")
    return row.kernel + " (host-bound: the host took about as long to issue a call as the GPU to run it)"


def _clock_held(row):
    """The median SM clock NVML read while ``row`` was timed (None where it was not sampled)."""
    clock = (getattr(row, "power", None) or {}).get("clock_mhz") or {}
    return clock.get("median") if isinstance(clock, dict) else clock


@dataclass
class Comparison:
    size: tuple
    rows: list = field(default_factory=list)  # records.SgemmRow
    source: str = ""  # "measured on ..." or "recorded on ..."
    peak_gflops: float = None  # FP32 peak of the device the numbers come from, at its rated clock
    rated_clock_mhz: float = None  # the clock that peak assumes

    def gflops(self, kernel):
        return next((r.gflops for r in self.rows if r.kernel == kernel), None)

    def speedup(self, kernel, baseline):
        """How many times faster ``kernel`` ran than ``baseline`` (nan if either is missing)."""
        a, b = self.gflops(kernel), self.gflops(baseline)
        return a / b if a and b else float("nan")

    def _repr_markdown_(self):
        M, N, K = self.size
        peak = self.peak_gflops
        clocks = [_clock_held(r) for r in self.rows]
        held = any(clocks)  # measured now, with NVML: the peak at the clock each kernel held
        rows = []
        for r, clock in zip(self.rows, clocks):
            at = peak * clock / self.rated_clock_mhz if clock and self.rated_clock_mhz and peak else peak
            rows.append([_name(r), f"{r.gflops / 1e3:.2f}", f"{r.gflops_p10 / 1e3:.2f}-{r.gflops_p90 / 1e3:.2f}",
                         f"{r.pct_cublas:.1f}%" if r.pct_cublas is not None else "",
                         f"{100 * r.gflops / at:.1f}%" if at else ""] + ([f"{clock:,.0f}" if clock else ""] if held else []))
        if not rows:
            rows = [["(no recorded results for these kernels at this size)", "", "", "", ""]]
        head = ["kernel", "TFLOPS (median)", "p10-p90", "% of cuBLAS",
                "% of FP32 peak at the clock held" if held else "% of FP32 peak"] + (["SM clock held (MHz)"] if held else [])
        where = "this run" if self.source.startswith("measured") else self.source
        return f"**SGEMM {M}x{N}x{K}**, {where}\n\n" + tables.markdown(head, rows, "l" + "r" * (len(head) - 1))

    def __repr__(self):
        return self._repr_markdown_()


def compare(kernels, size=(4096, 4096, 4096), repeats=20, progress=True, record=None):
    """Time ``kernels`` (name -> rung) and cuBLAS at ``size``; recorded numbers on the simulator.
    A kernel whose result differs from cuBLAS's is refused, not timed into the table."""
    if backend.SIMULATOR:
        return recorded(list(kernels) + ["cublas"], size, record)
    rows = rung_timing.time_sgemm(kernels, [tuple(size)], repeats, progress)
    for r in rows:
        if r.refused is not None:
            raise ValueError(f"{r.kernel} cannot run at {size}: {r.refused}")
    wrong = [r.kernel for r in rows if not r.correct]
    if wrong:
        raise AssertionError(f"{', '.join(wrong)} gave a wrong result at {size} (against cuBLAS): "
                             "fix it before timing it.")
    return Comparison(tuple(size), rows[1:] + rows[:1],  # cuBLAS last, as the yardstick
                      source=f"measured on {device_info().name}, {_today()}",
                      peak_gflops=device_info().peak_gflops, rated_clock_mhz=device_info().clock_mhz)


def recorded(kernels, size=(4096, 4096, 4096), record=None):
    """The recorded results for ``kernels`` at ``size`` (newest results file by default)."""
    record = record or results.load()
    rows = [r for name in kernels for r in results.sgemm_rows(record, name, size)]
    where = f" ({backend.not_measured_why()})" if backend.SIMULATOR else " (from results/)"
    return Comparison(tuple(size), rows,
                      source=f"recorded on {results.label(record)}{where}",
                      peak_gflops=record.device.peak_gflops)


def session_record(sgemm=(), bandwidth=()):
    """Numbers measured in this session, as a bench record, for the same plots."""
    return BenchRecord(device=Device.from_info(device_info()), date=provenance.now(),
                       sgemm=list(sgemm), bandwidth=list(bandwidth), ladder=[])


@dataclass
class Table:
    """Rows of measurements with the record they belong to (measured now, or recorded)."""
    title: str
    rows: list  # records.SgemmRow or records.BandwidthRow
    record: BenchRecord
    measured_now: bool

    @property
    def source(self):
        how = "measured" if self.measured_now else f"recorded ({backend.not_measured_why()})"
        return f"{how} on {results.label(self.record)}"

    def gbs(self, kernel):
        return next((r.gbs for r in self.rows if r.kernel == kernel), float("nan"))

    def __repr__(self):  # short: the record behind a recorded table holds every run's rows
        return f"<Table {self.title!r}: {len(self.rows)} rows, {self.source}>"

    def _repr_markdown_(self):
        rows = self.rows
        if not rows:
            return f"**{self.title}**: no rows"
        if isinstance(rows[0], SgemmRow):
            head = ["kernel", "M x N x K", "TFLOPS (median)", "p10-p90"]
            body = [[_name(r), f"{r.M}x{r.N}x{r.K}", f"{r.gflops / 1e3:.2f}",
                     f"{r.gflops_p10 / 1e3:.2f}-{r.gflops_p90 / 1e3:.2f}"] for r in rows]
        elif rows[0].pct_sgeam is not None:
            head = ["kernel", "size", "GB/s (median)", "p10-p90", "% of cuBLAS sgeam", "% of copy"]
            body = [[_name(r), f"{r.rows}x{r.cols}", f"{r.gbs:,.0f}", f"{r.gbs_p10:,.0f}-{r.gbs_p90:,.0f}",
                     f"{r.pct_sgeam:.1f}%", f"{r.pct_copy:.1f}%"] for r in rows]
        else:
            head = ["copy", "size", "GB/s (median)", "p10-p90"]
            body = [[_name(r), f"{r.rows}x{r.cols}", f"{r.gbs:,.0f}", f"{r.gbs_p10:,.0f}-{r.gbs_p90:,.0f}"]
                    for r in rows]
        where = "this run" if self.measured_now else self.source
        return f"**{self.title}**, {where}\n\n" + tables.markdown(head, body, "ll" + "r" * (len(head) - 2))


def copy_bandwidth(shape=(8192, 8192), repeats=30):
    """Device-to-device copy bandwidth (bytes read + written): the roofline's slanted ceiling."""
    if backend.SIMULATOR:
        rec = results.load()
        return Table("Copy bandwidth", rec.bandwidth, rec, False)
    rows = rung_timing.time_bandwidth(shape, repeats)
    return Table("Copy bandwidth", rows, session_record(bandwidth=rows), True)


def cublas_sweep(sizes=(1024, 2048, 4096, 8192), repeats=20, progress=True):
    """cuBLAS SGEMM at square sizes (recorded numbers on the simulator)."""
    if backend.SIMULATOR:
        rec = results.load()
        rows = [r for r in results.sgemm_rows(rec, "cublas") if r.M == r.N == r.K and r.M in sizes]
        return Table("cuBLAS SGEMM", sorted(rows, key=lambda r: r.M), rec, False)
    rows = rung_timing.time_sgemm({}, [(s, s, s) for s in sizes], repeats, progress)
    return Table("cuBLAS SGEMM", rows, session_record(sgemm=rows), True)


def merge(*tables):
    """One record holding the rows of several tables (for the roofline)."""
    rows = [r for t in tables for r in t.rows]
    return replace(tables[0].record, sgemm=[r for r in rows if isinstance(r, SgemmRow) and r.gflops is not None],
                   bandwidth=[r for r in rows if isinstance(r, BandwidthRow)])


def compare_transpose(kernels, shape=(8192, 8192), repeats=30, progress=True):
    """Time transpose kernels (name -> rung), cuBLAS sgeam and the float4 copy at ``shape``;
    recorded numbers on the simulator.  Bandwidth counts bytes read + written."""
    if backend.SIMULATOR:
        rec = results.load()
        rows = [r for r in rec.transpose or [] if r.shape == tuple(shape)
                and r.kernel in list(kernels) + ["cublas_sgeam", "copy_float4"]]
        return Table(f"Transpose {shape[0]}x{shape[1]}", rows, rec, False)
    rows = rung_timing.time_transpose([tuple(shape)], repeats, progress, kernels=kernels)
    wrong = [r.kernel for r in rows if r.correct is False]
    if wrong:
        raise AssertionError(f"{', '.join(wrong)} do(es) not transpose correctly at {shape}: fix before timing.")
    return Table(f"Transpose {shape[0]}x{shape[1]}", rows, session_record(bandwidth=rows), True)
