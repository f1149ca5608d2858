"""python -m gemm_lessons.bench: every rung and cuBLAS in one process, checked and timed.

Writes results/<device>.json (device, date, clocks, versions, per-kernel medians and
spreads, checks, compiler facts) and the plots beside it, and prints the table.  Needs a GPU.
"""
import argparse
import datetime
import platform
import subprocess
import sys

import numpy as np

from . import _backend, tables

DEFAULT_SIZES = (1024, 2048, 4096, 8192)
DEFAULT_SHAPES = ((4096, 8192, 1024), (8192, 2048, 4096))  # two non-square problems
SLOW_LIMIT = 4096  # variants (the deliberately bad versions) stop at this size


def _versions():
    import numba

    v = {"python": platform.python_version(), "numpy": np.__version__, "numba": numba.__version__}
    try:
        import numba_cuda

        v["numba_cuda"] = numba_cuda.__version__
    except Exception:
        pass
    try:
        import nvmath

        v["nvmath_python"] = nvmath.__version__
    except Exception:
        pass
    from numba import cuda

    from . import cublas

    v["cublas"] = cublas.version()
    try:
        v["cuda_driver"] = ".".join(map(str, cuda.cudadrv.driver.driver.get_version()))
        v["cuda_runtime"] = ".".join(map(str, cuda.runtime.get_version()))
    except Exception:
        pass
    return v


def _git_commit():
    """The commit of the code being measured: $GEMM_LESSONS_GIT_COMMIT when set (a copy of the
    tree on another machine may carry a stale .git), else HEAD, with "+modified" when the
    package differs from HEAD; None outside a git checkout."""
    import os

    if os.environ.get("GEMM_LESSONS_GIT_COMMIT"):
        return os.environ["GEMM_LESSONS_GIT_COMMIT"]
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10, cwd=here)
        head = out.stdout.strip() or None
        dirty = subprocess.run(["git", "diff", "--quiet", "HEAD", "--", "."], cwd=here, timeout=10).returncode
        return head and head + ("+modified" if dirty else "")
    except Exception:
        return None


