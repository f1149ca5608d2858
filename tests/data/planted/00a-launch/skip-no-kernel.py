# expect: launched no kernel
# The right numbers, computed without any kernel.


def on_host(a):
    """a's values in a numpy array: a GPU passes device arrays, the simulator numpy arrays."""
    return a.copy_to_host() if hasattr(a, "copy_to_host") else a


def launch(x, y, out):
    out[:] = 2 * on_host(x) - on_host(y)  # on a GPU: copied back to the device
