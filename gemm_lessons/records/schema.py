"""The result records in results/, as dataclasses: what bench, tuning and tools/bank_truth.py
write, and what the lessons, plots and tables read (``row.gflops``, ``record.device.name``).

Each class is one JSON object, its fields the object's keys.  A field that is None is not
written (None means "not recorded": a refused kernel has no ``gflops``), except the fields a
class lists in KEEP_NONE, where None is a value (a check that was refused has ``passed: null``).
Keys a class does not know (a hand-added ``note``) are kept in ``extra`` and written back after
the known ones, so a file read and written again is the same JSON, byte for byte.

    BenchRecord   results/<device>.json         python -m gemm_lessons.runs.bench
      Device, CheckRow, SgemmRow, BandwidthRow (copies and transposes)
    TuningRecord  results/tuning-<device>.json  python -m gemm_lessons.runs.tuning
      Device, TuningRun, TuningRow
    BankTruth     results/banks-<device>.json   tools/bank_truth.py
      BankRow
    ShapesRecord  results/shapes-<device>.json  python -m gemm_lessons.runs.shapes
      Device, ShapeRow, OverheadRow
"""
import dataclasses
import json
import types
import typing
from dataclasses import dataclass, field


def _nested(tp):
    """(record class, whether the field holds a list of them), or (None, False) for plain JSON."""
    if isinstance(tp, types.UnionType):  # "X | None": the X
        tp = next(a for a in typing.get_args(tp) if a is not type(None))
    many = typing.get_origin(tp) is list
    inner = typing.get_args(tp)[0] if many else tp
    return (inner, many) if isinstance(inner, type) and issubclass(inner, Json) else (None, False)


@dataclass(kw_only=True, repr=False)
class Json:
    """A JSON object with typed fields (see the module doc); subclasses are kw_only dataclasses."""
    extra: dict = field(default_factory=dict)  # keys this code does not know, kept as they were

    KEEP_NONE = ()  # fields written even when None
    SORT_KEYS = False  # how the file is written: keys sorted, or in field order

    @classmethod
    def from_dict(cls, d):
        known, values = {f.name: f for f in dataclasses.fields(cls) if f.name != "extra"}, {}
        for key, value in d.items():
            if key in known:
                kind, many = _nested(known[key].type)
                if kind is not None and value is not None:
                    value = [kind.from_dict(v) for v in value] if many else kind.from_dict(value)
                values[key] = value
        return cls(**values, extra={k: v for k, v in d.items() if k not in known})

    def to_dict(self):
        out = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name == "extra" or (value is None and f.name not in self.KEEP_NONE):
                continue
            if isinstance(value, Json):
                value = value.to_dict()
            elif isinstance(value, list):
                value = [v.to_dict() if isinstance(v, Json) else v for v in value]
            out[f.name] = value
        return {**out, **self.extra}

    def to_json(self):
        return json.dumps(self.to_dict(), indent=1, sort_keys=self.SORT_KEYS) + "\n"

    @classmethod
    def read(cls, path):
        with open(path) as f:
            return cls.from_dict(json.load(f))

    def write(self, path):
        with open(path, "w") as f:
            f.write(self.to_json())
        return path

    def __repr__(self):  # only what was recorded, not twenty Nones
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in self.to_dict().items())})"


_record = dataclass(kw_only=True, repr=False)


@_record
class Device(Json):
    """The GPU, as gemm_lessons.measure.device.DeviceInfo describes it, with its peak as recorded."""
    name: str
    simulator: bool | None = None
    sm_count: int | None = None
    compute_capability: list | None = None
    clock_mhz: float | None = None
    fp32_lanes_per_sm: int | None = None
    memory_gib: float | None = None
    memory_clock_mhz: float | None = None
    memory_bus_bits: int | None = None
    peak_gflops: float | None = None
    memory_bandwidth_gbs: float | None = None

    @classmethod
    def from_info(cls, info):
        """From a gemm_lessons.measure.device.DeviceInfo (the machine we are on)."""
        return cls.from_dict(info.as_dict())

    @property
    def shared_bandwidth_gbs(self):
        from gemm_lessons.model.ceilings import shared_bandwidth_gbs

        return shared_bandwidth_gbs(self.sm_count, self.clock_mhz)


