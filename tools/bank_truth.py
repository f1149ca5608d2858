"""Bank conflicts: the tracer's count (simulator) against the profiler's (ncu, on a GPU).

    # on the GPU machine (one launch per kernel, in cases() order):
    ncu --clock-control none --csv --metrics $(python3 tools/bank_truth.py metrics) \\
        python3 tools/bank_truth.py run > ncu.csv
    # here, on the simulator: trace one block of each case, scale by the grid, compare
    GEMM_LESSONS_SIMULATOR=1 python tools/bank_truth.py table ncu.csv ["NVIDIA H100 80GB HBM3"]
writes results/banks-<device>.json, which notebook 06 shows (the CSV defaults to the one kept in
results/, results.path_for("ncu-banks", device)).  ``table`` matches the CSV's launches to the
cases in order; a CSV from before the float64 cases were added (they come last) has fewer
launches: the cases it lacks are skipped, with a note.

``run`` takes optional words after it: only the cases whose name contains one of them run (a
smoke check on the simulator, where the full-size transposes would take hours:
``GEMM_LESSONS_SIMULATOR=1 python tools/bank_truth.py run float64``).  Profile all of them.
"""
import csv
import functools
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if sys.argv[1:2] == ["table"]:  # the tracer runs on the simulator; decided when gemm_lessons is imported
    os.environ.setdefault("GEMM_LESSONS_SIMULATOR", "1")
import gemm_lessons  # noqa: E402,F401  (chooses GPU or simulator before numba.cuda is imported)
from numba import cuda  # noqa: E402

from gemm_lessons.kernels import ladder  # noqa: E402
from gemm_lessons.measure import provenance  # noqa: E402
from gemm_lessons.records import results  # noqa: E402
from gemm_lessons.instruments import shared_tracer  # noqa: E402
from gemm_lessons.records.schema import BankRow, BankTruth  # noqa: E402

METRICS = {
    "ld_instructions": "smsp__inst_executed_op_shared_ld.sum",
    "st_instructions": "smsp__inst_executed_op_shared_st.sum",
    "ld_wavefronts": "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "st_wavefronts": "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
    "ld_conflicts": "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "st_conflicts": "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
}


# Which shared accesses the compiler merged into LDS.128/STS.128, read off the SASS of each
# kernel (results/<device>.json, "compiler"): the tracer is told the same, per case.
WIDE = {"sgemm smem_tile": ("ld",), "sgemm vec": ("ld",), "sgemm vec_split": ("ld",)}


# float64 reads (issue 35): 8-byte accesses are served in two half-warp phases (bank_model).
# Each block of F64_THREADS threads stores two consecutive float64 per thread into a
# (2 x F64_THREADS) float64 array, then each lane reads s[stride * lane + 64 r], r = 0..3
# (64 float64 = 512 bytes apart: not neighbours, so no LDS.128), and writes the sum: per block
# 8 warps x 4 = 32 load warp-instructions and 8 x 2 = 16 store ones.  Stride 1: consecutive
# (2 wavefronts each, no conflict), stride 2: 16 bytes apart (4 wavefronts, 2 conflicts each),
# stride 0: every lane the same float64 (broadcast; the documented rule: 2 wavefronts, none extra).
F64_THREADS = 256
F64_SHARED = 2 * F64_THREADS  # a shared array's size must be a constant numba sees as one (a global)
F64_STRIDES = {"float64 consecutive": 1, "float64 stride 2": 2, "float64 broadcast": 0}


@functools.lru_cache(maxsize=None)
def _float64_kernel(stride):
    from numba import float64

    @cuda.jit
    def float64_reads(out):
        s = cuda.shared.array(F64_SHARED, float64)
        t = cuda.threadIdx.x
        s[t] = t
        s[t + F64_THREADS] = t
        cuda.syncthreads()
        lane = t % 32
        acc = 0.0
        for r in range(4):
            acc += s[stride * lane + 64 * r]
        out[cuda.blockIdx.x * F64_THREADS + t] = acc

    return float64_reads


