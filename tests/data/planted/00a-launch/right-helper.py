# A right answer: a device function, the block count by negative floor division, tuples for the launch.
from numba import cuda

THREADS = 128


@cuda.jit(device=True)
def twice_minus(a, b):
    return a + a - b


@cuda.jit
def kernel(x, y, out):
    (i,) = (cuda.grid(1),)
    n = len(out)
    if i < n:
        out[i] = twice_minus(x[i], y[i])


def launch(x, y, out):
    blocks = -(-out.size // THREADS)
    kernel[(blocks,), (THREADS,)](x, y, out)
