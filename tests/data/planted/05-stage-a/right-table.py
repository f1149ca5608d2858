# A right answer, from a table of every float4 of the slice in row order (a list, not a tuple).
FLOAT4S = [[r, c] for r in range(128) for c in (0, 4, 8, 12)]


def stage_a(tid, p):
    return FLOAT4S[256 * p + tid]
