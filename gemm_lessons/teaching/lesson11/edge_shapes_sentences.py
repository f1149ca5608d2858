"""Lesson 11, section 1 in words: what the any-shape kernel's scalar loads cost on the aligned square,
what the padded plan copies at the odd shape, and what the odd shape cost against the model.  Every
number comes from the shape suite's record (``suite_record``), the offline compile (``kernel_facts``)
or a formula.
"""
import math

from gemm_lessons.library import dispatch
from gemm_lessons.model import counting
from gemm_lessons.teaching.lesson11.kernel_facts import offline_facts
from gemm_lessons.teaching.lesson11.suite_record import (ODD_SHAPE, REFERENCE_SHAPE, calibration, label,
                                                         recorded_model, row, shape_name)


def kernel_cost_sentence(rec, tiles="128x128"):
    """The any-shape kernel against the wide kernel on the calibration's aligned square (the
    record's numbers): what the scalar loads cost before any odd edge."""
    wide, odd = calibration(rec, f"wide {tiles}"), calibration(rec, f"any_shape {tiles}")
    if not (wide and odd and "gflops" in wide and "gflops" in odd):
        return ""
    text = (f"The shape suite's calibration ({label(rec)}) timed both kernels with {tiles.replace('x', ' x ')} tiles "
            f"on the same aligned {wide['size']}^3 square, where every load could have been 16 bytes wide: the "
            f"any-shape kernel ran at {odd['gflops'] / 1e3:.1f} TFLOPS against {wide['gflops'] / 1e3:.1f} for the "
            f"wide kernel ({100 * odd['gflops'] / wide['gflops']:.0f}%), that much slower before any odd edge.")
    what = "its scalar, predicated global loads and stores"
    if odd.get("local_bytes") and not wide.get("local_bytes"):
        what += (f" and its spills (the compiler gave it {odd.get('registers')} registers and "
                 f"{odd['local_bytes']} bytes of local memory per thread, the wide kernel "
                 f"{wide.get('registers')} and {wide.get('local_bytes', 0)}" + _spills_offline(f"any_shape {tiles}") + ")")
    return text + (f" Among its differences from the wide kernel are {what}; how much of the cost each one takes was "
                   "not measured.")


def _spills_offline(plan, cc="9.0"):
    """"; the offline compile ..." with the spill stores and loads ptxas reported for ``plan``'s kernel
    (results/arch-facts.json), or "" where the record has none."""
    row = offline_facts(plan, cc)
    if row is None:
        return ""
    return (f"; the offline compile for sm_{cc.replace('.', '')} in results/arch-facts.json reports "
            f"{row['spill_store_bytes']} bytes of spill stores and {row['spill_load_bytes']} of spill loads")


def padding_sentence(shape=ODD_SHAPE, tiles="128x128"):
    """What the padded plan does at ``shape``: the padded sides and the floats its copies move,
    next to the product's own FLOP (a formula, no measurement)."""
    M, N, K = shape
    N4, K4 = dispatch.padded_sides(N, K)
    floats = dispatch.padded_copy_floats(M, N, K)
    return (f"At {shape_name(shape)} the padded plan copies A into {M} x {K4} and B into {K4} x {N4} floats, runs "
            f"the wide kernel ({tiles.replace('x', ' x ')} tiles) on {shape_name((M, N4, K4))} into a {M} x {N4} "
            f"workspace and copies its {M} x {N} part into C: the copies read and write {floats / 1e6:.1f} M floats "
            f"({4 * floats / 1e6:.0f} MB, `dispatch.padded_copy_floats`; C counted as read too, as the model charges "
            "it whatever beta is), for a product of "
            f"{counting.sgemm_flops(*shape) / 1e9:.0f} GFLOP.")


