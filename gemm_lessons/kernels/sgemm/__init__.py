"""The SGEMM ladder: one rung per module, in lesson order (see gemm_lessons.kernels.ladder)."""
