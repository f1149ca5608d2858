"""Checking and timing kernels on a GPU, as rows of records (records.SgemmRow, ...).

The library behind ``python -m gemm_lessons.runs.bench`` (every rung at once), lesson 08's sweep
and the notebooks' measurements (gemm_lessons.teaching.measure_step): every kernel is timed next to cuBLAS
in the same process, on the same inputs, and checked against it.
"""
import numpy as np
from numba import cuda  # after gemm_lessons._backend (the package imports it first)

from gemm_lessons.core import backend
from gemm_lessons.measure import cublas
from gemm_lessons.kernels import ladder
from gemm_lessons.kernels.device_copy import COPIES, copy_kernel
from gemm_lessons.model.counting import sgemm_flops, transpose_bytes
from gemm_lessons.measure.problems import GPU_SHAPES, SIM_SHAPES, check, check_transpose, random_matrix, tolerance
from gemm_lessons.core.progress import bar
from gemm_lessons.records.schema import BandwidthRow, CheckRow, SgemmRow
from gemm_lessons.measure.power import PowerSampler
from gemm_lessons.measure.timing import time_gpu


def _timed(fn, **kw):
    """time_gpu(fn, **kw) with the SM clock, power and clock-event reasons sampled while it runs:
    (Timing, PowerSampler.summary() or None where NVML is not available).  The kernel runs once
    before sampling starts: its first call compiles it, with the GPU idle, which would drag the
    clock and power read while it was timed toward idle values."""
    if not backend.SIMULATOR:
        fn()
        cuda.synchronize()
    with PowerSampler(interval_s=0.05) as s:  # 20 reads a second: little host time taken from the launches
        t = time_gpu(fn, **kw)
    return t, s.summary()

SLOW_LIMIT = 4096  # variants (the deliberately bad versions) stop at this size
TRANSPOSE_CHECK_SHAPES = [(67, 45), (1, 7), (100, 4), (1000, 1), (513, 1031), (68, 44), (516, 1028)]


def _rel_error(x, ref):
    ref = ref.astype(np.float64)
    return float(np.linalg.norm(x.astype(np.float64) - ref) / np.linalg.norm(ref))


def run_checks(kernels):
    """Correctness on awkward shapes; a ValueError is recorded as a refusal, not a pass."""
    shapes = SIM_SHAPES if backend.SIMULATOR else GPU_SHAPES
    rows = []
    for name, rung in kernels.items():
        extra = [(68, 44, 32, 1.0, 0.0), (516, 1028, 260, -1.0, 0.5)]
        for M, N, K, alpha, beta in list(shapes) + extra:
            row = CheckRow(kernel=name, shape=[M, N, K], alpha=alpha, beta=beta, passed=None)
            try:
                res = check(rung, M, N, K, alpha, beta, name=name)
                row.passed, row.rel_error, row.message = res.passed, res.rel_error, res.message()
            except ValueError as e:
                row.message = f"refused: {e}"
            rows.append(row)
    return rows


def run_transpose_checks():
    rows = []
    for name, rung in ladder.TRANSPOSE.items():
        for R, Cc in TRANSPOSE_CHECK_SHAPES:
            row = CheckRow(kernel=name, shape=[R, Cc], passed=None)
            try:
                res = check_transpose(rung, R, Cc, name=name)
                row.passed, row.message = res.passed, res.message()
            except ValueError as e:
                row.message = f"refused: {e}"
            rows.append(row)
    return rows


