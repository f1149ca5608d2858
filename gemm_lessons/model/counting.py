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


def shared_wavefront_ms(wavefronts, sm_count, clock_mhz):
    """Milliseconds that ``wavefronts`` take if each SM's shared memory serves one per clock
    (32 banks x 4 bytes per clock: the CUDA C++ Programming Guide's shared-memory sections) and
    the work is spread over every SM.  At the device's highest clock: a lower bound."""
    return wavefronts / (sm_count * clock_mhz * 1e6) * 1e3


def transpose_conflict_reading(table, unpadded, padded, unpadded_kernel="smem_tile",
                               padded_kernel="smem_padded"):
    """Markdown: is the padded tile's speedup what its saved shared-memory wavefronts are worth?

    ``unpadded`` and ``padded`` are shared_tracer traces of one block of each kernel; ``table`` a
    measure.compare_transpose table timing both on the same matrix.  The estimate adds, to the
    padded kernel's measured time, the time of the extra wavefronts of the unpadded one at one
    wavefront per SM per clock (shared_wavefront_ms)."""
    rows = {r.kernel: r for r in table.rows}
    if unpadded_kernel not in rows or padded_kernel not in rows:
        return f"No timing of `{unpadded_kernel}` and `{padded_kernel}` to read ({table.source})."
    fast, slow, dev = rows[padded_kernel], rows[unpadded_kernel], table.record.device
    ld_u, ld_p = unpadded.totals("ld"), padded.totals("ld")
    blocks = fast.rows * fast.cols / (32 * ld_u["instructions"])  # each warp-wide read moves 32 elements

    def per_block(t):
        return t.totals("ld")["wavefronts"] + t.totals("st")["wavefronts"]

    times = ld_u["wavefronts"] // max(ld_p["wavefronts"], 1)
    extra = (per_block(unpadded) - per_block(padded)) * blocks
    extra_ms = shared_wavefront_ms(extra, dev.sm_count, dev.clock_mhz)
    estimate = fast.median_ms + extra_ms
    copy = rows.get("copy_float4")
    saved = slow.median_ms - fast.median_ms
    text = (
        f"**Why not {times}x?** The conflicts slow one thing only: the shared-memory column reads "
        f"({ld_u['wavefronts']:,} wavefronts per block instead of {ld_p['wavefronts']:,}; with the tile stores, which "
        f"have no conflicts in either kernel, {per_block(unpadded):,} against {per_block(padded):,}). Both kernels "
        f"read and write the same {transpose_bytes(fast.rows, fast.cols) / 2**20:,.0f} MiB of DRAM. Over the "
        f"{blocks:,.0f} blocks of a {fast.rows}x{fast.cols} matrix, the unpadded tile costs {extra / 1e6:,.1f} M more "
        f"wavefronts. Each SM's shared memory serves at most one wavefront per clock (the [32 banks of 4 bytes each "
        f"per clock](https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#shared-memory-5-x) that the "
        f"Programming Guide describes from compute capability 5.x on); on {dev.sm_count} SMs at the highest clock "
        f"({dev.clock_mhz:,.0f} MHz) the extra wavefronts take at least **{extra_ms:.3f} ms**.\n\n"
        f"| | ms per call |\n|---|---:|\n"
        f"| `{padded_kernel}`, measured | {fast.median_ms:.3f} |\n"
        f"| + the extra wavefronts, at least | {extra_ms:.3f} |\n"
        f"| = if nothing overlapped, `{unpadded_kernel}` would take at least | {estimate:.3f} ({estimate / fast.median_ms:.2f}x) |\n"
        f"| `{unpadded_kernel}`, measured | {slow.median_ms:.3f} ({slow.median_ms / fast.median_ms:.2f}x) |\n\n"
        f"({table.source}.) ")
    if estimate > slow.median_ms:
        text += (f"The conflicts added {saved:.3f} ms, less than the {extra_ms:.3f} ms their wavefronts take at "
                 f"least: at least {extra_ms - saved:.3f} ms of that shared-memory work ran while the kernel was "
                 "waiting for something else anyway (if the rate and the clock above hold). ")
    else:
        text += (f"The conflicts added {saved:.3f} ms, more than the {extra_ms:.3f} ms their wavefronts take at "
                 "the highest clock: the clock under load was lower, or something besides the wavefronts cost "
                 "time too. ")
    text += (f"Either way, padding can save at most what the conflicts add ({saved:.3f} ms of "
             f"{slow.median_ms:.3f} ms here); the other {fast.median_ms:.3f} ms stay. Of those, the padded kernel's "
             f"own {per_block(padded) * blocks / 1e6:,.1f} M wavefronts take "
             f"{shared_wavefront_ms(per_block(padded) * blocks, dev.sm_count, dev.clock_mhz):.3f} ms at that rate")
    if copy is not None:
        text += (f", and a copy of the same bytes takes {copy.median_ms:.3f} ms; what fills the rest of the padded "
                 "kernel's time, these numbers do not show")
    return text + "."
