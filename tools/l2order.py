"""Block order and the L2 cache (lesson 08), on a GPU: the warptile kernel in row-major order and
in grouped orders (block_order.GROUPS), timed with cuBLAS in one process, and one profiled launch
of each.

    python3 tools/l2order.py time [--out DIR]
        checks every order, times them and cuBLAS at block_order.SIZES (cubes), writes
        DIR/experiments/l2order-<device>.json (DIR: results/ by default; a BenchRecord, kind
        "experiment", with the driver's L2 size and each kernel's group_m)
    ncu --clock-control none --csv --print-units base --metrics "$(python3 tools/l2order.py metrics)" \\
        python3 tools/l2order.py run > ncu-l2order.csv
        one launch of each order at block_order.PROFILE_SIZE, then cuBLAS (every kernel is
        compiled before the first launch, outside the profiled kernels); kept as
        results/ncu-l2order-<device>.csv (results.path_for("ncu-l2order", device))

tools/gpu_run.sh step ``l2order`` runs both; gemm_lessons.teaching.block_order reads them for lesson 08.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # this checkout's package

REPEATS = {4096: 20, 8192: 20, 16384: 5}  # samples per kernel; 16384^3 takes ~180 ms a launch


def metrics():
    from gemm_lessons.teaching import block_order

    print(",".join(block_order.METRICS))


def run():
    import gemm_lessons  # noqa: F401  (first: it chooses the GPU before numba.cuda loads)
    import numpy as np
    from numba import cuda

    from gemm_lessons.teaching import block_order
    from gemm_lessons.measure import cublas, problems
    from gemm_lessons.instruments.compiler_facts import SGEMM_SIGNATURE

    n = block_order.PROFILE_SIZE
    rungs = block_order.rungs()
    for rung in rungs.values():  # compile every kernel before the first launch (ncu profiles launches only)
        rung.kernel.compile(SGEMM_SIGNATURE)
    rng = np.random.default_rng(0)
    A = cuda.to_device(problems.random_matrix(n, n, rng))
    B = cuda.to_device(problems.random_matrix(n, n, rng))
    C = cuda.device_array((n, n), np.float32)
    for name, rung in list(rungs.items()) + [("cublas", cublas.sgemm)]:
        rung(A, B, C)
        cuda.synchronize()
        print("launched", name, file=sys.stderr)


def time_orders(out):
    import gemm_lessons  # noqa: F401  (first: it chooses the GPU before numba.cuda loads)
    from numba import cuda

    from gemm_lessons.runs import bench
    from gemm_lessons.instruments import compiler_facts
    from gemm_lessons.measure import rung_timing, provenance
    from gemm_lessons.teaching import block_order
    from gemm_lessons.records import results
    from gemm_lessons.measure.device import device_info
    from gemm_lessons.records.schema import BenchRecord, Device

    rungs = block_order.rungs()
    try:
        l2_bytes = int(cuda.get_current_device().L2_CACHE_SIZE)
    except Exception:  # noqa: BLE001 (an attribute this driver does not report: not recorded)
        l2_bytes = None
    record = BenchRecord(
        device=Device.from_info(device_info()), date=provenance.now(), versions=provenance.versions(),
        git_commit=provenance.git_commit(), nvidia_smi_before=provenance.nvidia_smi(),
        cublas_math_mode="default (FP32, no TF32)", command="python3 tools/l2order.py " + " ".join(sys.argv[1:]),
        extra={"experiment": "block order and the L2 cache (lesson 08)", "l2_bytes": l2_bytes,
               "group_m": {block_order.kernel_name(g): g for g in (1,) + block_order.GROUPS},
               "repeats": {str(n): REPEATS[n] for n in block_order.SIZES}})
    record.checks = rung_timing.run_checks(rungs)
    record.sgemm = []
    for n in block_order.SIZES:  # one size at a time: fewer repeats where a launch is long
        record.sgemm += rung_timing.time_sgemm(rungs, [(n, n, n)], REPEATS[n], progress=False)
    record.compiler = compiler_facts.facts_of({name: r.kernel for name, r in rungs.items()})
    record.nvidia_smi_after = provenance.nvidia_smi()
    path = results.path_for("experiment", record.device.name, "l2order", directory=out)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    record.write(path)
    bench.print_table(record)
    failed = [c for c in record.checks if c.passed is False] + [r for r in record.sgemm if r.correct is False]
    for c in failed:
        print("FAILED:", c)
    print("wrote", path)
    return 1 if failed else 0


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("mode", choices=["time", "metrics", "run"])
    p.add_argument("--out", default=None, help="results directory for `time` (default: the repo's results/)")
    args = p.parse_args()
    if args.mode == "metrics":
        metrics()
    elif args.mode == "run":
        run()
    else:
        from gemm_lessons.core import backend
        from gemm_lessons.records import results as _results

        if backend.SIMULATOR:
            sys.exit("tools/l2order.py time needs a GPU: nothing would be measured on the simulator.")
        sys.exit(time_orders(args.out or _results.RESULTS_DIR))
