# expect: start a row | threads 0 to 3
# A wrong answer: the float4s in row order, shifted by two, so each group of four threads spans two rows.
def stage_a(tid, p):
    n = (tid + 256 * p + 2) % 512
    return n // 4, 4 * (n % 4)