def _float64_launch(stride):
    def launch(out):
        _float64_kernel(stride)[out.size // F64_THREADS, F64_THREADS](out)
    return launch


def cases():
    """(name, kind, full problem, one-block problem, blocks in the full problem, launcher)."""
    T, S = ladder.TRANSPOSE, {**ladder.SGEMM, **ladder.VARIANTS}
    out = []
    for name in ["smem_tile", "smem_padded", "smem_padded_32x8"]:
        out.append((f"transpose {name}", "t", (1024, 1024), (32, 32), 32 * 32, T[name]))
    out.append(("transpose wide", "t", (1024, 1024), (64, 64), 16 * 16, T["wide"]))
    out.append(("sgemm smem_tile", "s", (256, 256, 32), (32, 32, 32), 8 * 8, S["smem_tile"]))
    for name in ["reg1d", "reg2d", "reg2d_contiguous", "vec", "vec_unrolled_k", "vec_split"]:
        out.append((f"sgemm {name}", "s", (256, 256, 32), (128, 128, 32), 2 * 2, S[name]))
    # added later (issue 35): last, so that the CSVs recorded before them still match by order
    for name, stride in F64_STRIDES.items():
        out.append((name, "d", (64 * F64_THREADS,), (F64_THREADS,), 64, _float64_launch(stride)))
    return out


def _operands(kind, shape):
    rng = np.random.default_rng(0)
    if kind == "d":  # the float64 cases: their output, one float64 per thread
        return (cuda.device_array(shape, np.float64),)
    if kind == "t":
        R, C = shape
        return cuda.to_device(rng.random((R, C), dtype=np.float32)), cuda.device_array((C, R), np.float32)
    M, N, K = shape
    return (cuda.to_device(rng.random((M, K), dtype=np.float32)), cuda.to_device(rng.random((K, N), dtype=np.float32)),
            cuda.device_array((M, N), np.float32))


def run(only=()):
    """On the GPU: one launch of each case at its full size (compiled beforehand elsewhere);
    with ``only``, just the cases whose name contains one of those words."""
    for name, kind, full, _, _, rung in cases():
        if only and not any(word in name for word in only):
            continue
        args = _operands(kind, full)
        rung(*args)
        cuda.synchronize()
        print("launched", name, file=sys.stderr)


def traced(names=None):
    out = {}
    for name, kind, _, one, blocks, rung in cases():
        if names is not None and name not in names:
            continue
        args = _operands(kind, one)
        tr = shared_tracer.trace(functools.partial(rung, *args), merge=WIDE.get(name, ()))
        row = {}
        for op in ("ld", "st"):
            t = tr.totals(op)
            row[f"{op}_instructions"] = t["instructions"] * blocks
            row[f"{op}_wavefronts"] = t["wavefronts"] * blocks
            row[f"{op}_conflicts"] = t["conflicts"] * blocks
            p = tr.totals(op, rule="paired")
            row[f"{op}_wavefronts_paired"] = p["wavefronts"] * blocks
            row[f"{op}_conflicts_paired"] = p["conflicts"] * blocks
        out[name] = row
        print("traced", name, row, file=sys.stderr)
    return out


def read_ncu(path):
    """ncu --csv output -> list (in launch order) of {metric key: value}."""
    by_id = {}
    with open(path) as f:
        lines = [l for l in f if l.startswith('"')]
    for rec in csv.DictReader(lines):
        kid = int(rec["ID"])
        d = by_id.setdefault(kid, {"kernel": rec["Kernel Name"]})
        for key, metric in METRICS.items():
            if rec["Metric Name"] == metric:
                d[key] = int(float(rec["Metric Value"].replace(",", "")))
    return [by_id[k] for k in sorted(by_id)]


def table(ncu_csv, device, out_dir=results.RESULTS_DIR):
    measured = read_ncu(ncu_csv)
    names = [c[0] for c in cases()]
    if len(measured) > len(names):
        raise SystemExit(f"expected {len(names)} profiled kernels, found {len(measured)}")
    if len(measured) < len(names):  # a CSV from before the later cases were added: they come last
        print(f"note: {ncu_csv} holds {len(measured)} profiled kernels, not {len(names)}: skipping "
              f"{', '.join(names[len(measured):])} (profile them on a GPU: see this file's doc)")
    for name, gpu in zip(names, measured):  # each case added later must find its own kernel
        if name in F64_STRIDES and "float64_reads" not in gpu["kernel"]:
            raise SystemExit(f"case {name!r} read the launch of {gpu['kernel'][:60]!r}: wrong CSV or order")
    model = traced(set(names[:len(measured)]))
    rows = [BankRow(case=name, problem=list(full), blocks=blocks, gpu_kernel=gpu["kernel"][:80],
                    tracer_merged=list(WIDE.get(name, ())), ncu={k: gpu.get(k) for k in METRICS}, tracer=model[name])
            for name, gpu, (_, kind, full, one, blocks, _) in zip(names, measured, cases())]
    record = BankTruth(device=device, date=provenance.now(), metrics=METRICS, rows=rows,
                       how="ncu --clock-control none on the GPU; tracer: one block on the CUDA simulator x blocks")
    path = record.write(results.path_for("banks", device, directory=out_dir))
    for r in rows:
        print(f"{r.case:<26}", " ".join(f"{k}={r.ncu[k]}/{r.tracer[k]}" for k in METRICS))
    return path


if __name__ == "__main__":
    what = sys.argv[1]
    if what == "metrics":
        print(",".join(METRICS.values()))
    elif what == "run":
        run(sys.argv[2:])
    elif what == "table":
        dev = sys.argv[3] if len(sys.argv) > 3 else "NVIDIA H100 80GB HBM3"
        print(table(sys.argv[2] if len(sys.argv) > 2 else results.path_for("ncu-banks", dev), dev))
