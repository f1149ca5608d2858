"""One launch each of the copy, cuBLAS sgeam and the transpose rungs at 8192^2, for ncu:

    ncu --clock-control none --csv --metrics $(python3 tools/transpose_profile.py metrics) \\
        python3 tools/transpose_profile.py run > ncu-transpose.csv
kept as results/ncu-transpose-<device>.csv (results.path_for("ncu-transpose", device)).
"""
import os
import sys

METRICS = ["gpu__time_duration.sum", "dram__bytes_read.sum", "dram__bytes_write.sum",
           "dram__throughput.avg.pct_of_peak_sustained_elapsed",
           "sm__warps_active.avg.pct_of_peak_sustained_active", "launch__registers_per_thread",
           "launch__grid_size", "launch__block_size", "launch__occupancy_limit_shared_mem",
           "smsp__warp_issue_stalled_long_scoreboard_per_warp_active.pct",
           "smsp__warp_issue_stalled_barrier_per_warp_active.pct"]

if __name__ == "__main__":
    if sys.argv[1] == "metrics":
        print(",".join(METRICS))
        sys.exit(0)
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import numpy as np
    from numba import cuda

    import gemm_lessons  # noqa: F401
    from gemm_lessons.measure import cublas
    from gemm_lessons.kernels import ladder
    from gemm_lessons.kernels.device_copy import copy_kernel

    src = cuda.to_device(np.random.default_rng(0).random((8192, 8192), dtype=np.float32))
    dst = cuda.device_array((8192, 8192), np.float32)
    for name, fn in [("copy_float4", copy_kernel), ("cublas_sgeam", cublas.transpose)] + list(ladder.TRANSPOSE.items()):
        fn(src, dst)
        cuda.synchronize()
        print("launched", name, file=sys.stderr)
