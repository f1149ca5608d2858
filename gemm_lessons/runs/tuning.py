"""Lesson 08's parameter sweep over warptile.TileConfig, with a progress bar and a heatmap.

    python -m gemm_lessons.runs.tuning [--size 4096] [--out results/tuning-<device>.json]

For every configuration: rules are checked first (an invalid one is listed with the reason
and never compiled or launched), then the kernel is compiled, checked against a float64
reference at an awkward small shape, and timed at ``size`` next to cuBLAS measured in the same
run.  Registers, local memory (spills) and blocks per SM come from the compiler.  On the
simulator nothing is timed: the sweep only validates and checks (at small sizes), and the
lesson shows the recorded sweep from a GPU.
"""
import argparse
import functools
import itertools
import os
import re
import sys
import time
from dataclasses import asdict, replace

import matplotlib.pyplot as plt
import numpy as np

from gemm_lessons.core import backend, tables
from gemm_lessons.measure import provenance
from gemm_lessons.records import results
from gemm_lessons.measure.rung_timing import time_sgemm
from gemm_lessons.measure.device import device_info
from gemm_lessons.instruments.compiler_facts import blocks_per_sm, resources
from gemm_lessons.measure.problems import check
from gemm_lessons.core.progress import bar
from gemm_lessons.records.schema import Device, TuningRecord, TuningRow, TuningRun
from gemm_lessons.measure.timing import range_order
from gemm_lessons.kernels.sgemm import warptile
from gemm_lessons.kernels.sgemm.warptile import TileConfig

CHECK_SHAPE = (259, 132, 68)  # rows, columns and depth that are not multiples of any tile


def parse_config(text):
    """TileConfig from "BK=16,guard=select,max_registers=None" (the tools' command lines)."""
    def value(v):
        return None if v == "None" else int(v) if v.lstrip("-").isdigit() else v

    return TileConfig(**{k: value(v) for k, v in (kv.split("=") for kv in text.split(",") if kv)})


def grid(base=TileConfig(), **axes):
    """Every combination of the values in ``axes`` applied to ``base``, e.g.
    grid(BK=[8, 16], max_registers=[128, None])."""
    names = list(axes)
    return [replace(base, **dict(zip(names, values))) for values in itertools.product(*axes.values())]


def sweep(configs, size=(4096, 4096, 4096), repeats=10, progress=True, check_shape=CHECK_SHAPE):
    """One records.TuningRow per configuration (see module doc); cuBLAS's row comes first on a GPU."""
    rows = []
    cublas_gflops = None
    if not backend.SIMULATOR:
        cublas_gflops = time_sgemm({}, [tuple(size)], repeats, progress=False)[0].gflops
        rows.append(TuningRow(label="cuBLAS", gflops=cublas_gflops, pct_cublas=100.0))
    pbar = bar(len(configs), "sweeping tile configurations", progress)
    for cfg in configs:
        row = TuningRow(config=asdict(cfg), label=cfg.short())
        rows.append(row)
        pbar.set_postfix_str(cfg.short())
        try:
            cfg.validate()
        except ValueError as e:
            row.invalid = str(e)
            pbar.update()
            continue
        row.threads = cfg.threads
        t0 = time.perf_counter()
        kernel = warptile.kernel_for(cfg)
        fn = functools.partial(warptile.sgemm, config=cfg)
        report = check(fn, *check_shape, alpha=0.5, beta=-1.0, name=cfg.short())
        row.compile_and_check_s = round(time.perf_counter() - t0, 2)
        row.correct = report.passed
        row.rel_error = report.rel_error
        if not report.passed:
            row.error = report.message()
        if not backend.SIMULATOR and report.passed:
            res = resources(kernel)
            row.registers, row.local_bytes, row.shared_bytes = res["registers"], res["local_bytes"], res["shared_bytes"]
            row.blocks_per_sm, row.limited_by = blocks_per_sm(res["registers"], res["shared_bytes"], cfg.threads)
            timed = [r for r in time_sgemm({cfg.short(): fn}, [tuple(size)], repeats, progress=False)
                     if r.kernel == cfg.short()][0]
            row.gflops, row.gflops_p10, row.gflops_p90 = timed.gflops, timed.gflops_p10, timed.gflops_p90
            row.correct_at_size, row.rel_error_vs_cublas = timed.correct, timed.rel_error_vs_cublas
            row.pct_cublas = 100 * timed.gflops / cublas_gflops
        pbar.update()
    pbar.close()
    return rows


def best(rows):
    timed = [r for r in rows if r.config and r.gflops and r.correct_at_size]
    return max(timed, key=lambda r: r.gflops) if timed else None


def _blank(value):
    return "" if value is None else value


