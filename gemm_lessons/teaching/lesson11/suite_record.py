"""The shape suite's record and what every part of lesson 11 reads from it.

``python -m gemm_lessons.runs.shapes`` writes results/shapes-<device>.json (records.ShapesRecord):
the dispatch model's calibration, the per-call cost of each way to call a kernel, and every shape
of its suite timed against cuBLAS, single calls and back to back, with every candidate plan timed
on the smaller ones.  Here: the lesson's three shapes, the record, a row by shape, the record's
label and command, the dispatch model it measured, and two small formulas (``is_wide``,
``tflops``).
"""

from gemm_lessons.library import dispatch
from gemm_lessons.records import results


REFERENCE_SHAPE = (4096, 4096, 4096)  # the aligned square the odd shape is compared with


ODD_SHAPE = (4095, 4097, 4093)  # the same work with nothing a multiple of 4


SKINNY_SHAPE = (64, 8192, 8192)  # a small C with a long K: split-K's case


LOW_PCT = 90.0  # "below 90% of cuBLAS": the shapes the lesson names


HOST_BOUND = 0.8  # as gemm_lessons.measure.timing: the host took >= 80% of the GPU's time per call


def load(device=None):
    """The shape suite's record of ``device``; None: results.COURSE_DEVICE's (the GPU of the current
    round's records), else results.REFERENCE_DEVICE's."""
    path = results.path_for("shapes", device) if device else results.course_path("shapes")
    return results.read(path)


def label(rec):
    return results.label(rec)


def command(rec):
    """The command that made the record, a directory given to --out shown as DIR (a path on the
    machine that ran it means nothing to a reader)."""
    return results.shown_command(rec)


def shape_name(shape):
    return "x".join(str(int(v)) for v in shape)


def row(rec, shape):
    """The ShapeRow of ``shape`` (M, N, K), or None."""
    return next((r for r in rec.rows or [] if tuple(r.shape) == tuple(shape)), None)


def recorded_model(rec):
    """The dispatch.Model the record measured (what gl.sgemm uses on that GPU)."""
    return dispatch.Model.from_dict(rec.model) if rec.model else dispatch.Model()


def is_wide(shape):
    """Whether the wide kernel can run ``shape`` on C-contiguous, freshly allocated arrays."""
    M, N, K = shape
    return not (K % 4 or N % 4)


def tflops(shape, ms):
    M, N, K = shape
    return 2.0 * M * N * K / (ms * 1e-3) / 1e12


def calibration(rec, plan):
    """The calibration row (a dict) of ``plan`` ("wide 128x128", ...), or None."""
    return next((c for c in rec.calibration or [] if c.get("plan") == str(plan)), None)


def _probe_row(kind, shape, device):
    """(experiments/shape_classes' record of ``kind`` on ``device``, its row at ``shape`` or None)."""
    rec = results.experiment_record("shape_classes", kind, device=device or results.COURSE_DEVICE)
    return rec, next((r for r in (rec or {}).get("rows", []) if tuple(r["shape"]) == tuple(shape)), None)


def _median_ms(row, name):
    """The median back-to-back time of the runs named ``name`` in a probe's ``row``."""
    import statistics

    return statistics.median(r["back_to_back_ms"] for r in row["runs"] if r["name"] == name)


def _provenance(rec):
    return {"device": rec["device"], "date": rec["date"][:10], "commit": str(rec["git_commit"])[:7]}


def store_cost(shape=ODD_SHAPE, device=None):
    """What writing C one float at a time costs the padded plan's kernel at ``shape``, from
    experiments/shape_classes' epilogue probe (one run): {"device", "date", "commit", "one_float_ms",
    "wide_ms"}: back-to-back medians of that kernel (warptile's ragged_c) and of the wide kernel
    (16-byte stores) on the problem rounded up to multiples of 4, each the median of its runs in
    the probe; None without a record or without that shape."""
    rec, row = _probe_row("epilogue", shape, device)
    if row is None:
        return None
    return {**_provenance(rec), "one_float_ms": _median_ms(row, "scalar"), "wide_ms": _median_ms(row, "wide")}


COPY_SHAPE = (4096, 50257, 768)  # where experiments/shape_classes times the copy kernel alone


def pad_copy_rate(device=None):
    """The padded plan's copy kernel (kernels/library/pad_copy.py) copying B at COPY_SHAPE, timed
    alone back to back in experiments/shape_classes' padded-parts probe (the run named "pad_copy B"):
    {"gbs": floats read and written x 4 bytes / its median time, "ms", "device", "date", "commit"};
    None without the record."""
    rec, row = _probe_row("padded_parts", COPY_SHAPE, device)
    if row is None:
        return None
    ms = _median_ms(row, "pad_copy B")
    return {"gbs": row["copy_B_bytes"] / (ms * 1e-3) / 1e9, "ms": ms, **_provenance(rec)}


def pad_copies(shape=ODD_SHAPE, device=None):
    """The padded plan's copies of A and B at ``shape``, each timed alone back to back in
    experiments/shape_classes' padded-parts probe (the runs named "pad_copy A" and "pad_copy B"):
    {"ms": the sum of their medians, "device", "date", "commit"}; None without the record or without
    both copies at that shape."""
    names = ("pad_copy A", "pad_copy B")
    rec, row = _probe_row("padded_parts", shape, device)
    if row is None or not all(any(r["name"] == name for r in row["runs"]) for name in names):
        return None
    return {"ms": sum(_median_ms(row, name) for name in names), **_provenance(rec)}


def issue_profile(device=None):
    """The any-shape and wide 128x128 kernels at 4096^3 under Nsight Compute (experiments/shape_classes,
    ``variants_probe --profile``, whose first and fifth launches they are): {"any_shape": ..., "wide": ...},
    each {"per_ffma": warp instructions issued per warp FFMA, "issue_pct": % of active cycles an
    SM sub-partition issued one, "ms"}; None without the record."""
    rec = results.ncu_record(results.experiment("shape_classes", "ncu_variants", device or results.COURSE_DEVICE))
    if rec is None:
        return None
    launches = rec[2]
    out = {}
    for name, launch in (("any_shape", launches[0]), ("wide", launches[4])):
        if launch["launch__grid_size"] != 1024:
            raise ValueError(f"{name}: launch of {launch['launch__grid_size']:g} blocks in the profile, not the "
                             "1,024 of 128 x 128 tiles at 4096^3 (variants_probe's launch order changed?)")
        out[name] = {"per_ffma": launch["smsp__inst_executed.sum"]
                     / (launch["smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"] / 32),
                     "issue_pct": launch["smsp__issue_active.avg.pct_of_peak_sustained_active"],
                     "ms": launch["gpu__time_duration.sum"] / 1e6}
    return out


def main_loops():
    """The any-shape and wide 128x128 kernels' main loops compiled offline for sm_90
    (experiments/shape_classes/sass_loop.py): {"date", "versions", "any_shape": groups, "wide": groups},
    groups {"FFMA", "LDS", "STS", "LDG", "spill", "other"} -> instructions per loop (1,024 FFMAs); None
    without the record."""
    rec = results.experiment_record("shape_classes", "sass")
    if rec is None:
        return None
    return {"date": rec["date"][:10], "versions": rec["versions"],
            **{k.split()[0]: v["groups"] for k, v in rec["kernels"].items()}}
