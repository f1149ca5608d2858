"""What differs between the numba-cuda versions the course installs: 0.30 and later on Linux and
Windows, and the 0.20 line on macOS (the newest release with a macOS wheel, pure Python, which runs
only the simulator there).

* ``types``: numba-cuda 0.30 has its own type objects (``numba.cuda.types``); 0.20 uses numba's.
"""
try:
    from numba.cuda import types

    types.Array  # noqa: B018  (0.20's numba.cuda.types exists but lacks the array type)
except (ImportError, AttributeError):
    from numba import types

__all__ = ["types"]
