# expect: tid=1, p=0 | row
def stage_a(tid, p):
    return tid % 128, (tid // 128) * 4 + 8 * p
