"""The GPU's ceilings from its counts (SMs, banks, clock): the arithmetic, no measurement."""


def shared_bandwidth_gbs(sm_count, clock_mhz):
    """Shared memory's peak in GB/s: 32 banks x 4 bytes per clock per SM (CUDA C++ Programming
    Guide, "Shared Memory" in the compute-capability sections) x SMs x clock."""
    if None in (sm_count, clock_mhz):
        return None
    return sm_count * 32 * 4 * clock_mhz * 1e6 / 1e9
