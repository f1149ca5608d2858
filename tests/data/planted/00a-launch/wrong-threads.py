# expect: 256 threads per block | asks for 128
from numba import cuda


@cuda.jit
def k(x, y, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = 2 * x[i] - y[i]


def launch(x, y, out):
    k[(out.size + 255) // 256, 256](x, y, out)
