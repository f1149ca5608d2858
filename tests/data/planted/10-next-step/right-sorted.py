# A right answer: sort the candidates by their change, return a list [kernel, change].
from gemm_lessons.teaching import leaderboard as lb

bench = lb.lesson_record()


def next_step(kernel, size):
    rows = sorted((r for r in lb.technique_effects(bench, size) if r[2] == kernel and r[6] > 2),
                  key=lambda r: r[6], reverse=True)
    return [rows[0][3], rows[0][6]] if rows else None
