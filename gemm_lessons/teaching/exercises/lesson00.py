"""Lesson 00's exercises: the exact FLOP count of a plain matrix product, and the arithmetic
intensity of an SGEMM.  A wrong answer that matches a common slip is told which slip it is."""
from gemm_lessons.model import counting
from gemm_lessons.teaching.exercises.core import _close, exercise


FLOPS_00 = (300, 200, 100)  # M, N, K of 00-flops: a shape the lesson's table does not print
INTENSITY_00 = (4096, 4096, 512)  # M, N, K of 00-intensity (beta = 0): not square, not in the table


def _shown(x):
    """A count in full with thousands separators (12,000,000, not 1.2e+07); other values to 4 digits."""
    return f"{int(round(x)):,}" if abs(x - round(x)) < 1e-9 else f"{x:,.4g}"


def _checked(ans, expected, what, slips, rel=1e-4):
    """(ok, message) for a number: right within ``rel``; else which of ``slips`` ((value, what it
    means) pairs) it matches, if any."""
    try:
        value = float(ans)
    except (TypeError, ValueError):
        return False, f"expected a number for {what}, got {ans!r}."
    if _close(value, expected, rel):
        return True, f"{what} = {_shown(expected)}."
    slip = next((why for v, why in slips if _close(value, v, rel)), None)
    return False, f"{_shown(value)} is not {what}" + (f": {slip}." if slip else ".")


def flops_plain(M, N, K):
    """The exact FLOP count of C = A@B: per element of C, K multiplies and K - 1 additions."""
    return (2 * K - 1) * M * N


@exercise("00-flops",
          "count the operations for one element of C, then multiply by the number of elements of C.",
          "one element of A@B is a dot product of length K: how many multiplications, and how many additions "
          "join K products into one sum?",
          "with no alpha and no beta nothing is scaled and nothing is added after the sum; the count per element "
          "is the dot product's alone.",
          answer="answer",
          defines="answer: a number, the exact FLOP count of C = A@B for M=300, N=200, K=100")
def check_flop_count(ans):
    M, N, K = FLOPS_00
    slips = [(counting.sgemm_flops(M, N, K), "that is 2MNK, which counts K additions per element of C: "
                                              "count the additions a sum of K products needs"),
             (counting.sgemm_flops(M, N, K, alpha_beta=True), "that is (2K+2)MN, the count with alpha and beta; "
                                                              "C = A@B has neither"),
             ((2 * K + 1) * M * N, "that counts one operation per element more than the dot product takes"),
             (M * N * K, "that counts the multiplications only")]
    return _checked(ans, flops_plain(M, N, K), f"the FLOP count of C = A@B for M={M}, N={N}, K={K}", slips)


@exercise("00-intensity",
          "arithmetic intensity = FLOP (2MNK) / bytes, for a perfect kernel that reads A and B once and writes "
          "C once.",
          "each float is 4 bytes; with beta = 0, C is written but not read. How many elements do A (M x K), B and C "
          "hold?",
          "FLOP = 2MNK. A perfect kernel moves every element of A, B and C across DRAM exactly once (A and B "
          "read, C written): count those elements, then bytes.",
          answer="answer",
          defines="answer: a number, the FLOP (2MNK) per byte of a 4096x4096x512 SGEMM with beta = 0")
def check_arithmetic_intensity(ans):
    M, N, K = INTENSITY_00
    elements = M * K + K * N + M * N
    slips = [(2 * M * N * K / elements, "that is FLOP per float; a float is 4 bytes"),
             (2 * M * N * K / (4 * (elements + M * N)), "that counts C twice; with beta = 0 C is written, "
                                                        "not read"),
             (counting.sgemm_intensity(M, N, M), f"that is the square {M}^3 from the lesson's table; here K = {K}")]
    slips += [((2 * K + d) * M * N / (4 * elements), f"that puts ({'2K' + (f'{d:+d}' if d else '')})MN FLOP on "
                                                     "top; the intensity uses 2MNK, as every TFLOPS figure does")
              for d in (2, 1, -1)]
    return _checked(ans, counting.sgemm_intensity(M, N, K),
                    f"the arithmetic intensity of a {M}x{N}x{K} SGEMM with beta = 0 (2MNK FLOP per byte)", slips)
