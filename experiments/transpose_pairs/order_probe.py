"""Does the order in which blocks run move pairs' DRAM throughput where dst's rows start off 16
bytes (8190 x 8192)?  The README's open question: with the same instructions, warps and sectors,
pairs reached 65% of DRAM's peak there and 78% at 8192 x 8190; the order in which the blocks'
writes reach DRAM is the candidate the profile could not show.

    python3 -m experiments.transpose_pairs.order_probe --out DIR   (on a GPU, repository root)
    python3 -m experiments.transpose_pairs.order_probe --check     (the simulator: every order exact)

One kernel, `transpose_pairs`' tile and threads (64 x 64, 32 x 16 threads), on a 1-D grid whose
block id is turned into a tile in one of these orders:

* ``rows``: tile rows of src one after another (the library kernel's order, as a 1-D grid);
* ``cols``: tile columns of src one after another, so blocks running together write neighbouring
  segments of the same dst rows and read src rows far apart;
* ``group G``: groups of G tile rows, walked column by column inside a group (Triton's grouped
  order): blocks running together read and write segments of a few kilobytes on both sides;
* ``cols 2d``: the ``cols`` order on a 2-D grid (blockIdx.x the tile row, blockIdx.y the tile
  column), without the 1-D grid's integer division (``pairs_64x16``, the library's kernel, is the
  ``rows`` order on a 2-D grid).

Timed back to back against cuBLAS sgeam, the library and `aligned_stores` in the same run, each
result checked exactly on a NaN-poisoned dst, NVML's clock and power sampled while each ran.
"""
import argparse
import functools
import sys
import time

import numpy as np

import gemm_lessons  # before numba.cuda: it picks the GPU or the simulator
from numba import cuda, float32

from gemm_lessons.core.float4 import load2, store2

SHAPES = [(8190, 8192), (8192, 8190), (8192, 8192), (4098, 8190), (8190, 4098), (16382, 4096)]
ORDERS = {"rows": (0, 1), "cols": (1, 1), "group 8": (2, 8), "group 16": (2, 16), "group 32": (2, 32),
          "cols 2d": (3, 1)}
MORE_SHAPES = [(8192, 4094), (4096, 8190), (4096, 4094), (16384, 1022), (1024, 16382)]  # library: pairs


