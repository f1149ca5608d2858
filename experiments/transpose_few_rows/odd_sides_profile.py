"""One launch each of cuBLAS sgeam and library.transpose, and a copy, on the shapes where the
library's transpose stayed below 95% of sgeam on the H200 (8190 x 8192, 8192 x 8190), for ncu:

    ncu --clock-control none --csv --metrics $(python3 experiments/transpose_few_rows/odd_sides_profile.py metrics) \\
        python3 experiments/transpose_few_rows/odd_sides_profile.py run > ncu-odd-sides-<device>.csv
(from the repository root, with it on PYTHONPATH)

Launch order per shape: sgeam, the library's kernel (transpose_aligned_stores), then copy_memcpy
(the driver's device-to-device copy of the same bytes: not a kernel, so ncu lists only the two)."""
import sys

METRICS = ["gpu__time_duration.sum", "dram__bytes_read.sum", "dram__bytes_write.sum",
           "dram__throughput.avg.pct_of_peak_sustained_elapsed", "lts__t_sector_hit_rate.pct",
           "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
           "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum", "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
           "sm__inst_executed.sum", "smsp__issue_active.avg.pct_of_peak_sustained_active",
           "sm__warps_active.avg.pct_of_peak_sustained_active", "launch__grid_size", "launch__block_size",
           "launch__registers_per_thread",
           "smsp__warp_issue_stalled_long_scoreboard_per_warp_active.pct",
           "smsp__warp_issue_stalled_barrier_per_warp_active.pct",
           "smsp__warp_issue_stalled_lg_throttle_per_warp_active.pct"]
SHAPES = [(8190, 8192), (8192, 8190)]

if __name__ == "__main__":
    if sys.argv[1] == "metrics":
        print(",".join(METRICS))
        sys.exit(0)
    import numpy as np
    from numba import cuda

    import gemm_lessons  # noqa: F401
    from gemm_lessons import library
    from gemm_lessons.kernels.device_copy import copy_memcpy
    from gemm_lessons.measure import cublas

    for R, C in SHAPES:
        src = cuda.to_device(np.random.default_rng(0).random((R, C), dtype=np.float32))
        dst = cuda.device_array((C, R), np.float32)
        same = cuda.device_array((R, C), np.float32)
        for name, fn in [("cublas_sgeam", lambda: cublas.transpose(src, dst)),
                         ("library", lambda: library.transpose(src, dst)),
                         ("copy_memcpy", lambda: copy_memcpy(src, same))]:
            fn()
            cuda.synchronize()
            print(f"launched {name} {R}x{C}", file=sys.stderr)
