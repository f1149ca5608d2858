"""An experiment that was not kept: split-K in one launch against two, on a GPU.

    git checkout 1fc2bd8 && python3 tools/splitk_probe.py [--out DIR]
        -> DIR/experiments/splitk-probe-<device>.json (default: print only)

gl.sgemm's split-K launches the wide kernel, which writes each block's partial sums to a
workspace, then sgemm_kernels/splitk_reduce.py, which adds them.  Commits c8d6942 and 1fc2bd8
tried the one-launch form CUTLASS calls serial split-K (``TileConfig.serial``: each block
writes its part, a counter per tile, incremented atomically, tells the last block of the tile
to add the parts, in order, so the result is the same bit for bit).  It saved about a
microsecond of host time per call and cost GPU time on every shape and plan timed here, so the
library kept two launches and the kernel lost ``serial`` again (results/README.md, lesson 11):
the probe needs those commits to run.  For each (shape, plan), both forms and (for the tiles
without a register cap) the one-launch form capped at 128 registers:
  * checked: against a float64 product, and one launch against two bit for bit (alpha 1, beta 0
    and alpha 2, beta 0.5 on a random C);
  * timed back to back (CUDA events around batches, gemm_lessons.runs.shapes.back_to_back) and one
    call at a time (shapes.single_calls), medians with p10-p90;
  * host time per call (the call returns, nothing waits), median of 10 batches of 200 calls
    (tools/launch_probe.py's issue_us; the recorded runs averaged the two middle batches, numpy's median).
The shapes: the suite's squares of 512 and 1024 and 1000^3 (which dispatch splits), its skinny
shapes with a long K, each with the plan dispatch chooses now and split 2 or 4 of 128x128.
"""
import argparse
import json
import os
import sys
import time
from dataclasses import replace

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import numpy as np  # noqa: E402

import gemm_lessons  # noqa: E402,F401  (chooses the GPU before numba.cuda is imported)
from gemm_lessons.library import dispatch, device_arrays as library
from gemm_lessons.measure import provenance
from gemm_lessons.records import results  # noqa: E402
from gemm_lessons.measure.device import device_info  # noqa: E402
from gemm_lessons.library.launch import Launcher  # noqa: E402
from gemm_lessons.kernels.library import splitk_reduce
from gemm_lessons.kernels.sgemm import warptile  # noqa: E402
from gemm_lessons.runs.shapes import back_to_back, check_product, random_device_matrix, single_calls  # noqa: E402
from numba import cuda  # noqa: E402
from numba.cuda import types  # noqa: E402

from launch_probe import issue_us  # noqa: E402  (tools/launch_probe.py: host time per call, batches of 200)

ARR, F32 = types.Array(types.float32, 2, "C"), types.float32
SHAPES = [(512, 512, 512), (1024, 1024, 1024), (1000, 1000, 1000), (256, 12288, 12288),
          (64, 8192, 8192), (8192, 64, 8192)]


