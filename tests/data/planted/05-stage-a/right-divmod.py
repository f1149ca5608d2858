# A right answer, with divmod.
def stage_a(tid):
    row, quad = divmod(tid, 2)
    return row, 4 * quad