@_record
class Timed(Json):
    """What every timed row has: the kernel and time_gpu's statistics (milliseconds)."""
    kernel: str
    n: int | None = None  # samples
    batch: int | None = None  # launches per sample
    host_issue_ms: float | None = None
    host_bound: bool | None = None  # Python could not launch as fast as the GPU finished
    median_ms: float | None = None
    p10_ms: float | None = None
    p90_ms: float | None = None
    power: dict | None = None  # NVML while timed: SM clock, power, clock-event reasons (measure.power)


@_record
class SgemmRow(Timed):
    """One kernel at one M x N x K (``refused`` instead of timings when the kernel cannot run it)."""
    M: int
    N: int
    K: int
    gflops: float | None = None  # at the median time; gflops_p10 at the p90 time, and so on
    gflops_p10: float | None = None
    gflops_p90: float | None = None
    rel_error_vs_cublas: float | None = None
    correct: bool | None = None
    pct_cublas: float | None = None  # of cuBLAS at the same size, same run
    refused: str | None = None

    @property
    def size(self):
        return self.M, self.N, self.K


@_record
class BandwidthRow(Timed):
    """A copy or a transpose of a rows x cols matrix; GB/s count bytes read + written."""
    rows: int
    cols: int
    gbs: float | None = None
    gbs_p10: float | None = None
    gbs_p90: float | None = None
    correct: bool | None = None  # transposes only
    pct_sgeam: float | None = None  # transposes: of cuBLAS sgeam, same shape, same run
    pct_copy: float | None = None  # of the float4 copy, same shape, same run

    @property
    def shape(self):
        return self.rows, self.cols


@_record
class CheckRow(Json):
    """One correctness check: passed is None when the kernel refused the shape (see message)."""
    KEEP_NONE = ("passed",)
    kernel: str
    shape: list
    alpha: float | None = None  # SGEMM checks only
    beta: float | None = None
    passed: bool | None
    rel_error: float | None = None
    message: str | None = None


@_record
class BenchRecord(Json):
    """results/<device>.json: one run of ``python -m gemm_lessons.runs.bench``."""
    SORT_KEYS = True
    device: Device
    date: str
    versions: dict | None = None
    git_commit: str | None = None
    nvidia_smi_before: dict | None = None
    nvidia_smi_after: dict | None = None
    cublas_math_mode: str | None = None
    ladder: list | None = None  # rung names in ladder order
    variants: list | None = None
    command: str | None = None
    checks: list[CheckRow] | None = None
    sgemm: list[SgemmRow] | None = None
    bandwidth: list[BandwidthRow] | None = None
    transpose: list[BandwidthRow] | None = None
    transpose_checks: list[CheckRow] | None = None
    compiler: dict | None = None  # kernel name -> registers, local/shared bytes, SASS counts


@_record
class TuningRow(Json):
    """One TileConfig of the sweep (or cuBLAS's reference row, which has no config)."""
    config: dict | None = None  # the TileConfig's fields
    label: str
    threads: int | None = None
    invalid: str | None = None  # the rule it breaks; nothing else is recorded then
    compile_and_check_s: float | None = None
    correct: bool | None = None  # at the small check shape
    rel_error: float | None = None
    error: str | None = None
    registers: int | None = None
    local_bytes: int | None = None
    shared_bytes: int | None = None
    blocks_per_sm: int | None = None
    limited_by: str | None = None
    gflops: float | None = None
    gflops_p10: float | None = None
    gflops_p90: float | None = None
    correct_at_size: bool | None = None
    rel_error_vs_cublas: float | None = None
    pct_cublas: float | None = None
    cublas_gflops_same_run: float | None = None


