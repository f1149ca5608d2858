# expect: counts floats, not float4s | tid=1
def stage_a(tid):
    return tid // 2, tid % 2
