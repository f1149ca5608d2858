"""One launch each of cuBLAS sgeam, transpose_pairs (64 x 16 threads) and transpose_aligned_stores
at 8190 x 8192 (dst rows start off 16 bytes: pairs slower) and 8192 x 8190 (pairs faster), for ncu:

    ncu --clock-control none --csv --metrics $(python3 -m experiments.transpose_pairs.pairs_profile metrics) \\
        python3 -m experiments.transpose_pairs.pairs_profile run > ncu-pairs-<device>.csv
(from the repository root)

The question (README, "Left open"): do pairs' 256-byte stores into dst rows that start 8, 16 or 24
bytes into a 32-byte sector cost L2 write sectors or DRAM reads that aligned_stores' do not?
Launch order per shape: sgeam, pairs, aligned_stores."""
import sys

METRICS = ["gpu__time_duration.sum", "dram__bytes_read.sum", "dram__bytes_write.sum",
           "dram__throughput.avg.pct_of_peak_sustained_elapsed",
           "lts__t_sectors_op_write.sum", "lts__t_requests_op_write.sum",
           "lts__t_sectors_op_read.sum", "lts__t_sector_op_read_hit_rate.pct",
           "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum", "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
           "sm__inst_executed.sum", "sm__warps_active.avg.pct_of_peak_sustained_active",
           "smsp__warp_issue_stalled_long_scoreboard_per_warp_active.pct",
           "smsp__warp_issue_stalled_lg_throttle_per_warp_active.pct",
           "launch__registers_per_thread", "launch__block_size"]
SHAPES = [(8190, 8192), (8192, 8190)]

if __name__ == "__main__":
    if sys.argv[1] == "metrics":
        print(",".join(METRICS))
        sys.exit(0)
    import numpy as np
    from numba import cuda

    import gemm_lessons  # noqa: F401
    from gemm_lessons.kernels.library import transpose_aligned_stores, transpose_pairs
    from gemm_lessons.measure import cublas

    for R, C in SHAPES:
        src = cuda.to_device(np.random.default_rng(0).random((R, C), dtype=np.float32))
        dst = cuda.device_array((C, R), np.float32)
        for name, fn in [("cublas_sgeam", lambda: cublas.transpose(src, dst)),
                         ("pairs_64x16", lambda: transpose_pairs.transpose(src, dst, TILE=64, ROWS=16)),
                         ("aligned_64x16", lambda: transpose_aligned_stores.transpose(src, dst))]:
            fn()
            cuda.synchronize()
            print(f"launched {name} {R}x{C}", file=sys.stderr)