def nvidia_smi():
    """Clocks, power and temperature right now (None if nvidia-smi is missing)."""
    q = "driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu,persistence_mode"
    try:
        out = subprocess.run(["nvidia-smi", f"--query-gpu={q}", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20).stdout.strip().splitlines()[0]
        return dict(zip(q.split(","), [s.strip() for s in out.split(",")]))
    except Exception:
        return None


def _rel_error(x, ref):
    ref = ref.astype(np.float64)
    return float(np.linalg.norm(x.astype(np.float64) - ref) / np.linalg.norm(ref))


def run_checks(kernels):
    """Correctness on awkward shapes; a ValueError is recorded as a refusal, not a pass."""
    from .problems import GPU_SHAPES, SIM_SHAPES, check

    shapes = SIM_SHAPES if _backend.SIMULATOR else GPU_SHAPES
    rows = []
    for name, rung in kernels.items():
        extra = [(68, 44, 32, 1.0, 0.0), (516, 1028, 260, -1.0, 0.5)]
        for M, N, K, alpha, beta in list(shapes) + extra:
            try:
                res = check(rung, M, N, K, alpha, beta, name=name)
                rows.append({"kernel": name, "shape": [M, N, K], "alpha": alpha, "beta": beta,
                             "passed": res.passed, "rel_error": res.rel_error, "message": res.message()})
            except ValueError as e:
                rows.append({"kernel": name, "shape": [M, N, K], "alpha": alpha, "beta": beta,
                             "passed": None, "message": f"refused: {e}"})
    return rows


def run_transpose_checks():
    from . import ladder
    from .problems import check_transpose

    rows = []
    for name, rung in ladder.TRANSPOSE.items():
        for R, Cc in [(67, 45), (1, 7), (100, 4), (1000, 1), (513, 1031), (68, 44), (516, 1028)]:
            try:
                res = check_transpose(rung, R, Cc, name=name)
                rows.append({"kernel": name, "shape": [R, Cc], "passed": res.passed, "message": res.message()})
            except ValueError as e:
                rows.append({"kernel": name, "shape": [R, Cc], "passed": None, "message": f"refused: {e}"})
    return rows


def time_sgemm(kernels, shapes, repeats, progress=True, max_seconds=10.0):
    from numba import cuda

    from . import cublas
    from .counting import sgemm_flops
    from .problems import random_matrix, tolerance
    from .timing import time_gpu

    rows = []
    rng = np.random.default_rng(1)
    work = [(s, name) for s in shapes for name in ["cublas"] + list(kernels)]
    bar = _progress(len(work), "timing SGEMM", progress)
    for (M, N, K) in shapes:
        A = cuda.to_device(random_matrix(M, K, rng))
        B = cuda.to_device(random_matrix(K, N, rng))
        C = cuda.device_array((M, N), np.float32)
        cublas.sgemm(A, B, C)
        ref = C.copy_to_host()
        for name in ["cublas"] + list(kernels):
            bar.set_postfix_str(f"{name} {M}x{N}x{K}")
            fn = cublas.sgemm if name == "cublas" else kernels[name]
            if name in kernels and getattr(fn, "_variant", False) and max(M, N, K) > SLOW_LIMIT:
                bar.update()
                continue
            C.copy_to_device(np.full((M, N), np.nan, np.float32))
            try:
                t = time_gpu(lambda: fn(A, B, C), repeats=repeats, max_seconds=max_seconds)
            except ValueError as e:
                rows.append({"kernel": name, "M": M, "N": N, "K": K, "refused": str(e)})
                bar.update()
                continue
            out = C.copy_to_host()
            err = _rel_error(out, ref) if name != "cublas" else 0.0
            flop = sgemm_flops(M, N, K)
            rows.append({
                "kernel": name, "M": M, "N": N, "K": K, "n": len(t.samples), "batch": t.batch,
                "host_issue_ms": t.host_ms, "host_bound": t.host_bound,
                "median_ms": t.median_ms, "p10_ms": t.p10_ms, "p90_ms": t.p90_ms,
                "gflops": flop / t.median_ms / 1e6, "gflops_p10": flop / t.p90_ms / 1e6,
                "gflops_p90": flop / t.p10_ms / 1e6, "rel_error_vs_cublas": err,
                "correct": bool(np.isfinite(out).all() and err <= tolerance(K)),
            })
            bar.update()
    bar.close()
    for r in rows:
        cub = [c for c in rows if c["kernel"] == "cublas" and (c["M"], c["N"], c["K"]) == (r["M"], r["N"], r["K"])]
        if "gflops" in r and cub:
            r["pct_cublas"] = 100 * r["gflops"] / cub[0]["gflops"]
    return rows


def time_bandwidth(rows_cols=(8192, 8192), repeats=30):
    """Copy bandwidth (bytes read + written) of the copy kernels: the memory ceiling."""
    from numba import cuda

    from .copy import COPIES
    from .counting import transpose_bytes
    from .timing import time_gpu

    R, Cc = rows_cols
    src = cuda.to_device(np.random.default_rng(2).random((R, Cc), dtype=np.float32))
    dst = cuda.device_array((R, Cc), np.float32)
    out = []
    for name, fn in COPIES.items():
        dst.copy_to_device(np.zeros((R, Cc), np.float32))
        t = time_gpu(lambda: fn(src, dst), repeats=repeats)
        if not np.array_equal(dst.copy_to_host(), src.copy_to_host()):
            raise AssertionError(f"{name} did not copy correctly")
        out.append(_bw_row(name, R, Cc, t, transpose_bytes(R, Cc)))
    return out


def _bw_row(name, R, Cc, t, nbytes):
    return {"kernel": name, "rows": R, "cols": Cc, "n": len(t.samples), "batch": t.batch,
            "host_issue_ms": t.host_ms, "host_bound": t.host_bound, "median_ms": t.median_ms,
            "p10_ms": t.p10_ms, "p90_ms": t.p90_ms, "gbs": nbytes / t.median_ms / 1e6,
            "gbs_p10": nbytes / t.p90_ms / 1e6, "gbs_p90": nbytes / t.p10_ms / 1e6}


def time_transpose(shapes=((8192, 8192), (8192, 4096)), repeats=30, progress=True, kernels=None):
    """Transpose kernels (default: every rung), cuBLAS sgeam and the float4 copy, same inputs,
    one process."""
    from numba import cuda

    from . import cublas, ladder
    from .copy import copy_kernel
    from .counting import transpose_bytes
    from .timing import time_gpu

    rows = []
    kernels = {"cublas_sgeam": cublas.transpose, **(ladder.TRANSPOSE if kernels is None else kernels)}
    bar = _progress(len(shapes) * (len(kernels) + 1), "timing transposes", progress)
    for R, Cc in shapes:
        src = cuda.to_device(np.random.default_rng(3).random((R, Cc), dtype=np.float32))
        ref = src.copy_to_host().T
        dst = cuda.device_array((Cc, R), np.float32)
        same = cuda.device_array((R, Cc), np.float32)
        t = time_gpu(lambda: copy_kernel(src, same), repeats=repeats)
        rows.append(_bw_row("copy_float4", R, Cc, t, transpose_bytes(R, Cc)))
        bar.update()
        for name, fn in kernels.items():
            bar.set_postfix_str(f"{name} {R}x{Cc}")
            dst.copy_to_device(np.zeros((Cc, R), np.float32))
            t = time_gpu(lambda: fn(src, dst), repeats=repeats)
            row = _bw_row(name, R, Cc, t, transpose_bytes(R, Cc))
            row["correct"] = bool(np.array_equal(dst.copy_to_host(), ref))
            rows.append(row)
            bar.update()
    bar.close()
    for r in rows:
        same_shape = [x for x in rows if (x["rows"], x["cols"]) == (r["rows"], r["cols"])]
        r["pct_sgeam"] = 100 * r["gbs"] / next(x["gbs"] for x in same_shape if x["kernel"] == "cublas_sgeam")
        r["pct_copy"] = 100 * r["gbs"] / next(x["gbs"] for x in same_shape if x["kernel"] == "copy_float4")
    return rows


def compiler_facts(kernels_by_module):
    from .inspect_kernel import kernel_facts

    facts = {}
    for name, kernel in kernels_by_module.items():
        try:
            facts[name] = kernel_facts(kernel)
        except Exception as e:  # e.g. not yet compiled
            facts[name] = {"error": repr(e)}
    return facts


def _progress(total, desc, enabled):
    try:
        from tqdm.auto import tqdm

        return tqdm(total=total, desc=desc, disable=not enabled)
    except ImportError:  # pragma: no cover
        class _Null:
            def update(self, *a): pass
            def set_postfix_str(self, *a): pass
            def close(self): pass
        return _Null()


def print_table(record, file=sys.stdout):
    peak = record["device"]["peak_gflops"]
    print(f"\n{record['device']['name']}  {record['date']}  peak FP32 {peak / 1e3:.1f} TFLOPS\n", file=file)
    rows = []
    for r in record["sgemm"]:
        shape = f"{r['M']}x{r['N']}x{r['K']}"
        if "gflops" not in r:
            rows.append([r["kernel"], shape, "", "", "", "", f"refused: {r['refused'][:60]}"])
            continue
        rows.append([r["kernel"], shape, f"{r['gflops'] / 1e3:.2f}",
                     f"{r['gflops_p10'] / 1e3:.2f}-{r['gflops_p90'] / 1e3:.2f}", f"{r.get('pct_cublas', 0):.1f}%",
                     f"{100 * r['gflops'] / peak:.1f}%", "yes" if r["correct"] else "NO"])
    print(tables.text(["kernel", "M x N x K", "TFLOPS", "p10-p90", "% cuBLAS", "% peak", "ok"], rows, "lrrrrrl"),
          file=file)
    rows = [[r["kernel"], f"{r['rows']}x{r['cols']}", f"{r['gbs']:,.0f}", f"{r['gbs_p10']:,.0f}-{r['gbs_p90']:,.0f}",
             f"{r['pct_sgeam']:.1f}%" if "pct_sgeam" in r else "", f"{r['pct_copy']:.1f}%" if "pct_copy" in r else "",
             ("" if r.get("correct", True) else "WRONG") + (" HOST-BOUND" if r.get("host_bound") else "")]
            for r in record.get("bandwidth", []) + record.get("transpose", [])]
    print("\n" + tables.text(["copy / transpose", "rows x cols", "GB/s", "p10-p90", "% sgeam", "% copy", ""], rows,
                              "lrrrrrl"), file=file)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=int, nargs="*", default=list(DEFAULT_SIZES))
    p.add_argument("--shapes", nargs="*", default=[f"{m}x{n}x{k}" for m, n, k in DEFAULT_SHAPES],
                   help="extra MxNxK problems")
    p.add_argument("--kernels", nargs="*", default=None, help="rungs/variants to run (default: all)")
    p.add_argument("--repeats", type=int, default=20)
    p.add_argument("--out", default=None, help="results directory (default: the repo's results/)")
    p.add_argument("--no-plots", action="store_true")
    p.add_argument("--no-progress", action="store_true")
    args = p.parse_args(argv)
    if _backend.SIMULATOR:
        sys.exit("python -m gemm_lessons.bench needs a GPU (this machine runs the CUDA simulator): "
                 "nothing would be measured.")
    from . import ladder, results
    from .device import device_info

    kernels = dict(ladder.SGEMM)
    for name, v in ladder.VARIANTS.items():
        kernels[name] = _mark_variant(v)
    if args.kernels:
        unknown = set(args.kernels) - set(kernels)
        if unknown:
            sys.exit(f"unknown kernels {sorted(unknown)}; choose from {sorted(kernels)}")
        kernels = {k: kernels[k] for k in args.kernels}
    shapes = [(s, s, s) for s in args.sizes] + [tuple(int(x) for x in s.split("x")) for s in args.shapes]
    record = {
        "device": device_info().as_dict(),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "versions": _versions(),
        "git_commit": _git_commit(),
        "nvidia_smi_before": nvidia_smi(),
        "cublas_math_mode": "default (FP32, no TF32)",
        "ladder": list(ladder.SGEMM),
        "variants": list(ladder.VARIANTS),
        "command": "python -m gemm_lessons.bench " + " ".join(argv if argv is not None else sys.argv[1:]),
    }
    record["checks"] = run_checks(kernels)
    record["sgemm"] = time_sgemm(kernels, shapes, args.repeats, progress=not args.no_progress)
    record["bandwidth"] = time_bandwidth()
    record["transpose"] = time_transpose(progress=not args.no_progress)
    record["transpose_checks"] = run_transpose_checks()
    record["compiler"] = compiler_facts(_compiled_kernels())
    record["nvidia_smi_after"] = nvidia_smi()
    path = results.save(record, args.out or results.RESULTS_DIR)
    print_table(record)
    failed = ([c for c in record["checks"] + record["transpose_checks"] if c["passed"] is False]
              + [r for r in record["sgemm"] + record["transpose"] if r.get("correct") is False])
    for c in failed:
        print("FAILED:", c.get("message", c))
    if not args.no_plots:
        _save_plots(record, path)
    print("wrote", path)
    return 1 if failed else 0


def _mark_variant(rung):
    def fn(*a, **k):
        return rung(*a, **k)
    fn._variant = True
    return fn


def _compiled_kernels():
    from . import copy, ladder
    from .transpose import naive as t_naive, smem_tile as t_tile, wide as t_wide

    kernels = {name: r.kernel for name, r in {**ladder.SGEMM, **ladder.VARIANTS}.items() if r.kernel is not None}
    kernels.update({
        "transpose_naive": t_naive.transpose_naive,
        "transpose_smem_tile": t_tile.kernel_for(), "transpose_smem_padded": t_tile.kernel_for(PAD=1),
        "transpose_smem_padded_32x8": t_tile.kernel_for(ROWS=8, PAD=1), "transpose_wide": t_wide.kernel_for(),
        "copy_float4": copy.copy_float4})
    return kernels


def _save_plots(record, json_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from . import plots

    base = json_path[:-len(".json")]
    for what, fn in (("ladder", plots.ladder), ("sizes", plots.versus_size), ("roofline", plots.roofline)):
        ax = fn(record)
        ax.figure.tight_layout()
        ax.figure.savefig(f"{base}-{what}.png", dpi=110)
        plt.close(ax.figure)


if __name__ == "__main__":
    sys.exit(main())
