"""Lesson 04's exercises: the compute-to-memory ratio of a register patch, and the 2-D register tile."""
from gemm_lessons.model import counting
from gemm_lessons.teaching.exercises.core import exercise
from gemm_lessons.teaching.exercises.kernels_01_04 import _answer_first, _global_reads_ok, _race, _tile, technique_facts


RATIO_04 = 16  # 04-ratio: twice the 8x8 patch's ratio of 8, from a square patch (its side)
MAX_REGISTERS_PER_THREAD = 255  # CUDA's limit on compute capability 9.0


@exercise("04-ratio",
          "for a square x-by-x patch the ratio 2/(1/x + 1/x) is simply x.",
          "the ratio must double; a thread holds one accumulator (one register) per result of its patch.",
          "the side is the x whose ratio is twice the 8x8 patch's; the accumulators are the results of an x-by-x "
          "patch, one each.",
          answer="answer",
          defines="answer: a pair (the side of the square patch, the accumulators a thread needs for it)")
def check_compute_to_memory_ratio(ans):
    side = RATIO_04
    try:
        got = tuple(float(v) for v in ans)
        assert len(got) == 2
    except (TypeError, ValueError, AssertionError):
        return False, "answer with a pair: (side of the square patch, accumulators per thread)."
    if got == (side, side * side):
        return True, (f"a {side}x{side} patch does {side} FLOP per value read, but needs {side * side} accumulators: "
                      f"more than the {MAX_REGISTERS_PER_THREAD} registers a thread may have, before a single operand "
                      "or address. One thread's patch cannot grow that far.")
    if got[0] == side:
        return False, f"the side is right, {got[1]:g} accumulators is not."
    ratio = counting.compute_to_memory_ratio(got[0], got[0]) if got[0] > 0 else 0
    return False, f"a {got[0]:g}x{got[0]:g} patch does {ratio:g} FLOP per value read, not {2 * counting.compute_to_memory_ratio(8, 8):g}."


@exercise("04-kernel",
          "the staging is given: yours is the loop over k of one slice. Each thread owns a TM x TN patch of results, "
          "acc[i, j].",
          "for a fixed k, acc[i, j] needs the value of sA on the thread's row i and the value of sB on its column j: "
          "read each of those TM + TN values into a register once, not once per product.",
          "for each k: TM values of sA (column k, this thread's rows) into a_reg, TN values of "
          "sB (row k, this thread's columns) into b_reg, then acc[i, j] += a_reg[i] * b_reg[j] "
          "for all TM x TN pairs.",
          answer="make_my_reg2d()", technique=True,
          defines="make_my_reg2d(): returns the @cuda.jit kernel (A, B, C, alpha, beta) with .tile = (BM, BN, BK, TM, "
                  "TN)")
def check_register_tile_2d(ans):
    ok, shapes = _answer_first("04", ans)
    if ok is False:
        return ok, shapes
    tile = _tile(ans, 5, "(BM, BN, BK, TM, TN)")
    TM, TN = tile[3:]
    f = technique_facts("04", ans)
    ok, race = _race(f)
    if not ok:
        return ok, race
    ok, reads = _global_reads_ok(f, tile, "it reads global memory where it should read shared memory")
    if not ok:
        return ok, reads
    loads = f["shared_loads_per_kstep"]
    if loads > TM + TN:
        return False, (f"Right result, but no 2-D register tile (outer product): per k-step each thread makes "
                       f"{loads:g} shared-memory loads for its {TM * TN} FMAs ({loads / (TM * TN):.3g} per FMA, "
                       f"traced on the simulator). Load the {TM} values of sA and the {TN} of sB into registers "
                       f"once, then form all {TM * TN} products from registers: {TM + TN} loads, "
                       f"{(TM + TN) / (TM * TN):.3g} per FMA.")
    return True, (f"right result on {shapes}; {reads}; {loads:g} shared-memory loads per k-step for {TM * TN} FMAs "
                  f"({loads / (TM * TN):.3g} per FMA), traced on the simulator.")
