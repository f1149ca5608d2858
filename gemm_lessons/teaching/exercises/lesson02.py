"""Lesson 02's exercises: the global loads of a tiled SGEMM, and the shared-memory tiles kernel."""
from gemm_lessons.model import counting
from gemm_lessons.teaching.exercises.core import _number, exercise
from gemm_lessons.teaching.exercises.kernels_01_04 import _answer_first, _global_reads_ok, _tile, technique_facts


LOADS_02 = (1024, 2048, 512, 64, 32)  # 02-loads: M, N, K and a BM x BN tile the lesson does not count


@exercise("02-loads",
          "count for one block, then multiply by the number of blocks: how many values of A and of B does one block "
          "read over all of K?",
          "a BM x BN tile of C needs BM whole rows of A and BN whole columns of B.",
          "A block of BM x BN outputs reads BM*K values of A and K*BN of B; there are "
          "(M/BM)(N/BN) blocks.",
          answer="answer",
          defines="answer: a number, the global loads of a 1024x2048x512 SGEMM with 64x32 tiles")
def check_tiled_global_loads(ans):
    M, N, K, BM, BN = LOADS_02
    return _number(ans, counting.tiled_global_loads(M, N, K, BM, BN),
                   f"the global loads of a {M}x{N}x{K} SGEMM with {BM}x{BN} tiles")


@exercise("02-kernel",
          "each slice has four phases: copy the slices of A and B into shared memory, wait for every thread, compute "
          "from shared memory, wait again before the next slice overwrites the tiles.",
          "the A tile holds one value per thread, the B tile four (four of its rows per thread); a thread whose value "
          "lies outside M, N or K stores a zero, so that the products stay right.",
          "per slice: each thread copies one value of A (sA[ty, tx]) and BK/BM values of B "
          "(rows ty, ty + BM, ...) from global into shared memory, zeros outside the matrices; "
          "cuda.syncthreads(); the BK products from sA and sB; cuda.syncthreads().",
          answer="my_tiled",
          defines="my_tiled: the @cuda.jit kernel (A, B, C, alpha, beta) with my_tiled.tile = (BM, BN, BK)")
def check_shared_memory_tiles(ans):
    ok, shapes = _answer_first("02", ans)
    if ok is False:
        return ok, shapes
    tile = _tile(ans, 3, "(BM, BN, BK)")
    ok, message = _global_reads_ok(technique_facts("02", ans), tile, "the tiles are not staged in shared memory")
    if not ok:
        return ok, message
    return True, (f"right result on {shapes}; staged in shared memory: {message}, counted element by "
                  "element on the simulator.")