@_record
class TuningRun(Json):
    """One invocation (one shard) of ``python -m gemm_lessons.runs.tuning``."""
    date: str
    git_commit: str | None = None
    shard: str | None = None
    seconds: int | None = None
    versions: dict | None = None


@_record
class TuningRecord(Json):
    """results/tuning-<device>.json: the tile sweep, merged over its runs."""
    device: Device
    size: list
    runs: list[TuningRun]
    rows: list[TuningRow]
    date: str | None = None


@_record
class BankRow(Json):
    """One kernel's shared-memory counters: the profiler's (ncu) and the tracer's, by metric key."""
    case: str
    problem: list
    blocks: int
    gpu_kernel: str | None = None
    tracer_merged: list | None = None
    ncu: dict
    tracer: dict


@_record
class BankTruth(Json):
    """results/banks-<device>.json: ncu against the bank tracer (tools/bank_truth.py)."""
    device: str  # the GPU's name
    date: str
    metrics: dict | None = None  # metric key -> ncu metric name
    rows: list[BankRow]
    how: str | None = None


@_record
class Stats(Json):
    """Milliseconds: median and the 10th and 90th percentiles of ``n`` samples."""
    median_ms: float
    p10_ms: float
    p90_ms: float
    n: int
    batch: int | None = None  # back-to-back: calls per sample


@_record
class ShapeRow(Json):
    """gl.sgemm and cuBLAS at one M x N x K: single calls (CUDA events around each call, as a
    user calls it) and back-to-back (gemm_lessons.measure.timing.time_gpu); ``error`` when it failed."""
    shape: list  # [M, N, K]
    group: str  # "square", "odd", "skinny", ...
    plan: str | None = None  # what gl.sgemm launched (gemm_lessons.library.dispatch)
    correct: bool | None = None
    rel_error: float | None = None  # relative Frobenius error against float64
    checked: str | None = None  # "full" or "sampled rows x columns"
    single_gl: Stats | None = None
    single_cublas: Stats | None = None
    back_to_back_gl: Stats | None = None
    back_to_back_cublas: Stats | None = None
    pct_cublas_single: float | None = None  # cuBLAS median time / gl.sgemm median time
    pct_cublas_back_to_back: float | None = None
    plans_ms: dict | None = None  # every candidate plan: back-to-back median ms
    best_plan: str | None = None  # the fastest of plans_ms
    error: str | None = None


@_record
class OverheadRow(Json):
    """What one call costs the host: ``issue_us`` per call when calls are issued back to back
    (checks and launch: the GPU finishes each call before the next arrives at these sizes),
    ``sync_us`` per call with a synchronize after each, ``event_us`` between CUDA events
    around one call: medians, and each one's 10th and 90th percentiles in ``*_p10_us``,
    ``*_p90_us`` (records before 2026-11-23 have only the medians)."""
    caller: str
    size: int  # square M = N = K
    issue_us: float | None = None
    sync_us: float | None = None
    event_us: float | None = None
    error: str | None = None
    issue_p10_us: float | None = None
    issue_p90_us: float | None = None
    sync_p10_us: float | None = None
    sync_p90_us: float | None = None
    event_p10_us: float | None = None
    event_p90_us: float | None = None


@_record
class ShapesRecord(Json):
    """results/shapes-<device>.json: one run of ``python -m gemm_lessons.runs.shapes``."""
    device: Device
    date: str
    command: str | None = None
    versions: dict | None = None
    git_commit: str | None = None
    timed: bool  # False on the simulator: nothing was timed (see note)
    note: str | None = None
    launch: dict | None = None  # the Launchers: fast or plain, and why
    calibration: list | None = None  # per kernel/tiles: GFLOPS at a square, blocks per SM, resources
    model: dict | None = None  # the gemm_lessons.library.dispatch.Model the run measured (read back by dispatch)
    overhead: list[OverheadRow] | None = None
    rows: list[ShapeRow] | None = None
    summary: dict | None = None
    seconds: dict | None = None
