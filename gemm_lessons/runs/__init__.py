"""Programs that measure on a GPU and write the records: python -m gemm_lessons.runs.<name> (bench, shapes, tuning, arch_facts, limiter, power)."""
