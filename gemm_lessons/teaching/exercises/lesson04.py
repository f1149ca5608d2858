"""Lesson 04's exercises: the compute-to-memory ratio of a register patch, and the 2-D register tile."""
from gemm_lessons.model import counting
from gemm_lessons.teaching.exercises.core import _close, exercise
from gemm_lessons.teaching.exercises.kernels_01_04 import _answer_first, _global_reads_ok, _tile, technique_facts


RATIO_04 = ((8, 4), (32, 1))  # 04-ratio: two patches of 32 results, not in the lesson's printed table


@exercise("04-ratio",
          "the ratio compares the FLOP of one k-step of the patch with the values it reads for that k-step.",
          "an x-by-y patch does x*y multiply-adds (2 FLOP each) per k-step and reads x values of A and y of B.",
          "x*y products per k-step need x values of A and y of B: ratio = 2xy/(x+y).",
          answer="answer",
          defines="answer: a pair of numbers, the ratios of the 8x4 and the 32x1 patch")
def check_compute_to_memory_ratio(ans):
    (x1, y1), (x2, y2) = RATIO_04
    try:
        got = tuple(float(v) for v in ans)
        assert len(got) == 2
    except (TypeError, ValueError, AssertionError):
        return False, f"answer with a pair: (ratio for {x1}x{y1}, ratio for {x2}x{y2})."
    want = (counting.compute_to_memory_ratio(x1, y1), counting.compute_to_memory_ratio(x2, y2))
    if _close(got[0], want[0], 1e-3) and _close(got[1], want[1], 1e-3):
        return True, (f"{x1}x{y1} gives {want[0]:.3g} FLOP per value read, {x2}x{y2} only {want[1]:.3g}: for the "
                      "same number of results, the squarer patch reuses more.")
    return False, f"({got[0]:g}, {got[1]:g}) is not right."


@exercise("04-kernel",
          "the staging is given: yours is the loop over k of one slice. Each thread owns a TM x TN patch of results, "
          "acc[i, j].",
          "for a fixed k, acc[i, j] needs the value of sA on the thread's row i and the value of sB on its column j: "
          "read each of those TM + TN values into a register once, not once per product.",
          "for each k: TM values of sA (column k, this thread's rows) into a_reg, TN values of "
          "sB (row k, this thread's columns) into b_reg, then acc[i, j] += a_reg[i] * b_reg[j] "
          "for all TM x TN pairs.",
          answer="make_my_reg2d()",
          defines="make_my_reg2d(): returns the @cuda.jit kernel (A, B, C, alpha, beta) with .tile = (BM, BN, BK, TM, "
                  "TN)")
def check_register_tile_2d(ans):
    ok, shapes = _answer_first("04", ans)
    if ok is False:
        return ok, shapes
    tile = _tile(ans, 5, "(BM, BN, BK, TM, TN)")
    TM, TN = tile[3:]
    f = technique_facts("04", ans)
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
