"""Lesson 03's exercise: the 1-D register tile's kernel (one shared load reused TN times)."""
from gemm_lessons.teaching.exercises.core import exercise
from gemm_lessons.teaching.exercises.kernels_01_04 import _answer_first, _global_reads_ok, _race, _tile, technique_facts


@exercise("03-kernel",
          "the staging is given: yours is the loop over k of one slice. Each thread accumulates TN results of one row "
          "of C, acc[0] .. acc[TN - 1].",
          "for a fixed k, write out the products for acc[0] and for acc[1]: one of the two factors does not depend on "
          "j.",
          "for each k of the slice, one of the two factors is the same for all TN results of the "
          "thread (which?): read it from shared memory once, into a register, and update the TN "
          "accumulators from it and the TN values of the other factor.",
          answer="make_my_reg1d_rows()", technique=True,
          defines="make_my_reg1d_rows(): returns the @cuda.jit kernel (A, B, C, alpha, beta) with .tile = (BM, BN, "
                  "BK, TN)")
def check_register_reuse_1d(ans):
    ok, shapes = _answer_first("03", ans)
    if ok is False:
        return ok, shapes
    tile = _tile(ans, 4, "(BM, BN, BK, TN)")
    TN = tile[3]
    f = technique_facts("03", ans)
    ok, race = _race(f)
    if not ok:
        return ok, race
    ok, reads = _global_reads_ok(f, tile, "it reads global memory where it should read shared memory")
    if not ok:
        return ok, reads
    loads = f["shared_loads_per_kstep"]
    if loads > 1 + TN:
        return False, (f"Right result, but the register reuse is missing: per k-step each thread makes {loads:g} "
                       f"shared-memory loads for its {TN} FMAs ({loads / TN:.3g} per FMA, traced on the simulator). "
                       f"Read the value of sA once into a register and use it for all {TN} products: "
                       f"1 + {TN} = {1 + TN} loads, {(1 + TN) / TN:.3g} per FMA.")
    return True, (f"right result on {shapes}; {reads}; {loads:g} shared-memory loads per k-step for {TN} FMAs "
                  f"({loads / TN:.3g} per FMA), traced on the simulator.")
