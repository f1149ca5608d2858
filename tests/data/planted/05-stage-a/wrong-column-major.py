# expect: tid=1 | row
def stage_a(tid):
    return tid % 128, (tid // 128) * 4
