"""Lesson 10: every rung against cuBLAS, and what each technique was worth when measured.

All numbers come from one results record (``python -m gemm_lessons.bench``: every rung,
variant and cuBLAS timed in one process) and, for the tile-configuration changes, from the
recorded sweep (``python -m gemm_lessons.tuning``).
"""
import os

from . import ladder, results, tables
from .records import TuningRecord
from .results import label, sgemm_rows
from .sgemm_kernels.warptile import TileConfig
from .tuning import SWEEP_BASE

# (technique, lesson, the kernel without it, the kernel with it): pairs timed in the same run
TECHNIQUES = [
    ("coalesced global loads (threadIdx.x along a row of C)", "01", "naive_uncoalesced", "naive"),
    ("shared-memory tiles", "02", "naive", "smem_tile"),
    ("16x16 instead of 32x32 shared tiles", "02", "smem_tile", "smem_tile16"),
    ("16 results per thread in registers (1-D)", "03", "smem_tile", "reg1d"),
    ("a 64x64 block instead of 128x128 (1-D register tile)", "03", "reg1d", "reg1d_64x64"),
    ("8x8 outer product per thread (2-D)", "04", "reg1d", "reg2d"),
    ("no register cap (157 registers, 1 block per SM)", "04", "reg2d", "reg2d_uncapped"),
    ("a thread's 8x8 results side by side instead of spread", "04", "reg2d", "reg2d_contiguous"),
    ("transposed A tile + 128-bit loads + compile-time unrolling", "05", "reg2d", "vec"),
    ("writing out the k-loop too (loses LDS.128)", "05", "vec", "vec_unrolled_k"),
    ("8x8 split into four 4x4 (conflict-free LDS.128)", "06", "vec", "vec_split"),
    ("double buffering, first attempt (runtime buffer index)", "07", "vec_split", "dbuf_indexed"),
    ("the warptile kernel with one buffer", "07", "vec_split", "dbuf_one_buffer"),
    ("two shared buffers, one barrier per slice", "07", "dbuf_one_buffer", "dbuf"),
    ("`if a and b:` around the loads instead of `if a & b:`", "07", "dbuf", "dbuf_short_circuit"),
    ("clamped loads + select instead of `if a & b:`", "07", "dbuf", "dbuf_select"),
    ("warp tile 32x64 (4x8 lanes) instead of 16x128 (2x16)", "08", "dbuf", "warptile"),
]


def table(record, sizes=None):
    """Markdown: TFLOPS, % of cuBLAS and % of FP32 peak of every rung at every recorded size."""
    sizes = sizes or sorted({r.size for r in record.sgemm}, key=lambda s: (s[0] != s[1] or s[1] != s[2], s))
    peak = record.device.peak_gflops

    def cell(name, size):
        timed = [r for r in sgemm_rows(record, name, size) if r.gflops is not None]
        if not timed:
            return ""
        r = timed[0]
        pct = 100 if r.pct_cublas is None else r.pct_cublas
        return (f"{r.gflops / 1e3:.2f} · {pct:.1f}% · {100 * r.gflops / peak:.0f}%"
                + (" (host-bound)" if r.host_bound else ""))

    rows = [["**cublas**" if name == "cublas" else name, ladder.SGEMM[name].lesson if name in ladder.SGEMM else "",
             *(cell(name, s) for s in sizes)] for name in record.ladder + ["cublas"]]
    return (f"TFLOPS · % of cuBLAS · % of FP32 peak ({peak / 1e3:.1f}), {label(record)}\n\n"
            + tables.markdown(["rung", "lesson", *(f"{m}x{n}x{k}" for m, n, k in sizes)], rows, "ll" + "r" * len(sizes)))


def technique_effects(record, size=(4096, 4096, 4096)):
    """Rows (technique, lesson, without, with, TFLOPS without, TFLOPS with, change in %)."""
    out = []
    for what, lesson, before, after in TECHNIQUES:
        b, a = (sgemm_rows(record, k, size) for k in (before, after))
        if b and a and b[0].gflops is not None and a[0].gflops is not None:
            tb, ta = b[0].gflops / 1e3, a[0].gflops / 1e3
            out.append((what, lesson, before, after, tb, ta, 100 * (ta / tb - 1)))
    return out


