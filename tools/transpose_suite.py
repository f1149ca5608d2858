"""The transpose on a suite of shapes: every candidate kernel against cuBLAS sgeam and a float4
copy of the same bytes, in one process, each result checked exactly.

    python3 tools/transpose_suite.py [--out DIR]  -> DIR/transpose-suite-<device>.json (default results/)
    python3 tools/transpose_suite.py --kernels library anywide_64x16 --out DIR
        # only these candidates (and cuBLAS sgeam); a partial record: keep it out of results/
    python3 tools/transpose_suite.py --shape 8190 8192 --shape 4098 8190 ...  # only these shapes (partial)

Times are back-to-back (time_gpu: batches of calls between CUDA events); the library and sgeam
are also timed as single calls, the GPU idle before each, as a user calls them.  NVML's clock and
power are sampled while each candidate runs back to back (``power`` in its entry).
Candidates: the lesson 09 rungs that accept the shape (`smem_padded_32x8`, `wide`), `wide` with
the diagonal block order, a 64x64 tile moved by 64x8 threads, `transpose.any_shape` (wide
where each side's rows allow it) with three thread layouts, and `transpose.any_wide` (16-byte
accesses on every shape: the arrays seen flat, aligned float4s, a shifted staging row) with
two, and `transpose.aligned_stores` (any_wide's loads, dst cut at 16-byte boundaries so that
only the ends of a dst row are written one float at a time) with six (more warps per SM in four),
and `transpose_pairs` (8-byte accesses, both sides even) with three.  Issue 14 item 6 asks for >= 95% of sgeam on every shape; this records where each
candidate stands.
"""
import argparse
import json
import os
import sys

import numpy as np

import gemm_lessons  # noqa: F401  (chooses the GPU before numba.cuda is imported)
from gemm_lessons.measure import cublas, provenance
from gemm_lessons.measure.power import PowerSampler
from gemm_lessons import library
from gemm_lessons.records import results
from gemm_lessons.runs.shapes import back_to_back, single_calls
from gemm_lessons.kernels.device_copy import copy_kernel, copy_memcpy
from gemm_lessons.model.counting import transpose_bytes
from gemm_lessons.kernels.library import transpose_aligned_stores, transpose_any_shape, transpose_any_wide as any_wide
from gemm_lessons.kernels.library import transpose_pairs
from gemm_lessons.kernels.transpose import smem_tile, wide
from numba import cuda

SHAPES = [(8192, 8192), (8192, 4096), (4096, 8192), (4096, 4096), (2048, 2048), (1024, 1024),
          (3000, 5000), (5000, 3000), (16384, 1024), (1024, 16384), (65536, 64), (64, 65536),
          (8190, 8192), (8192, 8190), (8191, 4097), (4097, 8191), (3001, 4999), (1000, 1000),
          (999, 1001), (2049, 2047), (65537, 63), (63, 65537),
          (4097, 8193), (8193, 4097), (7, 300007), (300007, 7)]  # issue 34's very wide and very tall


