"""The any-shape kernel with an unpredicated main loop for blocks inside C (ragged_kernels.make_interior)
against the library's any-shape kernel, gl.sgemm and cuBLAS, one run, on ragged and square shapes.

    python3 -m experiments.shape_classes.interior_probe [--out DIR] [--grouped] [--shape M N K ...]
    -> DIR/interior-probe-<device>.json, with --grouped DIR/interior-probe-grouped-<device>.json
       (kept in experiments/shape_classes/)

Compiled offline, its main loop has as many instructions per FFMA as the wide kernel's (1,174
against 1,173 per 1,024 FFMAs at 128x128; the any-shape kernel's 1,326): does it run at the wide
kernel's speed on shapes the wide kernel cannot take, in one launch, without copies?  Per shape
every kernel is checked on a C filled with NaN against float64 (a sample), then timed back to
back with the clock and power sampled (experiments._shared); cuBLAS first and last.  Each kernel
runs as gl.sgemm launches the any-shape kernel (C-contiguous arrays, the tile's register cap, one
part along z: all of K).  With --grouped also ragged_kernels.make_grouped, scalar loads and with
wide_inside (16-byte loads, aligned shapes only) and with a_wide (A by 16-byte loads, K a multiple of 4);
its record is the run "grouped".  With --split S, each candidate also split along K in S parts, the
library's reduction after it (split_call), for sizes near 1000; grouped_cw (make_grouped(c_wide=True))
runs split only, into a workspace N rounded up to 4 floats wide, reduced 16 bytes at a time;
grouped_fx (make_grouped(fixup=True)) split only, in one launch, the last part of each tile adding
the parts into C.
"""
import argparse
import sys
import time

import numpy as np

import gemm_lessons  # noqa: F401  (chooses the GPU before numba.cuda is imported)
from gemm_lessons.library import device_arrays, dispatch
from gemm_lessons.measure import cublas
from gemm_lessons.runs.shapes import random_device_matrix

from experiments._shared import checked_on_nan, poisoned, record, timed_back_to_back, write_record
from . import ragged_kernels  # this folder's candidates