def table_markdown(rows, top=None):
    """The rows as a table, fastest first (the ``top`` fastest only, if given), then the rows
    without a timing (invalid, or not timed on the simulator)."""
    timed = sorted([r for r in rows if r.gflops], key=lambda r: -r.gflops)
    others = [r for r in rows if not r.gflops]
    body = [[r.label, f"{r.gflops / 1e3:.2f}" if r.gflops else "", f"{r.pct_cublas:.1f}%" if r.pct_cublas else "",
             _blank(r.threads), _blank(r.registers), _blank(r.local_bytes),
             f"{r.blocks_per_sm} ({r.limited_by})" if r.blocks_per_sm else "",
             r.invalid or ("WRONG RESULT" if r.correct is False else "")]
            for r in (timed[:top] if top else timed) + others]
    return tables.markdown(["configuration", "TFLOPS", "% cuBLAS", "threads", "registers", "spill bytes", "blocks/SM",
                            "note"], body, "lrrrrrrl")


def _fields(fields):
    return (fields,) if isinstance(fields, str) else tuple(fields)


def single_changes(rows, fields, before):
    """Pairs (a, b) of timed rows whose configurations differ in ``fields`` and nothing else
    (a field name, or a tuple of names that change together such as ("WM", "WN")), ``a`` the
    one with the values ``before`` (a value, or a tuple of values)."""
    fields = _fields(fields)
    before = (before,) if len(fields) == 1 else tuple(before)
    timed = [(r, TileConfig(**r.config)) for r in rows if r.config and r.gflops]
    out = []
    for a, ca in timed:
        if tuple(getattr(ca, f) for f in fields) != before:
            continue
        for b, cb in timed:
            if {f for f in TileConfig.__dataclass_fields__ if getattr(ca, f) != getattr(cb, f)} == set(fields):
                out.append((a, b))
    return out


def same_run(a, b):
    """Whether two rows of a recorded sweep were timed in the same run (the same cuBLAS timing)."""
    return a.cublas_gflops_same_run is not None and a.cublas_gflops_same_run == b.cublas_gflops_same_run


def ranges_apart(a, b):
    """Whether the p10-p90 ranges of two rows do not overlap (timing.range_order)."""
    return range_order((a.gflops_p10, a.gflops_p90), (b.gflops_p10, b.gflops_p90)) != 0


def change_pct(a, b):
    """b's TFLOPS against a's, in % (from the unrounded timings)."""
    return 100 * (b.gflops / a.gflops - 1)


# The single changes lesson 08 reads, each (fields, value before the change): one buffer -> two,
# BK 8 -> 16, the register cap off, a 64-row block, lesson 07's warp layout, no padding,
# spread staging, the predicated if.
CHANGES = [("stages", 1), ("BK", 8), ("max_registers", 128), ("BM", 128), (("WM", "WN"), (32, 64)),
           ("pad_a", 4), ("spread", False), ("guard", "select")]


def changes_markdown(rows, changes=CHANGES, same=None):
    """Every pair of timed configurations that differ in one change of ``changes`` (see
    single_changes): TFLOPS before and after, the change (from the unrounded timings), whether
    the two were timed in the same run and then whether their p10-p90 ranges are apart, and
    threads, registers, spill bytes and blocks per SM, "before → after" where they differ.
    ``same`` (a margin in %): add a verdict column, "tie" where the change is at most ``same``
    or the ranges overlap, else "faster" or "slower"."""
    def both(x, y):
        return f"{_blank(x)}" if x == y else f"{_blank(x)} → {_blank(y)}"

    body = []
    for fields, before in changes:
        names = _fields(fields)
        for a, b in single_changes(rows, fields, before):
            ca, cb = TileConfig(**a.config), TileConfig(**b.config)
            values = ["x".join(str(getattr(c, f)) for f in names) for c in (ca, cb)]
            runs = ("different runs" if not same_run(a, b)
                    else "same run, ranges apart" if ranges_apart(a, b) else "same run, ranges overlap")
            pct = change_pct(a, b)
            verdict = ([] if same is None else
                       ["tie" if abs(pct) <= same or not ranges_apart(a, b) else "faster" if pct > 0 else "slower"])
            body.append([f"{'x'.join(names)}: {values[0]} → {values[1]}", a.label,
                         f"{a.gflops / 1e3:.2f} → {b.gflops / 1e3:.2f}", f"{pct:+.1f}%", runs, *verdict,
                         both(a.threads, b.threads), both(a.registers, b.registers),
                         both(a.local_bytes, b.local_bytes), both(a.blocks_per_sm, b.blocks_per_sm)])
    verdict = [] if same is None else [f"verdict (±{same:g}%)"]
    return tables.markdown(["one change", "in configuration", "TFLOPS before → after", "change", "timed in", *verdict,
                            "threads", "registers", "spill bytes", "blocks/SM"], body,
                           "llrrl" + "l" * len(verdict) + "rrrr")


