"""Lesson 08: the order in which blocks take their tiles of C, and the L2 cache.

Every block of the warptile kernel reads one block-row of A (its BM rows, all K columns) and
one block-column of B (all K rows of its BN columns): two strips.  Blocks in the same tile row of C read
the same block-row of A, blocks in the same tile column the same block-column of B.  Those
reads go through the L2 cache, which all SMs share, so the blocks resident at the same time
decide how much of what they read is already in the L2.

* ``grouped_tile``: which tile block ``pid`` computes in the grouped order of the Triton
  matmul tutorial ("L2 Cache Optimizations",
  https://triton-lang.org/main/getting-started/tutorials/03-matrix-multiplication.html):
  groups of ``group_m`` tile rows, walked column by column within a group; ``group_m = 1`` is
  row-major order.  The kernel gets the same order without dividing: its grid is
  (group_m, tile columns, groups) and block (x, y, z) takes tile (z * group_m + x, y)
  (``kernel_order``; tests/teaching/test_block_order.py checks that the two orders agree).
* ``first_wave`` and ``model``: a model, not a measurement, of what the order does to the L2
  (see ``model``'s docstring for what it assumes).
* ``load_record``, ``load_counters``, ``groups_of``, ``resident_blocks`` and ``l2_size``: what
  ``tools/l2order.py`` measured on a GPU (results/experiments/l2order-<device>.json, timed
  with cuBLAS in the same run, and results/ncu-l2order-<device>.csv, the profiler's L2 and
  DRAM counters), as facts the lesson prints.
"""
import os
from dataclasses import dataclass

from gemm_lessons.records import results

GROUPS = (4, 8, 16)  # the grouped orders tools/l2order.py measures, next to row-major (1)
SIZES = (4096, 8192, 16384)  # square sizes it times
PROFILE_SIZE = 8192  # the size it profiles under ncu, one launch per order
# ncu metrics (Nsight Compute names, sm_70 and later): the L2's hit rate over all its sectors,
# the bytes DRAM delivered, the L2 sectors the SMs read and how many of those hit, the time
METRICS = ["lts__t_sector_hit_rate.pct", "dram__bytes_read.sum", "lts__t_sectors_srcunit_tex_op_read.sum",
           "lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum", "gpu__time_duration.sum"]


