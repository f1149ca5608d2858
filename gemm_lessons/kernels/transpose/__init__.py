"""The transpose ladder (lesson 09): one kernel per module, see gemm_lessons.kernels.ladder.TRANSPOSE."""
