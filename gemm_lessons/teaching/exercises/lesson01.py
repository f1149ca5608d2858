"""Lesson 01's exercises: the sectors a warp of the naive kernel reads, and the coalesced kernel."""
from gemm_lessons.teaching.exercises.core import exercise
from gemm_lessons.teaching.exercises.kernels_01_04 import SECTORS_PER_KSTEP_LIMIT, _answer_first, technique_facts


SECTORS_BLOCK_X = 16  # 01-sectors: blocks 16 threads wide (16 x 16), the coalesced mapping, K = N = 4096


@exercise("01-sectors",
          "first work out which 32 threads form a warp when blocks are 16 threads wide, and which element of A and of "
          "B each of them reads at one k-step.",
          "threads on the same row of C read the same float of A; threads on the same column the same float of B. "
          "Count the distinct addresses, then the 32-byte sectors they fall in.",
          "A warp is 32 consecutive thread numbers, threadIdx.x fastest: with blocks 16 wide "
          "it holds two rows of 16 threads. A sector is 32 bytes; count the distinct sectors "
          "the 32 threads touch in A and in B.",
          answer="answer",
          defines="answer: a pair (sectors of A, sectors of B)")
def check_warp_sectors(ans):
    from gemm_lessons.teaching.figures import naive_warp_addresses, sectors

    try:
        a, b = ans
    except (TypeError, ValueError):
        return False, "answer with a pair: (sectors of A, sectors of B)."
    addr_a, addr_b = naive_warp_addresses(True, K=4096, N=4096, block_x=SECTORS_BLOCK_X)
    want = (sectors(addr_a), sectors(addr_b))
    if (a, b) == want:
        return True, (f"A: the warp's threads sit on {len(set(addr_a))} rows of C, so they read "
                      f"{len(set(addr_a))} floats of A, 4 x 4096 bytes apart: {want[0]} sectors; B: "
                      f"{len(set(addr_b))} neighbouring floats (64 bytes), read by both rows: {want[1]} sectors. "
                      f"{sum(want)} in all, against 1 + 4 with blocks 32 wide.")
    if (a, b) == (1, 4):
        return False, "(1, 4) is the warp of a block 32 threads wide; here a warp spans two rows of C."
    if a == want[0]:
        return False, f"{(a, b)}: A right; B not. Which floats of B do the two rows of the warp read?"
    if b == want[1]:
        return False, f"{(a, b)}: B right; A not. How many rows of C does the warp cover?"
    return False, f"{(a, b)}: neither A nor B is right."


@exercise("01-kernel",
          "each i must get its own (row, col) of C, every (row, col) must get one i, and threads with i >= M * N must "
          "do nothing.",
          "of the two ways to split i into (row, col), take the one where i and i + 1 are neighbouring columns of one "
          "row: then a warp reads neighbouring floats of B.",
          "a warp is 32 consecutive values of i = cuda.grid(1): make consecutive i walk along a "
          "row of C (the contiguous dimension of C and of B), and guard i < M * N.",
          answer="my_naive_1d", technique=True,
          defines="my_naive_1d: the @cuda.jit kernel (A, B, C, alpha, beta), one thread per element of C, launched in "
                  "1-D (exercises.launch_1d)")
def check_coalesced_kernel(ans):
    ok, shapes = _answer_first("01", ans)
    if ok is False:
        return ok, shapes
    f = technique_facts("01", ans)
    M, N, K = f["shape"]
    a, b = f["A"]["per_read"], f["B"]["per_read"]
    if a + b > SECTORS_PER_KSTEP_LIMIT:
        message = (f"Right result, but not coalesced: at {M}x{N}x{K} (traced on the simulator) a warp's read of A "
                   f"touches {a:.3g} sectors on average and its read of B {b:.3g}: {a + b:.3g} sectors per k-step, "
                   "where a coalesced mapping needs 5 (1 for the float of A the warp shares, 4 for 32 neighbouring "
                   "floats of B). Which elements do 32 consecutive i get?")
        return False, message, 2  # the result is right: quote hint 2 (coalescing), not hint 1 (a right result)
    return True, (f"right result on {shapes}, and coalesced: at {M}x{N}x{K} a warp touches "
                  f"{a:.3g} sector of A and {b:.3g} of B per k-step ({a + b:.3g} of the 32-byte sectors; "
                  "the swapped mapping needs 33).")
