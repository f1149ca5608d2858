# expect: changed after the last kernel had finished | not by host code
# The right numbers, computed on the host after a kernel that does nothing useful.
from numba import cuda


def on_host(a):
    """a's values in a numpy array: a GPU passes device arrays, the simulator numpy arrays."""
    return a.copy_to_host() if hasattr(a, "copy_to_host") else a


@cuda.jit
def touch(x, y, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = 0.0


def launch(x, y, out):
    touch[(out.size + 127) // 128, 128](x, y, out)
    out[:] = 2 * on_host(x) - on_host(y)  # on a GPU: copied back to the device
