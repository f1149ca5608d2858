"""Lesson 00's exercises: the FLOP count and the arithmetic intensity of an SGEMM."""
from gemm_lessons.model import counting
from gemm_lessons.teaching.exercises.core import _number, exercise


FLOPS_00 = (300, 200, 100)  # M, N, K of 00-flops: a shape the lesson's table does not print
INTENSITY_00 = (4096, 4096, 512)  # M, N, K of 00-intensity (beta = 0): not square, not in the table


@exercise("00-flops",
          "count the operations for one element of C, then multiply by the number of elements of C.",
          "one element is a dot product of length K, then alpha times it, plus beta times the old C: count the "
          "multiplications and the additions separately.",
          "the dot product alone takes K multiplies and K-1 adds per element; what do alpha*(...), beta*C and "
          "the + between them add?",
          answer="answer",
          defines="answer: a number, the FLOP count of alpha*A@B + beta*C for M=300, N=200, K=100")
def check_flop_count(ans):
    M, N, K = FLOPS_00
    return _number(ans, counting.sgemm_flops(M, N, K, alpha_beta=True),
                   f"the FLOP count of alpha*A@B + beta*C for M={M}, N={N}, K={K}")


@exercise("00-intensity",
          "arithmetic intensity = FLOP / bytes, for a perfect kernel that reads A and B once and writes C once.",
          "each float is 4 bytes; with beta = 0, C is written but not read. How many elements do A (M x K), B and C "
          "hold?",
          "FLOP = 2MNK. A perfect kernel moves every element of A, B and C across DRAM exactly once (A and B "
          "read, C written): count those elements, then bytes.",
          answer="answer",
          defines="answer: a number, the FLOP per byte of a 4096x4096x512 SGEMM with beta = 0")
def check_arithmetic_intensity(ans):
    M, N, K = INTENSITY_00
    return _number(ans, counting.sgemm_intensity(M, N, K),
                   f"the arithmetic intensity of a {M}x{N}x{K} SGEMM with beta = 0 (FLOP per byte)")
