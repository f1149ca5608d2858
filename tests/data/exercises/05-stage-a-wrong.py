# Exercise 05-stage-a, wrong: neighbouring threads take neighbouring rows, not neighbouring
# float4s of a row.
def stage_a(tid, p):
    return tid % 128, (tid // 128) * 4 + 8 * p