def edges_sentence(rec):
    """The cost of the odd shape in one generated paragraph (from the record): both shapes' single
    calls, the plans timed at the odd shape, and what the padded plan cost against the model."""
    a, b = row(rec, REFERENCE_SHAPE), row(rec, ODD_SHAPE)
    if not (a and b and a.single_gl and b.single_gl):
        return ""
    flop = counting.sgemm_flops(*ODD_SHAPE) / counting.sgemm_flops(*REFERENCE_SHAPE)
    t_gl = b.single_gl.median_ms / a.single_gl.median_ms
    text = (f"{shape_name(ODD_SHAPE)} has {100 * (1 - flop):.2f}% less work than {shape_name(REFERENCE_SHAPE)}, yet "
            f"one call of `gl.sgemm` ({b.plan}) took {t_gl:.2f}x as long ({b.single_gl.median_ms:.2f} ms against "
            f"{a.single_gl.median_ms:.2f} ms)")
    if a.single_cublas and b.single_cublas:
        text += f"; cuBLAS took {b.single_cublas.median_ms / a.single_cublas.median_ms:.2f}x as long"
    text += f" ({label(rec)})."
    timed = {p: ms for p, ms in (b.plans_ms or {}).items() if isinstance(ms, float)}
    best = {kind: min((p for p in timed if p.startswith(kind)), key=timed.get, default=None)
            for kind in ("padded", "any_shape")}
    if best["padded"] and best["any_shape"]:
        text += (f" In the suite's sweep of every candidate plan (a few calls back to back each), the fastest padded "
                 f"plan ({best['padded']}) took {timed[best['padded']]:.3f} ms and the fastest plan of the any-shape "
                 f"kernel ({best['any_shape']}) {timed[best['any_shape']]:.3f} ms.")
    plan = next((p for p in dispatch.PLANS if str(p) == b.plan), None)
    if plan is not None and plan.kernel == "padded" and a.back_to_back_gl and b.back_to_back_gl and rec.model:
        model = recorded_model(rec)
        M, N, K = ODD_SHAPE
        N4, K4 = dispatch.padded_sides(N, K)
        extra = b.back_to_back_gl.median_ms - a.back_to_back_gl.median_ms
        wide_ms = 1e3 * (model.estimate_s(dispatch.Plan("wide", plan.tiles), M, N4, K4)
                         - model.estimate_s(dispatch.Plan("wide", plan.tiles), *REFERENCE_SHAPE))
        blocks = [math.prod(plan.grid(M, N4)), math.prod(plan.grid(*REFERENCE_SHAPE[:2]))]
        copies_ms = 1e3 * model.padding_s(M, N, K)
        sweep = timed.get(b.plan)
        text += (f" In the suite's own back-to-back timing of the two shapes ({b.back_to_back_gl.n} samples each), "
                 f"the padded plan took {b.back_to_back_gl.median_ms:.3f} ms against {a.back_to_back_gl.median_ms:.3f} "
                 f"ms for the wide kernel at {shape_name(REFERENCE_SHAPE)}, {extra:.3f} ms more")
        if sweep:
            text += (f" (the sweep's {sweep:.3f} ms for the same plan differs from it by "
                     f"{abs(100 * (sweep / b.back_to_back_gl.median_ms - 1)):.0f}%: how far two timings of one plan "
                     "moved here)")
        text += (f". The model of section 4 charges the copies {copies_ms:.3f} ms (their bytes at the calibration's "
                 f"copy bandwidth, {model.bandwidth_gbs:,.0f} GB/s, and three launches of {model.launch_us:.0f} µs) "
                 f"and the wide kernel on {shape_name((M, N4, K4))} {abs(wide_ms) if round(wide_ms, 3) == 0 else wide_ms:+.3f} ms against "
                 f"{shape_name(REFERENCE_SHAPE)} ({blocks[0]} blocks against {blocks[1]}, "
                 f"{100 * (blocks[0] / blocks[1] - 1):.0f}% more; the model charges only the busiest SM of each wave, "
                 "which holds as many blocks in both)")
        rest = extra - copies_ms - wide_ms
        text += (f": {rest:.3f} ms of the difference is not in the model, and this lesson did not time the copies on "
                 "their own." if rest > 0 else ".")
    return text