@functools.lru_cache(maxsize=None)
def make_ordered(ORDER, G, TILE=64, ROWS=16, PAD=1):
    """transpose_pairs' kernel with the tile of block ``blockIdx.x`` chosen by ORDER (0 rows,
    1 cols, 2 groups of G tile rows), or with 3, the tile row and column (blockIdx.x, blockIdx.y)."""
    WIDTH = TILE + PAD
    STEPS = TILE // ROWS

    @cuda.jit
    def pairs_ordered(src, dst):
        tile = cuda.shared.array((TILE, WIDTH), float32)
        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y
        rows, cols = src.shape
        n_r = (rows + TILE - 1) // TILE
        n_c = (cols + TILE - 1) // TILE
        pid = cuda.blockIdx.x
        if ORDER == 0:
            br = pid // n_c
            bc = pid % n_c
        elif ORDER == 1:
            bc = pid // n_r
            br = pid % n_r
        elif ORDER == 3:
            br = pid
            bc = cuda.blockIdx.y
        else:
            in_group = G * n_c
            first = (pid // in_group) * G
            size = min(n_r - first, G)
            br = first + (pid % in_group) % size
            bc = (pid % in_group) // size
        r0 = br * TILE
        c0 = bc * TILE
        c = c0 + 2 * tx
        for p in range(STEPS):
            t = ty + p * ROWS
            if (r0 + t < rows) & (c < cols):
                v0, v1 = load2(src, r0 + t, c)
                tile[t, 2 * tx] = v0
                tile[t, 2 * tx + 1] = v1
        cuda.syncthreads()
        d = r0 + 2 * tx
        for p in range(STEPS):
            j = ty + p * ROWS
            if (c0 + j < cols) & (d < rows):
                store2(dst, c0 + j, d, tile[2 * tx, j], tile[2 * tx + 1, j])

    pairs_ordered.block = (TILE // 2, ROWS)
    pairs_ordered.tile = TILE
    return pairs_ordered


def transpose_ordered(src, dst, order):
    from gemm_lessons.kernels.library.transpose_pairs import require_pairs

    rows, cols = require_pairs(src, dst)
    kernel = make_ordered(*ORDERS[order])
    T = kernel.tile
    n_r, n_c = (rows + T - 1) // T, (cols + T - 1) // T
    kernel[(n_r, n_c) if ORDERS[order][0] == 3 else n_r * n_c, kernel.block](src, dst)


def check(shapes):
    """Every order exact on ``shapes`` (dst poisoned with NaN): the failures, as sentences."""
    bad = []
    for R, C in shapes:
        src = np.random.default_rng(R * 7 + C).random((R, C), dtype=np.float32)
        for order in ORDERS:
            dst = cuda.to_device(np.full((C, R), np.nan, np.float32))
            transpose_ordered(cuda.to_device(src), dst, order)
            if not np.array_equal(dst.copy_to_host(), src.T):
                bad.append(f"{order} at {R} x {C}: not exact")
    return bad


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out")
    p.add_argument("--check", action="store_true", help="only check every order (small shapes, simulator)")
    p.add_argument("--kernels", nargs="+", metavar="NAME", help="time only these (sgeam always): library, "
                   "aligned_64x16, pairs_64x16, 'pairs <order>'")
    p.add_argument("--more", action="store_true", help="add the shapes the library sends to pairs (MORE_SHAPES)")
    p.add_argument("--run", help="a name for a second record (pairs-order-<run>-<device>.json)")
    args = p.parse_args()
    if args.check:
        bad = check([(2, 2), (130, 66), (66, 130), (64 * 9 + 2, 64 * 3 + 6), (64 * 17, 70)])
        print("\n".join(bad) or "every order exact")
        sys.exit(1 if bad else 0)
    if gemm_lessons.SIMULATOR:
        sys.exit("this probe times kernels: run it on a GPU (or --check on the simulator)")
    from experiments._shared import back_to_back_with_power, record, write_record
    from gemm_lessons import library
    from gemm_lessons.kernels.library import transpose_aligned_stores, transpose_pairs
    from gemm_lessons.measure import cublas
    from gemm_lessons.model.counting import transpose_bytes

    t_start = time.perf_counter()
    rows_out = []
    for R, C in SHAPES + (MORE_SHAPES if args.more else []):
        src = cuda.to_device(np.random.default_rng(5).random((R, C), dtype=np.float32))
        ref = src.copy_to_host().T
        dst = cuda.device_array((C, R), np.float32)
        calls = {"cublas_sgeam": lambda: cublas.transpose(src, dst), "library": lambda: library.transpose(src, dst),
                 "aligned_64x16": lambda: transpose_aligned_stores.transpose(src, dst),
                 "pairs_64x16": lambda: transpose_pairs.transpose(src, dst)}
        calls.update({f"pairs {o}": functools.partial(transpose_ordered, src, dst, o) for o in ORDERS})
        calls = {k: fn for k, fn in calls.items() if not args.kernels or k == "cublas_sgeam" or k in args.kernels}
        line = {"shape": [R, C], "kernels": {}}
        for name, fn in calls.items():
            dst.copy_to_device(np.full((C, R), np.nan, np.float32))
            fn()
            ok = bool(np.array_equal(dst.copy_to_host(), ref))
            t, power = back_to_back_with_power(fn, repeats=20, max_s=1.5)
            line["kernels"][name] = {"correct": ok, "median_ms": t.median_ms, "p10_p90_ms": [t.p10_ms, t.p90_ms],
                                     "gbs": transpose_bytes(R, C) / t.median_ms / 1e6, "power": power}
        sgeam = line["kernels"]["cublas_sgeam"]["median_ms"]
        for k in line["kernels"].values():
            k["pct_sgeam"] = 100 * sgeam / k["median_ms"]
        print(f"{R}x{C}: sgeam {sgeam * 1e3:.1f} us; " + ", ".join(
            f"{n} {k['pct_sgeam']:.0f}%{'' if k['correct'] else ' WRONG'}" for n, k in line["kernels"].items()
            if n != "cublas_sgeam"), flush=True)
        rows_out.append(line)
    rec = record("transpose-pairs-order", {"orders": {o: list(v) for o, v in ORDERS.items()}, "tile": [64, 64],
                                           "threads": [32, 16], "rows": rows_out}, t_start)
    write_record("transpose_pairs", rec, args.out, kind="order", run=args.run)


if __name__ == "__main__":
    main()
