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


# (BM, BN, TM, TN) of each SGEMM rung: a block computes BM x BN of C, a thread TM x TN of it, and
# per k-step a thread reads TM values of A and TN of B from shared memory (reg1d: TM of A and one
# of B; naive: no shared memory, every value from global memory, as if BM = BN = 1)
RUNG_TILES = {"naive": (1, 1, 1, 1), "naive_uncoalesced": (1, 1, 1, 1), "smem_tile": (32, 32, 1, 1),
              "smem_tile16": (16, 16, 1, 1), "reg1d": (128, 128, 16, 1), "reg1d_64x64": (64, 64, 8, 1),
              "reg2d": (128, 128, 8, 8),
              "vec": (128, 128, 8, 8), "vec_split": (128, 128, 8, 8), "dbuf": (128, 128, 8, 8),
              "warptile": (128, 128, 8, 8)}


def sgemm_traffic(name, M, N, K):
    """Values a rung reads per product, from its tiles: ``global`` = MNK(1/BM + 1/BN) (lesson
    02's formula; the naive kernel reads 2MNK) and ``shared`` = MNK(1/TM + 1/TN) (0 for the
    naive kernels), in 4-byte values.  What the kernel *asks* global memory for: the L1 and L2
    caches serve part of it, so DRAM sees less (the profiler measures how much)."""
    BM, BN, TM, TN = RUNG_TILES[name]
    shared = 0 if name.startswith("naive") else M * N * K * (1 / TM + 1 / TN)
    return {"global": tiled_global_loads(M, N, K, BM, BN), "shared": shared}
