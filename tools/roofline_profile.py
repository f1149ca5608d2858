"""One launch of every SGEMM rung (ladder order), then cuBLAS, at 4096^3, for ncu:

    ncu --clock-control none --print-units base --csv --metrics $(python3 tools/roofline_profile.py metrics) \\
        python3 tools/roofline_profile.py run > ncu-roofline.csv
kept as results/ncu-roofline-<device>.csv (results.path_for("ncu-roofline", device)); read by
results.roofline_counters and drawn by plots.roofline_rungs (lesson 10): how many bytes each
rung really took from DRAM and from L2, against what its tiles ask global memory for.
"""
import os
import sys

SIZE = 4096
METRICS = ["gpu__time_duration.sum", "dram__bytes_read.sum", "dram__bytes_write.sum", "lts__t_bytes.sum",
           "l1tex__t_bytes_pipe_lsu_mem_global_op_ld.sum",
           "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum", "smsp__inst_executed_op_shared_ld.sum"]

if __name__ == "__main__":
    if sys.argv[1] == "metrics":
        print(",".join(METRICS))
        sys.exit(0)
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import numpy as np
    from numba import cuda

    import gemm_lessons  # noqa: F401
    from gemm_lessons.measure import cublas, problems
    from gemm_lessons.kernels import ladder

    rng = np.random.default_rng(0)
    A = cuda.to_device(problems.random_matrix(SIZE, SIZE, rng))
    B = cuda.to_device(problems.random_matrix(SIZE, SIZE, rng))
    C = cuda.device_array((SIZE, SIZE), np.float32)
    for name, rung in list(ladder.SGEMM.items()) + [("cublas", cublas.sgemm)]:
        rung(A, B, C)
        cuda.synchronize()
        print("launched", name, file=sys.stderr)