def forms(plan, M, N):
    """{name: run(A, B, C, alpha, beta)} of one split plan of the wide kernel."""
    cfg = dispatch.TILES[plan.tiles]
    grid = plan.grid(M, N)
    two = Launcher(warptile.kernel_for(replace(cfg, split_k=True)), (ARR, ARR, ARR, F32, F32), cfg.threads)
    reduce = Launcher(splitk_reduce.sgemm_splitk_reduce, (ARR, ARR, F32, F32), splitk_reduce.THREADS)
    W = cuda.device_array((plan.split * M, N), np.float32)

    def run_two(A, B, C, alpha, beta):
        two(grid, A, B, W, 1.0, 0.0)
        reduce(splitk_reduce.grid(M, N), W, C, alpha, beta)

    out = {"two launches": run_two}
    configs = {"one launch": replace(cfg, split_k=True, serial=True)}
    if cfg.max_registers is None:
        configs["one launch, 128 registers"] = replace(cfg, split_k=True, serial=True, max_registers=128)
    for name, c in configs.items():
        one = Launcher(warptile.kernel_for(c), (ARR, ARR, ARR, F32, F32, ARR, library._COUNTERS), c.threads)
        out[name] = (lambda one: lambda A, B, C, alpha, beta: one(
            grid, A, B, C, alpha, beta, W, library._arrivals(grid[0] * grid[1])))(one)
        regs = one.kernel.get_regs_per_thread()  # one compiled signature: its count
        out[name].registers = regs if isinstance(regs, int) else None
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out", default=None)
    args = p.parse_args()
    if gemm_lessons.SIMULATOR:
        sys.exit("the split-K probe times kernels: run it on a GPU")
    if "serial" not in warptile.TileConfig.__dataclass_fields__:
        sys.exit("TileConfig has no `serial` here: the probe runs at commit 1fc2bd8 (see its docstring)")
    t_start = time.perf_counter()
    rng = np.random.default_rng(11)
    rows, failures = [], []
    for M, N, K in SHAPES:
        A_d, A = random_device_matrix(M, K, rng)
        B_d, B = random_device_matrix(K, N, rng)
        C0 = rng.standard_normal((M, N)).astype(np.float32)
        chosen = dispatch.plan_for(M, N, K, True)
        plans = [chosen] + [dispatch.Plan("wide", "128x128", s) for s in (2, 4) if s != chosen.split
                            or chosen.tiles != "128x128"]
        for plan in plans:
            if plan.split == 1:
                continue
            runs = forms(plan, M, N)
            row = {"shape": [M, N, K], "plan": str(plan), "chosen": plan == chosen, "forms": {}}
            outs = {}
            for name, run in runs.items():
                f = row["forms"][name] = {}
                for alpha, beta in ((1.0, 0.0), (2.0, 0.5)):
                    C = cuda.to_device(C0)
                    run(A_d, B_d, C, alpha, beta)
                    outs[name, beta] = C.copy_to_host()
                ok, err, how = check_product(A, B, outs[name, 0.0])
                f.update(correct=ok, rel_error=err, checked=how)
                ref = 2.0 * (A.astype(np.float64) @ B.astype(np.float64)) + 0.5 * C0 if M * N * K <= 2**31 else None
                if ref is not None:
                    f["rel_error_alpha_beta"] = float(np.linalg.norm(outs[name, 0.5] - ref) / np.linalg.norm(ref))
                f["same_bits_as_two_launches"] = bool(all(
                    np.array_equal(outs[name, b].view(np.uint32), outs["two launches", b].view(np.uint32))
                    for b in (0.0, 0.5)))
                if not ok:
                    failures.append((M, N, K, str(plan), name))
                C = cuda.to_device(C0)
                fn = (lambda run, C: lambda: run(A_d, B_d, C, 1.0, 0.0))(run, C)
                f["back_to_back"] = back_to_back(fn).__dict__
                f["single"] = single_calls(fn).__dict__
                f["issue_us"] = issue_us(fn)["median_us"]
                f["registers"] = getattr(run, "registers", None)
            rows.append(row)
            print(f"{M}x{N}x{K} {plan}" + ("  (chosen)" if row["chosen"] else ""), flush=True)
            for name, f in row["forms"].items():
                print(f"   {name:28s} b2b {f['back_to_back']['median_ms']:.4f} ms  single {f['single']['median_ms']:.4f} ms"
                      f"  issue {f['issue_us']:.1f} us  regs {f['registers']}  ok {f['correct']} "
                      f"same bits {f['same_bits_as_two_launches']}", flush=True)
    info = device_info()
    record = {"kind": "splitk-probe", "device": info.name, "date": provenance.now(),
              "versions": provenance.versions(), "git_commit": provenance.git_commit(),
              "command": "python3 tools/splitk_probe.py", "rows": rows, "failures": failures,
              "seconds": round(time.perf_counter() - t_start, 1)}
    if args.out:
        path = results.path_for("splitk-probe", info.name, directory=args.out)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as fh:
            json.dump(record, fh, indent=1)
        print("wrote", path)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
