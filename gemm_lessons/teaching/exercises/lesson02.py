"""Lesson 02's exercises: the global loads of a tiled SGEMM, and the shared-memory tiles kernel."""
from gemm_lessons.model import counting
from gemm_lessons.teaching.exercises.core import _number, exercise
from gemm_lessons.teaching.exercises.kernels_01_04 import _answer_first, _global_reads_ok, _race, _tile, technique_facts


LOADS_02 = (1024, 2048, 512)  # 02-loads: M, N, K
SHAPES_02 = ((64, 32), (128, 16), (256, 8))  # 02-loads: the BM x BN tiles of 2,048 elements to compare


@exercise("02-loads",
          "count for one block, then multiply by the number of blocks: how many values of A and of B does one block "
          "read over all of K? Then compare the three shapes.",
          "a BM x BN tile of C needs BM whole rows of A and BN whole columns of B.",
          "A block of BM x BN outputs reads BM*K values of A and K*BN of B; there are "
          "(M/BM)(N/BN) blocks: MNK(1/BM + 1/BN) in all, smallest where BM and BN are closest.",
          answer="answer",
          defines="answer: a number, the fewest global loads of a 1024x2048x512 SGEMM among 64x32, 128x16 and "
                  "256x8 tiles")
def check_tiled_global_loads(ans):
    M, N, K = LOADS_02
    counts = {shape: counting.tiled_global_loads(M, N, K, *shape) for shape in SHAPES_02}
    best = min(counts, key=counts.get)
    what = f"the fewest global loads of a {M}x{N}x{K} SGEMM among {', '.join(f'{a}x{b}' for a, b in SHAPES_02)} tiles"
    try:
        value = float(ans)
    except (TypeError, ValueError):
        return False, f"expected a number for {what}, got {ans!r}."
    if abs(value - counts[best]) <= 1e-3 * counts[best]:
        return True, f"{what}: {best[0]}x{best[1]} tiles, {counts[best]:,.0f}."
    other = next((shape for shape in counts if shape != best and abs(value - counts[shape]) <= 1e-3 * counts[shape]), None)
    if other:
        return False, f"{value:,.0f} is the count for {other[0]}x{other[1]} tiles; another shape loads fewer."
    return False, f"{value:,.0f} is not {what}."


@exercise("02-kernel",
          "each slice has four phases: copy the slices of A and B into shared memory, wait for every thread, compute "
          "from shared memory, wait again before the next slice overwrites the tiles.",
          "the A tile holds one value per thread, the B tile four (four of its rows per thread); a thread whose value "
          "lies outside M, N or K stores a zero, so that the products stay right.",
          "per slice: each thread copies one value of A (sA[ty, tx]) and BK/BM values of B "
          "(rows ty, ty + BM, ...) from global into shared memory, zeros outside the matrices; "
          "cuda.syncthreads(); the BK products from sA and sB; cuda.syncthreads().",
          answer="my_tiled", technique=True,
          defines="my_tiled: the @cuda.jit kernel (A, B, C, alpha, beta) with my_tiled.tile = (BM, BN, BK)")
def check_shared_memory_tiles(ans):
    ok, shapes = _answer_first("02", ans)
    if ok is False:
        return ok, shapes
    tile = _tile(ans, 3, "(BM, BN, BK)")
    facts = technique_facts("02", ans)
    ok, message = _race(facts)
    if not ok:
        return ok, message
    ok, message = _global_reads_ok(facts, tile, "the tiles are not staged in shared memory")
    if not ok:
        return ok, message
    return True, (f"right result on {shapes}; staged in shared memory: {message}, counted element by "
                  "element on the simulator.")