# lesson-cell: begin
def grouped_tile(pid, tiles_m, tiles_n, group_m):
    """(tile row, tile column) of C for block ``pid`` of a 1-D grid: groups of ``group_m`` tile
    rows, numbered down each column of a group before the next column (Triton's grouped
    ordering); the last group has fewer rows when group_m does not divide tiles_m.  With
    group_m = 1 this is row-major order: pid // tiles_n, pid % tiles_n."""
    per_group = group_m * tiles_n  # blocks in a full group
    first_row = (pid // per_group) * group_m  # the group's first tile row
    rows = min(tiles_m - first_row, group_m)  # rows in this group (fewer in a ragged last one)
    within = pid % per_group  # position inside the group, down a column first
    return first_row + within % rows, within // rows
# lesson-cell: end


def launch_order(tiles_m, tiles_n, group_m=1):
    """[(tile row, tile column)] in the order of the blocks' linear index."""
    return [grouped_tile(pid, tiles_m, tiles_n, group_m) for pid in range(tiles_m * tiles_n)]


def kernel_order(tiles_m, tiles_n, group_m, grid):
    """The tiles the warptile kernel's blocks compute, in the order of their linear index
    (x fastest, then y, then z), for a launch of ``grid`` blocks (TileConfig.grid): its 3-D
    grouped grid restated in Python, the blocks that return at once left out."""
    gx, gy, gz = (tuple(grid) + (1, 1))[:3]
    out = []
    for z in range(gz):
        for y in range(gy):
            for x in range(gx):
                row, col = (y, x) if group_m == 1 else (z * group_m + x, y)  # as make_kernel's row0, col0
                if row < tiles_m:
                    out.append((row, col))
    return out


def tiles_of(M, N, cfg=None):
    """(tile rows, tile columns) of an M x N result for a TileConfig (the default one if None)."""
    cfg = cfg or _default_config()
    return -(-M // cfg.BM), -(-N // cfg.BN)


def _default_config():
    from gemm_lessons.kernels.sgemm.warptile import TileConfig

    return TileConfig()


@dataclass(frozen=True)
class Wave:
    """Blocks resident at the same time, and the strips of A and B they read."""
    blocks: int
    a_rows: int  # distinct block-rows of A
    b_cols: int  # distinct block-columns of B


def waves(tiles_m, tiles_n, group_m, resident):
    """The launch cut into waves of ``resident`` blocks, in the order of the linear index."""
    order = launch_order(tiles_m, tiles_n, group_m)
    return [Wave(len(w), len({r for r, _ in w}), len({c for _, c in w}))
            for w in (order[i:i + resident] for i in range(0, len(order), resident))]


def first_wave(tiles_m, tiles_n, group_m, resident):
    return waves(tiles_m, tiles_n, group_m, resident)[0]


@dataclass(frozen=True)
class Model:
    """``model``'s numbers for one size and one order."""
    size: tuple
    group_m: int
    first: Wave
    hit_rate: float  # of the first wave's reads of A and B
    slack: float  # BK-deep slices of every strip of the first wave the L2 holds at once
    dram_bytes: float  # A and B read from DRAM by the whole launch
    requested_bytes: float  # A and B the whole launch reads through the L2


def model(M, N, K, group_m, resident, l2_bytes, cfg=None):
    """A model of the L2, not a measurement.  It assumes that blocks start in the order of
    their linear index in waves of ``resident`` blocks (the SMs times the blocks per SM); that
    the blocks of a wave move through K together, so each BK-deep slice of a strip comes from
    DRAM once per wave and every other block of the wave that needs it finds it in the L2; and
    that nothing is kept from one wave to the next.  Then the first wave's hit rate is 1 - (its
    strips) / (its blocks x 2 strips each), and the launch reads the sum over its waves of
    (block-rows x BM + block-columns x BN) x K floats from DRAM.  ``slack``: the L2 holds this
    many BK-deep slices of every strip the first wave reads, so blocks that drift fewer slices
    apart than that still share (how far they really drift, the model does not know)."""
    cfg = cfg or _default_config()
    tiles_m, tiles_n = tiles_of(M, N, cfg)
    ws = waves(tiles_m, tiles_n, group_m, resident)
    w = ws[0]
    strips = w.a_rows * cfg.BM + w.b_cols * cfg.BN  # rows of A plus columns of B, in floats
    return Model(
        size=(M, N, K), group_m=group_m, first=w,
        hit_rate=1 - strips / (w.blocks * (cfg.BM + cfg.BN)),
        slack=l2_bytes / (4 * cfg.BK * strips),
        dram_bytes=4.0 * K * sum(x.a_rows * cfg.BM + x.b_cols * cfg.BN for x in ws),
        requested_bytes=4.0 * K * tiles_m * tiles_n * (cfg.BM + cfg.BN))


def order_name(group_m):
    return "row-major" if group_m == 1 else f"grouped, GROUP_M = {group_m}"


def kernel_name(group_m):
    """The name an order's kernel has in the records."""
    return "warptile" if group_m == 1 else f"warptile_group{group_m}"


def rungs(groups=(1,) + GROUPS):
    """name -> ladder.Rung of the warptile kernel in each order (compiled when first launched;
    none is marked a variant, which the benchmark would stop at 4096)."""
    from dataclasses import replace

    from gemm_lessons.kernels.ladder import Rung
    from gemm_lessons.kernels.sgemm import warptile

    out = {}
    for g in groups:
        cfg = replace(warptile.TileConfig(), group_m=g)
        out[kernel_name(g)] = Rung(kernel_name(g), "08", f"warptile, {order_name(g)} block order", warptile.sgemm,
                                   warptile.kernel_for(cfg), wide=True)
    return out


# --- the records --------------------------------------------------------------------------

NOT_RECORDED = ("Not recorded yet: no block-order measurement in results/ (on a GPU: "
                "`OUT=<dir> bash tools/gpu_run.sh l2order`, then keep <dir>/l2order-<device>.json as "
                "results/experiments/l2order-<device>.json and <dir>/ncu-l2order.csv as "
                "results/ncu-l2order-<device>.csv).")


def load_record(device=None, directory=results.RESULTS_DIR):
    """The block-order experiment (a BenchRecord) of ``device``, else of the reference device,
    else the newest of any device; None when none is recorded."""
    paths = results.files("experiment", directory)
    mine = [p for p in paths if os.path.basename(p).startswith("l2order-")]
    for name in ([device] if device else [results.REFERENCE_DEVICE]):
        path = results.path_for("experiment", name, "l2order", directory=directory)
        if path in mine:
            return results.read(path)
    if device or not mine:
        return None
    return max((results.read(p) for p in mine), key=lambda r: r.date)


def load_counters(device, directory=results.RESULTS_DIR, groups=(1,) + GROUPS):
    """Kernel name -> the profiler's counters of ``device`` at PROFILE_SIZE (tools/l2order.py
    run: one launch per order in ``groups`` order, then cuBLAS, whose launches are summed, its
    hit rate recomputed from the sums), or None when none were recorded."""
    path = results.path_for("ncu-l2order", device, directory=directory)
    if not os.path.exists(path):
        return None
    launches = results.ncu_launches(path)
    names = [kernel_name(g) for g in groups]
    mine = launches[:len(names)]
    if len(mine) < len(names) or not all("sgemm_warptile" in launch["kernel"] for launch in mine):
        raise ValueError(f"{path}: expected {len(names)} launches of sgemm_warptile first, "
                         f"found {[launch['kernel'][:40] for launch in mine]}")
    out = dict(zip(names, mine))
    rest = launches[len(names):]
    if rest:
        out["cublas"] = {k: sum(launch[k] for launch in rest) for k in rest[0]
                         if k.endswith(".sum") and isinstance(rest[0][k], float)}
        if len(rest) == 1:
            out["cublas"]["lts__t_sector_hit_rate.pct"] = rest[0].get("lts__t_sector_hit_rate.pct")
    return out


def groups_of(record):
    """The orders a record holds, row-major first: [(group_m, kernel name)]."""
    named = {kernel_name(g): g for g in (1,) + tuple(range(2, 257))}
    present = {r.kernel for r in record.sgemm}
    return sorted(((named[k], k) for k in present if k in named))


def resident_blocks(record, name="warptile", threads=None):
    """SMs x blocks per SM of kernel ``name`` by the record's device and compiler facts."""
    from gemm_lessons.instruments.compiler_facts import blocks_per_sm

    facts = record.compiler[name]
    threads = threads or _default_config().threads
    return record.device.sm_count * blocks_per_sm(facts["registers"], facts["shared_bytes"], threads)[0]


def _row(record, name, size):
    rows = [r for r in results.sgemm_rows(record, name, size) if r.gflops is not None]
    return rows[0] if rows else None


ASSUMED_L2_BYTES = 50 * 2**20  # an H100: "50 MB" in NVIDIA's documents; until a record gives the driver's size


def l2_size(record=None):
    """(bytes, where the number comes from): the driver's L2 size in the record, else assumed."""
    recorded = record.extra.get("l2_bytes") if record is not None else None
    if recorded:
        return recorded, f"{recorded / 2**20:.0f} MiB, as the driver reported it"
    return ASSUMED_L2_BYTES, (f"{ASSUMED_L2_BYTES / 2**20:.0f} MiB, assumed (an H100's L2; the block-order "
                              "record will hold the size the driver reports)")
