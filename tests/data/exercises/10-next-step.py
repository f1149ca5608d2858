# Exercise 10-next-step, the teacher notebook's solution (lessons/10_leaderboard.py); the tests take
# their reference answer from here (the package has none a student could import):
# python -m gemm_lessons.check 10-next-step tests/data/exercises/10-next-step.py
from gemm_lessons.teaching import leaderboard

record = leaderboard.lesson_record()


def next_step(kernel, size):
    ### BEGIN SOLUTION
    gains = [(after, change) for _, _, before, after, _, _, change in leaderboard.technique_effects(record, size)
             if before == kernel and change > 2]
    return max(gains, key=lambda g: g[1]) if gains else None
    ### END SOLUTION
