# expect: never staged | different rows
# A wrong answer: both loads of a thread take the same float4.
def stage_a(tid, p):
    return tid // 4, 4 * (tid % 4)
