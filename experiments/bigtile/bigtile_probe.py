"""Larger block tiles for large squares, against the library's 128x128 and cuBLAS, on a GPU.

    python3 -m experiments.bigtile.bigtile_probe [--out DIR]  -> DIR/bigtile-probe-<device>.json
    ncu --clock-control none --profile-from-start off --csv --print-units base \
        --metrics "$(python3 -m experiments.ncu_vs_cublas.ncu_vs_cublas metrics)" \
        python3 -m experiments.bigtile.bigtile_probe --profile > ncu-bigtile-<device>.csv
    GEMM_LESSONS_SIMULATOR=0 python3 -m experiments.bigtile.bigtile_probe --sass [--out DIR]
        -> DIR/bigtile-sass-offline.json (no GPU: each tile's main loop compiled offline for sm_90)
    (from the repository root, on a GPU but --sass; default: print only.  Kept in experiments/bigtile/.)

Issue 14 asks for large squares at or past cuBLAS.  experiments/ncu_vs_cublas/ found cuBLAS's
kernel at 16384^3 working on 256x128 block tiles with 224 registers (one block of 256 threads
per SM), where gl.sgemm works on 128x128 tiles with 128 registers (two blocks of 256 per SM).
A larger block tile loads each float of A and B from global memory for more products (the
tile's arithmetic intensity doubles along one side), at the price of fewer resident warps.
TileConfig takes such tiles as they are; this probe times three that compile without spills
for sm_90 (offline: python -m gemm_lessons.runs.arch_facts style compile, recorded below):
  * 256x128x8, warp tiles 64x64, 16x8 results per thread: 256 threads, ~219 registers;
  * 128x256x8, warp tiles 64x64, 8x16 per thread: 256 threads, ~229 registers;
  * 256x128x16, warp tiles 32x64, 8x8 per thread, one shared buffer: 512 threads, 128 registers.
Each is checked against float64 on a non-square product (every element) and at each timed
size (a sample), then timed back to back (shapes.back_to_back) with cuBLAS timed before and
after the candidates in the same run, the GPU's clock and power sampled during each series
(since 2026-11-29; the H100 record of 2026-11-24 has none); the record keeps both cuBLAS
medians, so drift shows.  --profile runs each once at 4096^3 next to cuBLAS for Nsight Compute;
--sass counts each main loop's instructions per FFMA offline.
"""
import argparse
import sys
import time
from dataclasses import replace

import numpy as np

import gemm_lessons  # noqa: F401  (chooses the GPU before numba.cuda is imported)
from gemm_lessons.library import dispatch
from gemm_lessons.library.launch import Launcher
from gemm_lessons.kernels.sgemm import warptile
from gemm_lessons.runs.shapes import check_product, random_device_matrix
from numba.cuda import types

from experiments._shared import offline_loop, poisoned, record, time_squares, write_record

PROFILE_SIZE = 4096

ARR, F32 = types.Array(types.float32, 2, "C"), types.float32
BASE = dispatch.TILES["128x128"]
CONFIGS = {
    "library 128x128": BASE,
    "256x128 thread 16x8": replace(BASE, BM=256, BN=128, BK=8, WM=64, WN=64, TM=16, TN=8, max_registers=None),
    "128x256 thread 8x16": replace(BASE, BM=128, BN=256, BK=8, WM=64, WN=64, TM=8, TN=16, max_registers=None),
    "256x128x16 512 threads": replace(BASE, BM=256, BN=128, BK=16, WM=32, WN=64, stages=1, max_registers=128),
    # added 2026-11-29: the next slice staged float4 by float4 through the k-steps (TileConfig.spread)
    "256x128 thread 16x8 spread": replace(BASE, BM=256, BN=128, BK=8, WM=64, WN=64, TM=16, TN=8, max_registers=None,
                                          spread=True),
}
SIZES = [2048, 4096, 8192, 16384]
CHECK_SHAPE = (1000, 1096, 904)  # M, N, K: not multiples of the tiles (K and N multiples of 4)


def launcher(cfg):
    """run(A, B, C): the kernel of ``cfg`` launched as gl.sgemm launches it (alpha 1, beta 0)."""
    la = Launcher(warptile.kernel_for(cfg), (ARR, ARR, ARR, F32, F32), cfg.threads)

    def run(A, B, C):
        M, N = C.shape
        la(cfg.grid(M, N), A, B, C, 1.0, 0.0)

    regs = la.kernel.get_regs_per_thread()
    run.registers = regs if isinstance(regs, int) else None
    return run


