# Exercise 00-flops, the teacher notebook's solution (lessons/00_setup_and_roofline.py):
# python -m gemm_lessons.check 00-flops tests/data/exercises/00-flops.py
### BEGIN SOLUTION: answer = None
M, N, K = 300, 200, 100
answer = (2 * K - 1) * M * N  # K multiplies and K-1 adds per element of C
### END SOLUTION
