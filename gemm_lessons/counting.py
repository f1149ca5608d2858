"""FLOP, byte and load counting: the formulas every lesson's predictions rest on."""


def sgemm_flops(M, N, K, alpha_beta=False):
    """2MNK for A@B (K multiplies and K adds per element, counting the first add);
    (2K+2)MN for alpha*A@B + beta*C: K mul + (K-1) add, then alpha*, beta*, and one add."""
    if alpha_beta:
        return (2 * K + 2) * M * N
    return 2 * M * N * K


def sgemm_min_bytes(M, N, K, beta=0.0, itemsize=4):
    """Bytes a perfect kernel moves to and from DRAM: read A and B once, write C once,
    and read C once more when beta != 0."""
    return itemsize * (M * K + K * N + M * N * (2 if beta != 0 else 1))


def sgemm_intensity(M, N, K, beta=0.0):
    """Arithmetic intensity in FLOP per DRAM byte (the roofline's x axis)."""
    return sgemm_flops(M, N, K) / sgemm_min_bytes(M, N, K, beta)


def naive_global_loads(M, N, K):
    """One thread per C element reads a row of A and a column of B: 2MNK loads."""
    return 2 * M * N * K


def tiled_global_loads(M, N, K, BM, BN):
    """A block computing a BM x BN tile of C reads BM*K of A and K*BN of B.
    Over (M/BM)(N/BN) blocks: MNK/BN + MNK/BM = MNK(1/BM + 1/BN)."""
    return M * N * K * (1 / BM + 1 / BN)


def compute_to_memory_ratio(x, y):
    """FLOP per shared-memory value for an x-by-y outer product per k-step:
    2xy FLOP from x + y values: 2xy/(x+y) = 2/(1/x + 1/y)."""
    return 2 / (1 / x + 1 / y)


def transpose_bytes(rows, cols, itemsize=4):
    """A transpose reads every element once and writes it once."""
    return 2 * rows * cols * itemsize
