# A right answer, with divmod: float4 number tid + 256 p in row order.
def stage_a(tid, p):
    row, quad = divmod(tid + 256 * p, 4)
    return row, 4 * quad
