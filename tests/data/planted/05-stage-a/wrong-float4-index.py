# expect: counts floats, not float4s | tid=1
def stage_a(tid, p):
    return tid // 4 + 64 * p, tid % 4
