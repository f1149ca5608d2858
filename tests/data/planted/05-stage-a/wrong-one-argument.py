# expect: two arguments
# A wrong answer: vec's one float4 per thread, as if BK were still 8.
def stage_a(tid):
    return tid // 2, (tid % 2) * 4