def candidates():
    diag = wide.kernel_for(DIAGONAL=True)
    return {
        "cublas_sgeam": cublas.transpose,
        "library": library.transpose,  # what a user calls: gemm_lessons.library.transpose(src, dst)
        "smem_padded_32x8": lambda s, d: smem_tile.transpose(s, d, TILE=32, ROWS=8, PAD=1),
        "tile64_64x8": lambda s, d: smem_tile.transpose(s, d, TILE=64, ROWS=8, PAD=1),
        "wide": wide.transpose,
        "wide_diagonal": lambda s, d: wide.transpose(s, d, kernel=diag),
        "any_64x16": lambda s, d: transpose_any_shape.transpose(s, d, TILE=64, ROWS=16),
        "any_64x8": lambda s, d: transpose_any_shape.transpose(s, d, TILE=64, ROWS=8),
        "any_32x8": lambda s, d: transpose_any_shape.transpose(s, d, TILE=32, ROWS=8),
        "anywide_64x16": lambda s, d: any_wide.transpose(s, d, TILE=64, ROWS=16),
        "anywide_64x8": lambda s, d: any_wide.transpose(s, d, TILE=64, ROWS=8),
        "aligned_64x16": lambda s, d: transpose_aligned_stores.transpose(s, d, TILE=64, ROWS=16),
        "aligned_64x8": lambda s, d: transpose_aligned_stores.transpose(s, d, TILE=64, ROWS=8),
        # more warps per SM than aligned_64x16's 24 (65 registers): a 64-register cap (24 bytes of
        # spills, 32 warps), 512 threads (50 registers, 32 warps), 32 x 32 tiles (50 and 39 registers:
        # 36 and 48 warps, 3 extra staged rows on 32 instead of 64)
        "aligned_64x16_r64": lambda s, d: transpose_aligned_stores.transpose(s, d, TILE=64, ROWS=16, MAX_REGISTERS=64),
        "aligned_64x32": lambda s, d: transpose_aligned_stores.transpose(s, d, TILE=64, ROWS=32),
        "aligned_32x16": lambda s, d: transpose_aligned_stores.transpose(s, d, TILE=32, ROWS=16),
        "aligned_32x32": lambda s, d: transpose_aligned_stores.transpose(s, d, TILE=32, ROWS=32),
        # both sides even: 8-byte accesses on both sides (transpose_pairs)
        "pairs_64x8": lambda s, d: transpose_pairs.transpose(s, d, TILE=64, ROWS=8),
        "pairs_64x16": lambda s, d: transpose_pairs.transpose(s, d, TILE=64, ROWS=16),
        "pairs_32x8": lambda s, d: transpose_pairs.transpose(s, d, TILE=32, ROWS=8),
    }


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out", default=results.RESULTS_DIR)
    p.add_argument("--kernels", nargs="+", metavar="NAME",
                   help="time only these candidates (cublas_sgeam is always timed: the percentages are of it)")
    p.add_argument("--odd", action="store_true", help="only the shapes with a side that is not a multiple of 4")
    p.add_argument("--shape", nargs=2, type=int, action="append", metavar=("ROWS", "COLS"),
                   help="only these shapes (repeat the option); a partial record")
    args = p.parse_args()
    every = candidates()
    unknown = set(args.kernels or ()) - set(every)
    if unknown:
        sys.exit(f"unknown candidates {sorted(unknown)}; known: {', '.join(every)}")
    chosen = {k: fn for k, fn in every.items() if not args.kernels or k == "cublas_sgeam" or k in args.kernels}
    if gemm_lessons.SIMULATOR:
        sys.exit("the transpose suite times kernels: run it on a GPU")
    dev = cuda.get_current_device()
    name = dev.name.decode() if isinstance(dev.name, bytes) else dev.name
    rows_out = []
    shapes = [tuple(s) for s in args.shape] if args.shape else SHAPES
    for R, C in [(R, C) for R, C in shapes if not args.odd or R % 4 or C % 4]:
        src = cuda.to_device(np.random.default_rng(5).random((R, C), dtype=np.float32))
        ref = src.copy_to_host().T
        dst = cuda.device_array((C, R), np.float32)
        same = cuda.device_array((R, C), np.float32)
        nbytes = transpose_bytes(R, C)
        copy = copy_kernel if C % 4 == 0 else copy_memcpy  # the float4 copy needs rows of 16-byte multiples
        t = back_to_back(lambda: copy(src, same), repeats=20, max_s=2)
        line = {"shape": [R, C], "copy": copy.__name__, "copy_gbs": nbytes / t.median_ms / 1e6, "kernels": {}}
        for kname, fn in chosen.items():
            try:
                dst.copy_to_device(np.full((C, R), np.nan, np.float32))
                fn(src, dst)
            except ValueError as e:  # this kernel does not take the shape
                line["kernels"][kname] = {"refused": str(e)[:80]}
                continue
            ok = bool(np.array_equal(dst.copy_to_host(), ref))
            with PowerSampler() as power:  # the clock and power while it ran back to back
                b2b = back_to_back(lambda: fn(src, dst), repeats=20, max_s=2)
            k = line["kernels"][kname] = {"correct": ok, "median_ms": b2b.median_ms, "p10_ms": b2b.p10_ms,
                                          "p90_ms": b2b.p90_ms, "gbs": nbytes / b2b.median_ms / 1e6,
                                          "power": power.summary() or power.unavailable}
            if kname in ("cublas_sgeam", "library"):  # as a user calls it: one call, the GPU idle before
                one = single_calls(lambda: fn(src, dst), repeats=20, max_s=2)
                k.update(single_ms=one.median_ms, single_gbs=nbytes / one.median_ms / 1e6)
        sgeam = line["kernels"]["cublas_sgeam"]
        cells = []
        for kname, k in line["kernels"].items():
            if "gbs" in k:
                k["pct_sgeam"] = 100 * k["gbs"] / sgeam["gbs"]
                if "single_gbs" in k:
                    k["pct_sgeam_single"] = 100 * k["single_gbs"] / sgeam["single_gbs"]
                cells.append(f"{kname} {k['pct_sgeam']:.0f}%{'' if k['correct'] else ' WRONG'}"
                             + (f" (single {k['pct_sgeam_single']:.0f}%)" if "pct_sgeam_single" in k else ""))
        print(f"{R}x{C}: sgeam {sgeam['gbs']:,.0f} GB/s, copy {line['copy_gbs']:,.0f}; " + ", ".join(cells), flush=True)
        rows_out.append(line)
    record = {"device": name, "date": provenance.now(), "versions": provenance.versions(),
              "git_commit": provenance.git_commit(), "command": " ".join(["python3 tools/transpose_suite.py"] + sys.argv[1:]),
              "rows": rows_out}
    os.makedirs(args.out, exist_ok=True)
    path = results.path_for("transpose-suite", name, directory=args.out)
    with open(path, "w") as f:
        json.dump(record, f, indent=1)
    print("wrote", path)
    return 0 if all(k.get("correct", True) for r in rows_out for k in r["kernels"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
