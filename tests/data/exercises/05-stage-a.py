# Exercise 05-stage-a, the teacher notebook's solution (lessons/05_transposed_smem_and_wide_loads.py):
# python -m gemm_lessons.check 05-stage-a tests/data/exercises/05-stage-a.py
def stage_a(tid, p):
    ### BEGIN SOLUTION
    return tid // 4 + 64 * p, (tid % 4) * 4
    ### END SOLUTION
