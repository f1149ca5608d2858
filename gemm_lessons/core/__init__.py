"""How kernels are written: the GPU-or-simulator switch, jit, 16-byte loads, compile-time unrolling, input checks, tables and progress bars."""
