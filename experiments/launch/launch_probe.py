"""Where gl.sgemm's per-call time goes, on a GPU: each part timed alone, in one process.

    python3 -m experiments.launch.launch_probe [--out DIR]   -> DIR/launch-probe-<device>.json (default: print only)
    (from the repository root, on a GPU; kept in experiments/launch/)

Host time per call ("issue": the call returns, nothing waits for the GPU), median of 10
batches of 200 calls with a synchronize between batches, for:
  * gl.sgemm(A, B, C) with its Launchers launching through the driver (cuLaunchKernel on a
    packed parameter buffer, the default) and through cuda.core's ``launch``, on a one-kernel
    plan (128^2) and a split-K plan (two kernels, 512^2);
  * its parts: the checks and the plan look-up alone (the launches replaced by nothing), one
    Launcher call each way, the argument flattening alone;
  * torch.matmul on torch tensors of the same size, for scale (when torch is there).
Before timing, both launch paths are checked against a float64 product and against each other
(bit for bit) on one-kernel, split-K, any-shape and padded plans.
"""
import argparse
import sys

import numpy as np

import gemm_lessons  # noqa: F401  (chooses the GPU before numba.cuda is imported)
from gemm_lessons.library import dispatch, launch, device_arrays as library
from gemm_lessons.measure import provenance
from gemm_lessons.measure.device import device_info
from gemm_lessons.runs.shapes import POISON, check_product, random_device_matrix
from numba import cuda

from experiments._shared import batch_issue_us, write_record


def issue_us(fn, calls=200, batches=10):
    per = batch_issue_us(fn, calls, batches)
    return {"median_us": per[len(per) // 2], "min_us": per[0], "max_us": per[-1]}


def use(via):
    """Start library's Launchers again, launching ``via`` "driver" or "cuda.core"."""
    library._LAUNCHERS.clear()
    library._RUNS.clear()
    library.Launcher = lambda *a: launch.Launcher(*a, via=via)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out", default=None)
    args = p.parse_args()
    if gemm_lessons.SIMULATOR:
        sys.exit("the launch probe times launches: run it on a GPU")
    rng = np.random.default_rng(7)
    record = {"device": device_info().name, "date": provenance.now(), "versions": provenance.versions(),
              "git_commit": provenance.git_commit(), "checks": [], "timings": {}}
    # correctness first: each plan kind, both launch paths, against float64 and each other
    outs = {}
    for via in ("driver", "cuda.core"):
        use(via)
        for M, N, K in ((128, 128, 128), (512, 512, 512), (64, 2048, 8192), (300, 260, 130), (1027, 1030, 1031)):
            A_d, A = random_device_matrix(M, K, np.random.default_rng(M + N + K))
            B_d, B = random_device_matrix(K, N, np.random.default_rng(M * N + K))
            C_d = cuda.to_device(np.full((M, N), POISON, np.float32))
            plan = library.plan_of(A_d, B_d, C_d)
            library.sgemm(A_d, B_d, C_d)
            C = C_d.copy_to_host()
            ok, err, _ = check_product(A, B, C)
            same = None
            if (M, N, K) in outs:
                same = bool(np.array_equal(outs[(M, N, K)], C))
            outs[(M, N, K)] = C
            line = {"via": via, "shape": [M, N, K], "plan": str(plan), "correct": bool(ok), "rel_error": float(err),
                    "same_as_driver": same}
            record["checks"].append(line)
            print(line, flush=True)
        print({k: repr(v) for k, v in library._LAUNCHERS.items()}, flush=True)
    T = record["timings"]
    for n in (128, 512):
        A_d, _ = random_device_matrix(n, n, rng)
        B_d, _ = random_device_matrix(n, n, rng)
        C_d = cuda.device_array((n, n), np.float32)
        for via in ("driver", "cuda.core"):
            use(via)
            T[f"gl.sgemm {n}^2 via {via} ({library.plan_of(A_d, B_d, C_d)})"] = issue_us(
                lambda: library.sgemm(A_d, B_d, C_d))
        # the checks and plan look-up alone
        library.sgemm(A_d, B_d, C_d)
        key = next(iter(library._RUNS))
        real = library._RUNS[key]
        library._RUNS[key] = lambda *a: None
        T[f"checks + plan look-up only {n}^2"] = issue_us(lambda: library.sgemm(A_d, B_d, C_d))
        library._RUNS[key] = real
        try:
            import torch

            a, b = torch.rand(n, n, device="cuda"), torch.rand(n, n, device="cuda")
            c = torch.empty(n, n, device="cuda")
            torch.backends.cuda.matmul.allow_tf32 = False
            T[f"torch.matmul(a, b, out=c) {n}^2"] = issue_us(lambda: torch.matmul(a, b, out=c))
        except Exception as e:  # noqa: BLE001
            T[f"torch {n}^2"] = {"error": repr(e)}
    n = 128
    A_d, _ = random_device_matrix(n, n, rng)
    B_d, _ = random_device_matrix(n, n, rng)
    C_d = cuda.device_array((n, n), np.float32)
    grid = dispatch.Plan("wide", "64x64").grid(n, n)
    for via in ("driver", "cuda.core"):
        lw = launch.Launcher(*library.kernel_spec("wide", "64x64", "C"), via=via)
        T[f"one Launcher call via {via} (wide 64x64, {n}^2)"] = issue_us(lambda: lw(grid, A_d, B_d, C_d, 1.0, 0.0))
    m = launch._marshal_array
    T["flattening three arrays"] = issue_us(lambda: [*m(A_d), *m(B_d), *m(C_d)])
    T["A.device_ctypes_pointer.value"] = issue_us(lambda: A_d.device_ctypes_pointer.value)
    for k, v in T.items():
        print(f"{k:70s} {v}", flush=True)
    write_record("launch", record, args.out)
    return 0 if all(c["correct"] and c["same_as_driver"] in (None, True) for c in record["checks"]) else 1


if __name__ == "__main__":
    sys.exit(main())