def profile(n=PROFILE_SIZE):
    """Each configuration and cuBLAS once at n^3 between cuda.profile_start and profile_stop (for
    ncu --profile-from-start off), after a warm-up (instruments.profiler.profile_calls)."""
    import functools

    from numba import cuda

    from gemm_lessons.instruments import profiler
    from gemm_lessons.measure import cublas

    rng = np.random.default_rng(5)
    A_d, _ = random_device_matrix(n, n, rng)
    B_d, _ = random_device_matrix(n, n, rng)
    C = cuda.device_array((n, n), np.float32)
    calls = {name: functools.partial(launcher(cfg), A_d, B_d, C) for name, cfg in CONFIGS.items()}
    calls["cublas"] = functools.partial(cublas.sgemm, A_d, B_d, C)
    profiler.profile_calls(calls)


def sass(out):
    """Each configuration's main loop compiled offline for sm_90 (no GPU, experiments._shared.offline_loop):
    registers, spills, the loop's opcodes and their groups, and its instructions per 1,024 FFMAs."""
    from gemm_lessons.instruments import offline_sass
    from gemm_lessons.measure import provenance

    why = offline_sass.missing_toolchain()
    if why:
        sys.exit(f"cannot compile offline: {why}")
    rec = {"kind": "bigtile-sass-offline", "device": "none (compiled offline)", "date": provenance.now(),
           "git_commit": provenance.git_commit(), "versions": offline_sass.versions(), "arch": "sm_90", "kernels": {}}
    for name, cfg in CONFIGS.items():
        loop = offline_loop(warptile.make_kernel(cfg), cfg.max_registers)
        groups = loop["groups"]
        rec["kernels"][name] = {"config": cfg.short(), **loop,
                                "per_1024_ffma": round(1024 * sum(groups.values()) / groups["FFMA"])}
        print(name, loop["resources"]["registers"], groups, rec["kernels"][name]["per_1024_ffma"], flush=True)
    write_record("bigtile", rec, out, kind="sass")
    return 0


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out", default=None)
    p.add_argument("--sizes", type=int, nargs="+", default=SIZES)
    p.add_argument("--profile", action="store_true", help=f"each tile and cuBLAS once at {PROFILE_SIZE}^3, for ncu")
    p.add_argument("--sass", action="store_true", help="compile each tile offline and count its main loop (no GPU)")
    args = p.parse_args()
    if args.sass:
        return sass(args.out)
    if gemm_lessons.SIMULATOR:
        sys.exit("the big-tile probe times kernels: run it on a GPU")
    if args.profile:
        return profile()
    t_start = time.perf_counter()
    rng = np.random.default_rng(17)
    runs, compiled, failures = {}, {}, []
    for name, cfg in CONFIGS.items():
        cfg.validate()
        t = time.perf_counter()
        runs[name] = launcher(cfg)
        compiled[name] = {"config": cfg.short(), "threads": cfg.threads, "shared_bytes": cfg.shared_bytes,
                          "registers": runs[name].registers, "compile_s": round(time.perf_counter() - t, 1)}
        M, N, K = CHECK_SHAPE
        A_d, A = random_device_matrix(M, K, rng)
        B_d, B = random_device_matrix(K, N, rng)
        C = poisoned(M, N)
        runs[name](A_d, B_d, C)
        ok, err, how = check_product(A, B, C.copy_to_host())
        compiled[name].update(check_shape=list(CHECK_SHAPE), correct=ok, rel_error=err, checked=how)
        if not ok:
            failures.append((name, CHECK_SHAPE))
        print(f"{name:26s} {cfg.short()}  regs {runs[name].registers}  ok {ok} {err:.2e}", flush=True)
    rows = time_squares(runs, args.sizes, rng, failures)
    rec = record("bigtile-probe", {"command": "python3 -m experiments.bigtile.bigtile_probe",
                                   "pct_of": "mean of the cuBLAS medians before and after", "compiled": compiled,
                                   "rows": rows, "failures": failures}, t_start)
    write_record("bigtile", rec, args.out)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
