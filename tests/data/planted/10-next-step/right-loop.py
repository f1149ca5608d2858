# A right answer, with a loop and a running best.
from gemm_lessons.teaching import leaderboard

record = leaderboard.lesson_record()


def next_step(kernel, size):
    best = None
    for row in leaderboard.technique_effects(record, size):
        technique, lesson, without, with_it, before, after, change = row
        if without != kernel or change <= 2:
            continue
        if best is None or change > best[1]:
            best = (with_it, change)
    return best