SHAPES = [(4096, 4096, 4096), (4095, 4097, 4093), (4096, 50257, 768), (999, 1001, 1003), (1023, 1021, 1025)]


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--out")
    p.add_argument("--shape", nargs=3, type=int, action="append", help="M N K instead of SHAPES (repeatable)")
    p.add_argument("--grouped", action="store_true",
                   help="also ragged_kernels.make_grouped, and with wide_inside on aligned shapes (not in the 2bb9b00 run)")
    p.add_argument("--row-pad", type=int, default=0, metavar="P",
                   help="the candidates read A and B as views of arrays P floats wider (row strides K+P, N+P); "
                        "cuBLAS and gl.sgemm read the contiguous arrays: does a row stride alone change a kernel's time?")
    p.add_argument("--split", type=int, nargs="+", default=[], metavar="S",
                   help="also each candidate split along K in S parts as gl.sgemm splits the any-shape kernel "
                        "(partial sums into a workspace, then the library's reduction), both launched through "
                        "the library's Launcher")
    p.add_argument("--run", help="the record's run name (default: grouped, row-pad-P, or none)")
    p.add_argument("--kernels", nargs="+", metavar="NAME",
                   help="only these candidates (e.g. 'grouped 128x128'), with cuBLAS and gl.sgemm: for a profile")
    args = p.parse_args(argv)
    t0 = time.perf_counter()
    kernels = {}
    for tiles in ("128x128", "64x64"):
        kernels[f"any_shape {tiles}"] = (device_arrays.kernel_spec("any_shape", tiles, "C")[0], dispatch.TILES[tiles])
        kernels[f"interior {tiles}"] = (ragged_kernels.make_interior(dispatch.TILES[tiles]), dispatch.TILES[tiles])
        if args.grouped:
            kernels[f"grouped {tiles}"] = (ragged_kernels.make_grouped(dispatch.TILES[tiles]), dispatch.TILES[tiles])
            kernels[f"grouped_wide {tiles}"] = (ragged_kernels.make_grouped(dispatch.TILES[tiles], wide_inside=True),
                                                dispatch.TILES[tiles])  # 16-byte loads: aligned shapes only
            kernels[f"grouped_a_wide {tiles}"] = (ragged_kernels.make_grouped(dispatch.TILES[tiles], a_wide=True),
                                                  dispatch.TILES[tiles])  # A by 16-byte loads: K a multiple of 4
            kernels[f"grouped_cw {tiles}"] = (ragged_kernels.make_grouped(dispatch.TILES[tiles], c_wide=True),
                                              dispatch.TILES[tiles])  # split only: a workspace N4 wide, 16-byte stores
            kernels[f"grouped_fx {tiles}"] = (None, dispatch.TILES[tiles])  # split only, one launch: made per split
    if args.kernels:
        unknown = set(args.kernels) - set(kernels)
        if unknown:
            p.error(f"unknown kernels {sorted(unknown)}; the candidates are {sorted(kernels)}")
        kernels = {name: kernels[name] for name in args.kernels}
    rows, failures = [], []
    fixups = {}  # (tiles, parts) -> make_grouped(fixup=parts): made once, so compiled once for every shape
    for M, N, K in args.shape or SHAPES:
        rng = np.random.default_rng(M + N + K)
        A, a = random_device_matrix(M, K, rng)
        B, b = random_device_matrix(K, N, rng)
        A_in, B_in = (_strided(a, args.row_pad), _strided(b, args.row_pad)) if args.row_pad else (A, B)
        C = poisoned(M, N)
        one, zero, k_all = np.float32(1), np.float32(0), np.int64(K)
        calls = {"cublas": lambda: cublas.sgemm(A, B, C), "gl.sgemm": lambda: device_arrays.sgemm(A, B, C)}
        for name, (kernel, cfg) in kernels.items():
            if (name.startswith("grouped_wide") and (N % 4 or K % 4)) or (name.startswith("grouped_a_wide") and K % 4):
                continue
            grid = ((N + cfg.BN - 1) // cfg.BN, (M + cfg.BM - 1) // cfg.BM, 1)
            c_wide = name.startswith("grouped_cw")  # writes only a workspace N4 wide: split calls alone
            fixup = name.startswith("grouped_fx")  # split only, one launch
            extra = ragged_kernels.no_fixup(C) if name.split()[0] != "any_shape" else ()  # two-loops kernels' W, counters
            if not (c_wide or fixup):
                calls[name] = lambda k=kernel, g=grid, t=cfg.threads, x=extra: k[g, t](A_in, B_in, C, one, zero, k_all, *x)
            for parts in args.split:
                if fixup and (name, parts) not in fixups:
                    fixups[name, parts] = ragged_kernels.make_grouped(cfg, fixup=parts)
                calls[f"{name} split {parts}"] = split_call(fixups[name, parts] if fixup else kernel,
                                                            name.split()[-1], parts, A_in, B_in, C,
                                                            "A" if args.row_pad else "C", c_wide=c_wide,
                                                            two_loops=bool(extra), fixup=fixup)
        row = {"shape": [M, N, K], "row_pad": args.row_pad, "plan": str(dispatch.plan_for(M, N, K, not (N % 4 or K % 4))), "checks": {}}
        for name, fn in calls.items():
            row["checks"][name] = checked_on_nan(fn, C, a, b)
            failures += [] if row["checks"][name]["correct"] else [(name, M, N, K)]
        row["runs"] = timed_back_to_back(calls, list(calls) + ["cublas"], f"{M}x{N}x{K}")
        rows.append(row)
        del A, B, C, A_in, B_in, calls
    rec = record("interior-probe", {"rows": rows, "failures": failures}, t0)
    run = args.run or (f"row-pad-{args.row_pad}" if args.row_pad else "grouped" if args.grouped else None)
    write_record("shape_classes", rec, args.out, kind="interior", run=run)
    return 1 if failures else 0


def split_call(kernel, tiles, parts, A, B, C, layout="C", c_wide=False, two_loops=False, fixup=False):
    """fn() computing C = A @ B with ``kernel`` (the any-shape kernel's arguments; with
    ``two_loops`` W and counters after them, ragged_kernels) split along K in ``parts`` as
    gl.sgemm's any-shape split plan is (dispatch.Plan's grid and k_chunk): the parts' sums into a
    workspace, then the library's reduction into C; both through library.launch.Launcher.
    ``c_wide``: the workspace N rounded up to 4 floats wide, reduced by the padded plans' 16-byte
    reduction (make_grouped(c_wide=True)); ``fixup``: one launch, the kernel adds the parts itself
    (make_grouped(fixup=True))."""
    from numba import cuda

    from gemm_lessons.kernels.library import splitk_reduce, splitk_reduce_padded
    from gemm_lessons.library.launch import Launcher

    (M, K), N = A.shape, B.shape[1]
    plan = dispatch.Plan("any_shape", tiles, parts)
    argtypes = device_arrays.kernel_spec("any_shape", tiles, layout)[1]
    main = Launcher(kernel, argtypes + ragged_kernels.extra_argtypes() if two_loops else argtypes,
                    plan.config.threads)
    W = cuda.device_array((parts * M, dispatch.padded_sides(N, K)[0] if c_wide or fixup else N), np.float32)
    grid, chunk, one, zero = plan.grid(M, N), np.int64(plan.k_chunk(K)), np.float32(1), np.float32(0)
    if fixup:
        counters = cuda.to_device(np.zeros((grid[1], grid[0]), np.int32))
        return lambda: main(grid, A, B, C, one, zero, chunk, W, counters)
    reduce_kernel, reduce_types, reduce_threads = device_arrays.kernel_spec("reduce_padded" if c_wide else "reduce", "", "C")
    reduce = Launcher(reduce_kernel, reduce_types, reduce_threads)
    rgrid = (splitk_reduce_padded if c_wide else splitk_reduce).grid(M, N)
    extra = ragged_kernels.no_fixup(W) if two_loops else ()

    def run():
        main(grid, A, B, W, one, zero, chunk, *extra)
        reduce(rgrid, W, C, one, zero)

    return run


def _strided(x, pad):
    """A device view of the host array x whose rows are pad floats further apart than x's."""
    from numba import cuda

    wide = np.zeros((x.shape[0], x.shape[1] + pad), np.float32)
    wide[:, :x.shape[1]] = x
    return cuda.to_device(wide)[:, :x.shape[1]]


if __name__ == "__main__":
    sys.exit(main())