def sweep_effects(sweep):
    """The same for single changes in the recorded tile sweep: each pair of configurations
    that differ in one field (both timed in the same run), from the sweep's base value of that
    field to the other value."""
    rows = {r.label: r for r in sweep.rows if r.gflops}
    configs = {lab: TileConfig(**r.config) for lab, r in rows.items()}
    out = []
    for lab, cfg in configs.items():
        for other_lab, other in configs.items():
            diff = [f for f in cfg.__dataclass_fields__ if getattr(cfg, f) != getattr(other, f)]
            if len(diff) == 1 and getattr(other, diff[0]) == getattr(SWEEP_BASE, diff[0]):
                f = diff[0]
                out.append((f"{f}: {getattr(other, f)} -> {getattr(cfg, f)}", other_lab,
                            rows[other_lab].gflops / 1e3, rows[lab].gflops / 1e3,
                            100 * (rows[lab].gflops / rows[other_lab].gflops - 1)))
    return sorted(out, key=lambda r: -abs(r[4]))


def effects_markdown(effects):
    rows = [[what, lesson, before, after, f"{tb:.2f} → {ta:.2f}",
             f"{'✅' if pct > 2 else ('❌' if pct < -2 else '≈')} {pct:+.1f}%"]
            for what, lesson, before, after, tb, ta, pct in effects]
    return tables.markdown(["technique", "lesson", "without", "with", "TFLOPS without → with", "change"], rows, "llllrr")


def sweep_markdown(effects, top=12):
    rows = [[change, base, f"{tb:.2f} → {ta:.2f}", f"{pct:+.1f}%"] for change, base, tb, ta, pct in effects[:top]]
    return tables.markdown(["one change", "in configuration", "TFLOPS before → after", "change"], rows, "llrr")


def roofline_rows(record, counters=None, size=(4096, 4096, 4096)):
    """Per SGEMM rung at ``size``: (rung, TFLOPS, FLOP per global byte asked for, the global
    ceiling there, FLOP per shared byte, the shared ceiling there, FLOP per DRAM byte measured
    by ncu or None), ceilings in TFLOPS: min(FP32 peak, bandwidth x intensity)."""
    from . import counting

    M, N, K = size
    flop = counting.sgemm_flops(M, N, K)
    peak = record.device.peak_gflops
    bw = results.copy_bandwidth_gbs(record)
    shared_bw = record.device.shared_bandwidth_gbs
    out = []
    for name in record.ladder or []:
        rows = sgemm_rows(record, name, size)
        if not rows or name not in counting.RUNG_TILES:
            continue
        traffic = counting.sgemm_traffic(name, M, N, K)
        x_global = flop / (4 * traffic["global"])
        x_shared = flop / (4 * traffic["shared"]) if traffic["shared"] else None
        c = (counters or {}).get(name, {})
        dram = c.get("dram__bytes_read.sum")
        x_dram = flop / (dram + c.get("dram__bytes_write.sum", 0)) if dram else None
        out.append((name, rows[0].gflops / 1e3, x_global, min(peak, bw * x_global) / 1e3, x_shared,
                    min(peak, shared_bw * x_shared) / 1e3 if x_shared else None, x_dram))
    return out


def roofline_markdown(record, counters=None, size=(4096, 4096, 4096)):
    """roofline_rows as a table, with the share of the tighter ceiling each rung reaches."""
    def f(x, fmt="{:.2f}"):
        return "–" if x is None else fmt.format(x)

    rows = []
    for name, tflops, xg, cg, xs, cs, xd in roofline_rows(record, counters, size):
        tight = min(c for c in (cg, cs) if c is not None)
        rows.append([name, f"{tflops:.2f}", f(xg), f(cg, "{:.1f}"), f(xs), f(cs, "{:.1f}"), f(xd, "{:.1f}"),
                     f"{100 * tflops / tight:.0f}%"])
    return tables.markdown(["rung", "TFLOPS", "FLOP/B asked of global memory", "its ceiling (TFLOPS)",
                            "FLOP/B from shared memory", "its ceiling (TFLOPS)", "FLOP/B from DRAM (ncu)",
                            "of the tighter ceiling"], rows, "lrrrrrrr")


def load_sweep(device=None):
    """The recorded tile sweep (results/tuning-<device>.json) of ``device`` or of the newest bench record."""
    name = device or results.load().device.name
    path = results.path_for("tuning", name)
    if not os.path.exists(path):
        raise FileNotFoundError(f"no recorded sweep for {name}: run `python -m gemm_lessons.tuning` on that GPU.")
    return TuningRecord.read(path)
