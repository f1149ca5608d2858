"""The SGEMM ladder: one kernel per module, in lesson order (see gemm_lessons.ladder)."""
