"""gl.sgemm's kernels next to cuBLAS's under Nsight Compute, at the shapes where gl.sgemm is slowest.

    ncu --clock-control none --profile-from-start off --csv --print-units base \
        --metrics "$(python3 -m experiments.ncu_vs_cublas.ncu_vs_cublas metrics)" \
        python3 -m experiments.ncu_vs_cublas.ncu_vs_cublas run > ncu-vs-cublas-<device>.csv
    python3 -m experiments.ncu_vs_cublas.ncu_vs_cublas table ncu-vs-cublas-<device>.csv   # the table lesson 11 renders

(from the repository root; the CSV, with a '# ... run on DEVICE, DATE, commit C, driver ...' line
put first, is kept in experiments/ncu_vs_cublas/)

``run`` makes the operands of each shape, warms every call up outside the profiled range, then
between cuda.profile_start() and profile_stop() makes each call once: gl.sgemm (the plan
dispatch chooses, every kernel it launches), the wide kernel whole (no split) and cuBLAS
(nvmath-python).  The counters: the time of each kernel, its grid and block, registers, achieved
occupancy, issue slots used, the FMA pipe's share of cycles, DRAM bytes, the L2 hit rate and the
top warp stall reasons (gemm_lessons.instruments.ncu_metrics's metric names; Nsight Compute's Profiling Guide,
https://docs.nvidia.com/nsight-compute/ProfilingGuide/).  The clocks are left as they are.
"""
import sys

SHAPES = [(1024, 1024, 1024), (1000, 1000, 1000), (16384, 16384, 16384)]
METRICS = ["gpu__time_duration.sum", "launch__grid_size", "launch__block_size", "launch__registers_per_thread",
           "launch__waves_per_multiprocessor", "sm__warps_active.avg.pct_of_peak_sustained_active",
           "smsp__issue_active.avg.pct_of_peak_sustained_active",
           "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active",
           "dram__bytes_read.sum", "dram__bytes_write.sum", "lts__t_sector_hit_rate.pct",
           "sm__throughput.avg.pct_of_peak_sustained_elapsed"]


def metrics():
    from gemm_lessons.instruments import ncu_metrics

    return METRICS + list(ncu_metrics.STALL_METRICS)


def run():
    import numpy as np

    import gemm_lessons  # noqa: F401  (chooses the GPU first)
    from gemm_lessons.measure import cublas
    from gemm_lessons.library import dispatch, device_arrays
    from gemm_lessons.instruments import profiler
    from gemm_lessons.runs.shapes import random_device_matrix
    from numba import cuda

    rng = np.random.default_rng(3)
    for M, N, K in SHAPES:
        A, _ = random_device_matrix(M, K, rng)
        B, _ = random_device_matrix(K, N, rng)
        C = cuda.device_array((M, N), np.float32)
        calls = {"gl.sgemm " + str(dispatch.plan_for(M, N, K, True)): lambda: device_arrays.sgemm(A, B, C),
                 "wide 128x128 (no split)": lambda: device_arrays.run_plan(dispatch.Plan("wide", "128x128"), A, B, C),
                 "cublas": lambda: cublas.sgemm(A, B, C)}
        profiler.profile_calls(calls, warmups=3, prefix=f"{M}x{N}x{K} ")


def table(path):
    from gemm_lessons.instruments.ncu_metrics import top_stalls
    from gemm_lessons.teaching.lesson11 import profile_comparison

    profile = profile_comparison.ncu_versus_cublas(path=path)
    if not profile:
        print("no profile recorded")
        return
    header, pairs = profile
    print(header)
    print("shape | call | kernel | us | blocks | registers | occupancy % | issue busy % | FMA busy % | L2 hit % "
          "| DRAM read MB | top stalls %")
    for call, k in pairs:
        shape, who = call.split(" ", 1)
        stalls = ", ".join(f"{r} {v:.0f}" for r, v in top_stalls(k, 2))
        print(f"{shape} | {who} | {profile_comparison.kernel_label(k['kernel'])} | {k['gpu__time_duration.sum'] / 1e3:.1f} "
              f"| {k['launch__grid_size']:.0f} | {k['launch__registers_per_thread']:.0f} "
              f"| {k['sm__warps_active.avg.pct_of_peak_sustained_active']:.1f} "
              f"| {k['smsp__issue_active.avg.pct_of_peak_sustained_active']:.1f} "
              f"| {k['sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active']:.1f} "
              f"| {k['lts__t_sector_hit_rate.pct']:.1f} | {k['dram__bytes_read.sum'] / 1e6:.1f} | {stalls}")


if __name__ == "__main__":
    what = sys.argv[1] if len(sys.argv) > 1 else "run"
    if what == "metrics":
        print(",".join(metrics()))
    elif what == "run":
        run()
    else:
        table(sys.argv[2])
