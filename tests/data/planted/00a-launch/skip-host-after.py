# expect: changed after the last kernel had finished | not by host code
# The right numbers, computed on the host after a kernel that does nothing useful.
from numba import cuda


@cuda.jit
def touch(x, y, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = 0.0


def launch(x, y, out):
    touch[(out.size + 127) // 128, 128](x, y, out)
    out[:] = 2 * x[:] - y[:]
