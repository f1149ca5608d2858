# expect: not the technique's description
from gemm_lessons.teaching import leaderboard

record = leaderboard.lesson_record()


def next_step(kernel, size):
    gains = [(what, change) for what, _, before, after, _, _, change in leaderboard.technique_effects(record, size)
             if before == kernel and change > 2]
    return max(gains, key=lambda g: g[1]) if gains else None
