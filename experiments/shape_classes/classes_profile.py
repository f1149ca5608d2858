"""Issue 34's ragged shapes under Nsight Compute: gl.sgemm's plans next to cuBLAS, once each.

    ncu --clock-control none --profile-from-start off --csv --print-units base \
        --metrics "$(python3 -m experiments.shape_classes.classes_profile metrics)" \
        python3 -m experiments.shape_classes.classes_profile run > ncu-shape-classes-<device>.csv

(from the repository root, on a GPU; kept in experiments/shape_classes/ with a first line
'# experiments/shape_classes --profile on DEVICE, DATE, commit C, driver ...').  Per shape, between
cuda.profile_start() and profile_stop(): the plan gl.sgemm chooses, the any-shape and padded
128x128 plans, the wide kernel on the problem rounded up to multiples of 4, and cuBLAS; the
counters of experiments/ncu_vs_cublas plus instructions executed and FFMAs (instructions per
FFMA: the cost of scalar, predicated loads).
"""
import sys

SHAPES = [(4096, 50257, 768), (999, 1001, 1003)]
# experiments/ncu_vs_cublas's counters, and instructions executed, FFMAs and global loads
METRICS = ["gpu__time_duration.sum", "launch__grid_size", "launch__block_size", "launch__registers_per_thread",
           "launch__waves_per_multiprocessor", "sm__warps_active.avg.pct_of_peak_sustained_active",
           "smsp__issue_active.avg.pct_of_peak_sustained_active",
           "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active",
           "dram__bytes_read.sum", "dram__bytes_write.sum", "lts__t_sector_hit_rate.pct",
           "sm__throughput.avg.pct_of_peak_sustained_elapsed",
           "smsp__inst_executed.sum", "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",
           "smsp__sass_inst_executed_op_global_ld.sum", "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"]


def metrics():
    from gemm_lessons.instruments import ncu_metrics

    return ",".join(METRICS + list(ncu_metrics.STALL_METRICS))


def run():
    import numpy as np

    import gemm_lessons  # noqa: F401  (chooses the GPU first)
    from gemm_lessons.library import device_arrays, dispatch
    from gemm_lessons.measure import cublas
    from numba import cuda

    for M, N, K in SHAPES:
        N4, K4 = dispatch.padded_sides(N, K)
        rng = np.random.default_rng(0)
        A = cuda.to_device(rng.standard_normal((M, K4), dtype=np.float32))  # rounded up
        B = cuda.to_device(rng.standard_normal((K4, N4), dtype=np.float32))
        C = cuda.device_array((M, N4), np.float32)
        a = cuda.to_device(rng.standard_normal((M, K), dtype=np.float32))  # the ragged problem
        b = cuda.to_device(rng.standard_normal((K, N), dtype=np.float32))
        c = cuda.device_array((M, N), np.float32)
        calls = {"gl.sgemm": lambda: device_arrays.sgemm(a, b, c),
                 "any_shape 128x128": lambda: device_arrays.run_plan(dispatch.Plan("any_shape", "128x128"), a, b, c),
                 "padded 128x128": lambda: device_arrays.run_plan(dispatch.Plan("padded", "128x128"), a, b, c),
                 "wide 128x128 rounded up": lambda: device_arrays.run_plan(dispatch.Plan("wide", "128x128"), A, B, C),
                 "cuBLAS": lambda: cublas.sgemm(a, b, c)}
        for fn in calls.values():  # compile and warm up outside the profiled range
            fn()
            fn()
        cuda.synchronize()
        for name, fn in calls.items():
            print(f"# {M}x{N}x{K} {name}", file=sys.stderr, flush=True)
            cuda.profile_start()
            fn()
            cuda.synchronize()
            cuda.profile_stop()


if __name__ == "__main__":
    {"metrics": lambda: print(metrics()), "run": run}[sys.argv[1]]()
