# expect: 2 apart | neighbouring float4s
# A wrong answer: each thread's two float4s side by side, so one load instruction skips every other float4.
def stage_a(tid, p):
    n = 2 * tid + p
    return n // 4, (n % 4) * 4
