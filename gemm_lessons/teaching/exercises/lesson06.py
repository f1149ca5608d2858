"""Lesson 06's exercise: a conflict-free shared-memory layout (padding and the column mapping)."""
import collections

from gemm_lessons.core import backend
from gemm_lessons.teaching.exercises.core import exercise
from gemm_lessons.teaching.exercises.kernels_05_11 import (_log_sgemm, _staged, _on_gpu, _result_right, _sass_lds_report,
                                                           _sites, _tile_launcher)


@exercise("06-conflict-free",
          "the tracer's message names the accesses in conflict: the stores into sAT, the loads from sB, or both. Each "
          "has its own fix: PAD for the first, col_of for the second.",
          "a 16-byte load (LDS.128) needs a 16-byte-aligned address: row k of sAT starts at byte 4 * k * (64 + PAD), "
          "so PAD must be a multiple of 4 for the LDS.128 to survive.",
          "a bank is a 4-byte word's index modulo 32: with rows of 64 floats, one column of every row sits in one "
          "bank; a row of 64 + PAD floats moves each row PAD banks on. For the loads, the 8 lanes of a 16-byte phase "
          "should read 128 contiguous bytes.",
          "two changes: (1) PAD: row k of sAT starts at word k * (64 + PAD); the 4-byte "
          "stores of lanes 2t and 2t+1 go to rows d and d+4: pick PAD so they fall in different "
          "banks, keeping rows 16-byte aligned (PAD a multiple of 4); (2) col_of: with 8 threads "
          "across, let each thread own 4 columns in each half of the tile (4*tc.., 32 + 4*tc..).",
          answer="sgemm_ex06", technique=True,
          defines="sgemm_ex06: the @cuda.jit kernel (A, B, C, alpha, beta) of lesson 06's exercise cell, with PAD and "
                  "col_of")
def check_conflict_free_layout(kernel):
    ok, right = _result_right(_tile_launcher("06-conflict-free"), kernel)
    if not ok:
        return False, right
    if not backend.SIMULATOR:
        return _on_gpu("06-conflict-free", kernel, right, _sass_lds_report)
    log = _log_sgemm("06-conflict-free", kernel, 64, 64, 8)
    skipped = _staged(log, 64, 64, 8)
    if skipped:
        return False, f"{right}, but {skipped} (the transposed A tile)."
    trace = log.shared_trace(merge=("ld", "st"))
    narrow = [i for i in trace.instructions if i.op == "ld" and i.width != 16]
    if narrow:
        return False, (right + ", but some shared loads are no longer 16-byte accesses "
                       f"({_sites(trace, lambda i: i.op == 'ld' and i.width != 16)}): is every row of the A tile "
                       "still 16-byte aligned (PAD a multiple of 4), and does each thread read 4 neighbouring "
                       "columns at a time?"), 2  # quote the alignment hint
    problems = []
    for op, what in (("st", "stores"), ("ld", "loads")):
        bad = collections.OrderedDict()
        for i in trace.instructions:
            if i.op == op and i.cost.conflicts:
                w = bad.setdefault(i.array, [0, 0, 0])
                w[0] += i.cost.wavefronts
                w[1] += i.cost.ideal
                w[2] = max(w[2], i.cost.degree)
        problems += [f"{what} {'into' if op == 'st' else 'from'} {arr}: {wf} wavefronts where {ideal} would do "
                     f"({deg}-way conflicts)" for arr, (wf, ideal, deg) in bad.items()]
    if problems:
        return False, right + ", but the bank tracer (one block) still sees conflicts: " + "; ".join(problems) + "."
    t = trace.totals()
    return True, (right + f"; the tracer (one block) finds no bank conflicts: {t['instructions']} shared "
                  f"instructions, {t['wavefronts']} wavefronts, the ideal, with every load 16 bytes wide.")
