# expect: never written | does the grid cover n
from numba import cuda


@cuda.jit
def k(x, y, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = 2 * x[i] - y[i]


def launch(x, y, out):
    k[max(out.size // 128, 1), 128](x, y, out)