def pieces_16_bytes(addresses):
    """(different 16-byte pieces of shared memory a warp-wide access touches, the most any
    quarter warp (8 lanes) touches): ``addresses`` are byte addresses per lane, None inactive."""
    def pieces(lanes):
        return len({a // 16 for a in lanes if a is not None})

    return pieces(addresses), max(pieces(addresses[q:q + 8]) for q in range(0, len(addresses), 8))


def shared_traffic(configs, shape=(128, 128, 8), arrays=None):
    """Block 0 of each TileConfig's kernel at ``shape``, traced on the simulator (lesson 06's
    shared-memory tracer and bank model; in a child process on a machine with a GPU): one dict
    per configuration with its label, the load and store totals (instructions, wavefronts,
    ideal, conflicts) and the worst conflict degree of any store.  ``arrays``: count only the
    accesses to these shared arrays (("sA0", "sB0"): one buffer; with K = BK a two-buffer kernel
    also stages an empty next slice into sA1, sB1); None: all."""
    from gemm_lessons.instruments import shared_tracer
    from gemm_lessons.instruments.simulator_process import run_on_simulator

    if not backend.SIMULATOR:
        code = ("import json; from gemm_lessons.runs import tuning; "
                "from gemm_lessons.kernels.sgemm.warptile import TileConfig; "
                f"print(json.dumps(tuning.shared_traffic([TileConfig(**c) for c in {[asdict(c) for c in configs]!r}], "
                f"{tuple(shape)!r}, {None if arrays is None else tuple(arrays)!r})))")
        return run_on_simulator(code, "tracing")
    from numba import cuda

    M, N, K = shape
    rng = np.random.default_rng(0)
    A = cuda.to_device(rng.standard_normal((M, K)).astype(np.float32))
    B = cuda.to_device(rng.standard_normal((K, N)).astype(np.float32))
    C = cuda.device_array((M, N), np.float32)
    out = []
    for cfg in configs:
        t = shared_tracer.trace(lambda: warptile.sgemm(A, B, C, config=cfg), merge=("ld", "st"))
        if arrays is not None:
            t = replace(t, instructions=[i for i in t.instructions if i.array in arrays])
        stores = [i.cost.degree for i in t.instructions if i.op == "st"]
        out.append({"label": cfg.short(), "loads": t.totals("ld"), "loads_paired": t.totals("ld", rule="paired"),
                    "stores": t.totals("st"), "worst_store_degree": max(stores, default=0)})
    return out


def traffic_markdown(traffic):
    """shared_traffic's result as a table (load wavefronts by lesson 06's paired-load rule where
    the traffic has them)."""
    body = [[t["label"], t.get("loads_paired", t["loads"])["wavefronts"], t["loads"]["conflicts"], t["stores"]["wavefronts"],
             t["stores"]["conflicts"],
             f"{t['worst_store_degree']}-way" if t["worst_store_degree"] > 1 else "no conflict"] for t in traffic]
    paired = all("loads_paired" in t for t in traffic)
    return tables.markdown(["configuration (one block)", "load wavefronts" + (" (paired-load rule)" if paired else ""),
                            "from conflicts", "store wavefronts",
                            "from conflicts", "worst store"], body, "lrrrrl")


def heatmap(rows, x, y, ax=None, title=None, fixed=None):
    """TFLOPS (and % of cuBLAS) of the configurations that differ only in the fields ``x`` and
    ``y`` (each a TileConfig field name, or a function of the config dict returning a label).
    ``fixed`` (field -> value) picks the slice when more fields vary; cells without a
    measurement are left blank (invalid or not swept).  The % is each row's own ratio to the
    cuBLAS timed in the same run."""
    def key(field, cfg):
        return field(cfg) if callable(field) else cfg[field]

    timed = [r for r in rows if r.config and r.gflops]
    if fixed:
        timed = [r for r in timed if all(r.config[k] == v for k, v in fixed.items())]
    def natural(v):  # "BK 8" before "BK 16"
        return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", str(v))]

    xs = sorted({key(x, r.config) for r in timed}, key=natural)
    ys = sorted({key(y, r.config) for r in timed}, key=natural)
    grid_ = np.full((len(ys), len(xs)), np.nan)
    pct = np.full((len(ys), len(xs)), np.nan)
    for r in timed:
        i, j = ys.index(key(y, r.config)), xs.index(key(x, r.config))
        if not np.isfinite(grid_[i, j]) or r.gflops / 1e3 > grid_[i, j]:
            grid_[i, j], pct[i, j] = r.gflops / 1e3, np.nan if r.pct_cublas is None else r.pct_cublas
    if ax is None:
        _, ax = plt.subplots(figsize=(1.4 * len(xs) + 4, 0.6 * len(ys) + 2))
    im = ax.imshow(grid_, cmap="viridis", aspect="auto")
    ax.set_xticks(range(len(xs)), [str(v) for v in xs], rotation=30, ha="right")
    ax.set_yticks(range(len(ys)), [str(v) for v in ys])
    ax.set_xlabel(x if isinstance(x, str) else getattr(x, "__doc__", None) or "x")
    ax.set_ylabel(y if isinstance(y, str) else getattr(y, "__doc__", None) or "y")
    for i, j in itertools.product(range(len(ys)), range(len(xs))):
        v = grid_[i, j]
        if np.isfinite(v):
            text = f"{v:.1f}" + (f"\n{pct[i, j]:.0f}%" if np.isfinite(pct[i, j]) else "")
            ax.text(j, i, text, ha="center", va="center", fontsize=8,
                    color="black" if v > np.nanmean(grid_) else "white")
    ax.figure.colorbar(im, ax=ax, label="TFLOPS (median)")
    if title:
        ax.set_title(title)
    return ax


def tile_shape(cfg):
    """block tile / warp tile / thread tile (threads)"""
    threads = (cfg["BM"] // cfg["WM"]) * (cfg["BN"] // cfg["WN"]) * 32
    return f"{cfg['BM']}x{cfg['BN']} / {cfg['WM']}x{cfg['WN']} / {cfg['TM']}x{cfg['TN']} ({threads} thr)"


def tile_shape_and_cap(cfg):
    """block tile / warp tile / thread tile (threads), register cap"""
    cap = f"cap {cfg['max_registers']}" if cfg.get("max_registers") else "no cap"
    return f"{tile_shape(cfg)}, {cap}"


def depth_buffers(cfg):
    """BK, shared buffers"""
    return f"BK {cfg['BK']}, {cfg['stages']} buf"


# The sweep recorded in results/ (lesson 08): four tile shapes x (BK 8 or 16) x (one or two
# buffers), then single changes to the lesson's default configuration.
TILE_SHAPES = [
    dict(),                                                   # 128x128, warps 32x64 (4x8 lanes), 8x8
    dict(WM=16, WN=128),                                      # lesson 06's 2x16 lanes
    dict(WM=64, WN=64, TN=16, max_registers=None),            # 128 threads, 8x16 each
    dict(BM=64, WM=32, WN=64, max_registers=None),            # 64x128 block, 128 threads
]
SINGLE_CHANGES = [dict(max_registers=None), dict(pad_a=0), dict(spread=True), dict(guard="if"),
                  dict(BK=16, spread=True)]
# The sweep varies everything around the "select" guard (clamped loads); the single change to
# guard="if" turned out best and became TileConfig's default.
SWEEP_BASE = TileConfig(guard="select")


def lesson_configs():
    base = SWEEP_BASE
    configs = [replace(base, **shape, BK=bk, stages=stages)
               for shape in TILE_SHAPES for bk in (8, 16) for stages in (1, 2)]
    configs += [replace(base, **change) for change in SINGLE_CHANGES]
    return list(dict.fromkeys(configs))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--size", type=int, default=4096)
    p.add_argument("--repeats", type=int, default=10)
    p.add_argument("--out", default=None, help="JSON file (default results/tuning-<device>.json)")
    p.add_argument("--shard", default="1/1",
                   help="K/N: run every N-th configuration from the K-th (compiling takes ~10-60 s "
                        "each); rows are merged into an existing file")
    args = p.parse_args(argv)
    if backend.SIMULATOR:
        sys.exit("the sweep times kernels: run it on a machine with a CUDA GPU")
    k, n = (int(x) for x in args.shard.split("/"))
    configs = lesson_configs()[k - 1::n]
    info = device_info()
    out = args.out or results.path_for("tuning", info.name)
    t0 = time.time()
    rows = sweep(configs, size=(args.size,) * 3, repeats=args.repeats)
    run = TuningRun(date=time.strftime("%Y-%m-%dT%H:%M:%S%z"), git_commit=provenance.git_commit(), shard=args.shard,
                    seconds=round(time.time() - t0), versions=provenance.versions())
    for r in rows[1:]:
        r.cublas_gflops_same_run = rows[0].gflops
    record = TuningRecord(device=Device.from_info(info), size=[args.size] * 3, runs=[], rows=[])
    if n > 1 and os.path.exists(out):
        old = TuningRecord.read(out)
        if old.size == record.size and old.device.name == info.name:
            record = old
    labels = {r.label for r in rows}
    record.rows = [r for r in record.rows if r.label not in labels] + rows[1:]
    record.runs.append(run)
    record.date = run.date
    record.write(out)
    print(table_markdown(rows))
    b = best(record.rows)
    if b:
        print(f"\nbest so far: {b.label}: {b.gflops / 1e3:.2f} TFLOPS = {b.pct_cublas:.1f}% of cuBLAS")
    print("wrote", out)


if __name__ == "__main__":
    main()