def time_sgemm(kernels, shapes, repeats, progress=True, max_seconds=10.0, variant_limit=SLOW_LIMIT):
    """cuBLAS and ``kernels`` (name -> rung) at each M x N x K of ``shapes``: one SgemmRow each,
    cuBLAS's first, each with its % of cuBLAS (a kernel that refuses a size gets ``refused``).
    Variants are skipped at sizes with a side above ``variant_limit``."""
    rows = []
    rng = np.random.default_rng(1)
    pbar = bar(len(shapes) * (len(kernels) + 1), "timing SGEMM", progress)
    for (M, N, K) in shapes:
        A = cuda.to_device(random_matrix(M, K, rng))
        B = cuda.to_device(random_matrix(K, N, rng))
        C = cuda.device_array((M, N), np.float32)
        cublas.sgemm(A, B, C)
        ref = C.copy_to_host()
        for name in ["cublas"] + list(kernels):
            pbar.set_postfix_str(f"{name} {M}x{N}x{K}")
            fn = cublas.sgemm if name == "cublas" else kernels[name]
            if name in kernels and getattr(fn, "variant", False) and max(M, N, K) > variant_limit:
                pbar.update()
                continue
            C.copy_to_device(np.full((M, N), np.nan, np.float32))
            try:
                t, power = _timed(lambda: fn(A, B, C), repeats=repeats, max_seconds=max_seconds)
            except ValueError as e:
                rows.append(SgemmRow(kernel=name, M=M, N=N, K=K, refused=str(e)))
                pbar.update()
                continue
            out = C.copy_to_host()
            err = _rel_error(out, ref) if name != "cublas" else 0.0
            flop = sgemm_flops(M, N, K)
            rows.append(SgemmRow(
                kernel=name, M=M, N=N, K=K, n=len(t.samples), batch=t.batch,
                host_issue_ms=t.host_ms, host_bound=t.host_bound,
                median_ms=t.median_ms, p10_ms=t.p10_ms, p90_ms=t.p90_ms,
                gflops=flop / t.median_ms / 1e6, gflops_p10=flop / t.p90_ms / 1e6,
                gflops_p90=flop / t.p10_ms / 1e6, rel_error_vs_cublas=err,
                correct=bool(np.isfinite(out).all() and err <= tolerance(K)), power=power,
            ))
            pbar.update()
    pbar.close()
    for r in rows:
        cub = [c for c in rows if c.kernel == "cublas" and c.size == r.size]
        if r.gflops is not None and cub:
            r.pct_cublas = 100 * r.gflops / cub[0].gflops
    return rows


def time_bandwidth(rows_cols=(8192, 8192), repeats=30):
    """Copy bandwidth (bytes read + written) of the copy kernels: the memory ceiling."""
    R, Cc = rows_cols
    src = cuda.to_device(np.random.default_rng(2).random((R, Cc), dtype=np.float32))
    dst = cuda.device_array((R, Cc), np.float32)
    out = []
    for name, fn in COPIES.items():
        dst.copy_to_device(np.zeros((R, Cc), np.float32))
        t, power = _timed(lambda: fn(src, dst), repeats=repeats)
        if not np.array_equal(dst.copy_to_host(), src.copy_to_host()):
            raise AssertionError(f"{name} did not copy correctly")
        out.append(_bw_row(name, R, Cc, t, transpose_bytes(R, Cc), power))
    return out


def _bw_row(name, R, Cc, t, nbytes, power=None):
    return BandwidthRow(kernel=name, rows=R, cols=Cc, n=len(t.samples), batch=t.batch, power=power,
                        host_issue_ms=t.host_ms, host_bound=t.host_bound, median_ms=t.median_ms,
                        p10_ms=t.p10_ms, p90_ms=t.p90_ms, gbs=nbytes / t.median_ms / 1e6,
                        gbs_p10=nbytes / t.p90_ms / 1e6, gbs_p90=nbytes / t.p10_ms / 1e6)


def time_transpose(shapes=((8192, 8192), (8192, 4096)), repeats=30, progress=True, kernels=None):
    """Transpose kernels (default: every rung), cuBLAS sgeam and the float4 copy, same inputs,
    one process."""
    rows = []
    kernels = {"cublas_sgeam": cublas.transpose, **(ladder.TRANSPOSE if kernels is None else kernels)}
    pbar = bar(len(shapes) * (len(kernels) + 1), "timing transposes", progress)
    for R, Cc in shapes:
        src = cuda.to_device(np.random.default_rng(3).random((R, Cc), dtype=np.float32))
        ref = src.copy_to_host().T
        dst = cuda.device_array((Cc, R), np.float32)
        same = cuda.device_array((R, Cc), np.float32)
        t, power = _timed(lambda: copy_kernel(src, same), repeats=repeats)
        rows.append(_bw_row("copy_float4", R, Cc, t, transpose_bytes(R, Cc), power))
        pbar.update()
        for name, fn in kernels.items():
            pbar.set_postfix_str(f"{name} {R}x{Cc}")
            dst.copy_to_device(np.zeros((Cc, R), np.float32))
            t, power = _timed(lambda: fn(src, dst), repeats=repeats)
            row = _bw_row(name, R, Cc, t, transpose_bytes(R, Cc), power)
            row.correct = bool(np.array_equal(dst.copy_to_host(), ref))
            rows.append(row)
            pbar.update()
    pbar.close()
    for r in rows:
        same_shape = [x for x in rows if x.shape == r.shape]
        r.pct_sgeam = 100 * r.gbs / next(x.gbs for x in same_shape if x.kernel == "cublas_sgeam")
        r.pct_copy = 100 * r.gbs / next(x.gbs for x in same_shape if x.kernel == "copy_float4")
    return rows
