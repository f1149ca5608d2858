"""The kernels of lessons 05-08 compile to the machine code recorded in tests/data/sass_baseline.json.

The baseline was recorded from the string-template generators these kernels replaced; the
readable kernels (static_range loops, gemm_lessons/core/unroll.py) must give the same registers,
spills and counts of the instructions the lessons talk about.  Needs the CUDA toolkit
(libnvvm through numba, ptxas, cuobjdump), no GPU:

    export PATH=<site-packages>/nvidia/cu13/bin:$PATH
    GEMM_LESSONS_SIMULATOR=0 python -m pytest -q tests/kernels/test_sass_equal.py
    GEMM_LESSONS_SASS_SWEEP=1 ...   # also the 21 configurations of tuning.lesson_configs()
    GEMM_LESSONS_SIMULATOR=0 python tests/kernels/test_sass_equal.py --record   # write a new baseline

Skipped on the simulator, without the toolchain (CI), and unless GEMM_LESSONS_SIMULATOR=0 is set.
"""
import json
import os
import sys
from dataclasses import replace

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))  # this checkout's package
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tests/conftest.py, also when run as a script
import gemm_lessons  # noqa: E402,F401  (chooses GPU or simulator first)
from gemm_lessons.instruments import offline_sass  # noqa: E402
from conftest import offline_sass_missing, requires_offline_sass  # noqa: E402

BASELINE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "sass_baseline.json")
# every count that matters must be equal; "all" (total instructions) may differ by this much
MATTERS = ("regs", "spill_bytes", "FFMA", "LDS.128", "LDS.64", "LDS", "STS.128", "STS", "LDG.E.128",
           "LDG.E", "STG.E.128", "STG.E", "BAR.SYNC", "STL", "LDL")
ALL_TOLERANCE = 0


def cases(sweep=False):
    """name -> (kernel, register cap)."""
    from gemm_lessons.runs import tuning
    from gemm_lessons.kernels.sgemm import dbuf_first_attempt, vec, warptile
    from gemm_lessons.kernels.sgemm.warptile import TileConfig

    out = {"vec": (vec.sgemm_vec, None), "vec_split": (vec.sgemm_vec_split, None),
           "vec_unrolled_k": (vec.sgemm_vec_unrolled_k, None),
           "dbuf_indexed": (dbuf_first_attempt.sgemm_dbuf_indexed, None)}
    configs = {"warptile": TileConfig(), "dbuf": dbuf_first_attempt.DBUF_CONFIG,
               "dbuf_one_buffer": replace(dbuf_first_attempt.DBUF_CONFIG, stages=1),
               "dbuf_short_circuit": replace(dbuf_first_attempt.DBUF_CONFIG, guard="and"),
               "dbuf_select": replace(dbuf_first_attempt.DBUF_CONFIG, guard="select"),
               "warptile_spread": TileConfig(spread=True), "warptile_BK16": TileConfig(BK=16)}
    if sweep:
        configs.update({f"sweep {c.short()}": c for c in tuning.lesson_configs()})
    for name, cfg in configs.items():
        out[name] = (lambda cfg=cfg: warptile.make_kernel(cfg), cfg.max_registers)
    return out


def _kernel(k):
    return k() if callable(k) and not hasattr(k, "py_func") else k


def record():
    facts = {}
    for name, (k, regs) in cases(sweep=True).items():
        facts[name] = offline_sass.sass_facts(_kernel(k), regs)
        print(name, facts[name], flush=True)
    os.makedirs(os.path.dirname(BASELINE), exist_ok=True)
    with open(BASELINE, "w") as f:
        json.dump({"versions": offline_sass.versions(), "arch": "sm_90", "kernels": facts}, f, indent=1)


_why_not = offline_sass_missing()
SWEEP = os.environ.get("GEMM_LESSONS_SASS_SWEEP") == "1"


@requires_offline_sass
@pytest.mark.parametrize("name", list(cases(sweep=True)) if _why_not is None else ["(skipped)"])
def test_same_machine_code_as_the_baseline(name):
    if name.startswith("sweep ") and not SWEEP:
        pytest.skip("sweep configurations: set GEMM_LESSONS_SASS_SWEEP=1")
    with open(BASELINE) as f:
        baseline = json.load(f)
    k, regs = cases(sweep=True)[name]
    got = offline_sass.sass_facts(_kernel(k), regs)
    want = baseline["kernels"][name]
    differ = {key: (want.get(key, 0), got.get(key, 0)) for key in MATTERS if want.get(key, 0) != got.get(key, 0)}
    assert not differ, f"{name}: (baseline, now) {differ}; versions then {baseline['versions']}"
    assert abs(got["all"] - want["all"]) <= ALL_TOLERANCE, f"{name}: {want['all']} instructions, now {got['all']}"


@requires_offline_sass
def test_block_order_leaves_the_main_loop_alone():
    """Grouped block order (lesson 08) changes where a block starts, not what it computes: the
    same main loop (the same instructions, perhaps scheduled in another order), no spills."""
    from gemm_lessons.kernels.sgemm import warptile
    from gemm_lessons.kernels.sgemm.warptile import TileConfig

    row_major, grouped = TileConfig(), replace(TileConfig(), group_m=8)
    facts = {}
    for cfg in (row_major, grouped):
        sass, info = offline_sass.compile_sass(warptile.make_kernel(cfg), cfg.max_registers)
        facts[cfg.group_m] = offline_sass.main_loop_opcodes(sass), info
    assert facts[1][0]["FFMA"] == 1024 and facts[8][0] == facts[1][0]
    assert "0 bytes spill stores" in facts[8][1]


@requires_offline_sass
def test_the_first_attempts_runtime_buffer_index_costs_its_16_byte_loads(tmp_path):
    """Lesson 07's Lab notes: with the buffer index a constant (read buffer 0, write buffer 1: a probe,
    not a working kernel), the first attempt keeps all four LDS.128 and its k-step is 16 instructions
    shorter; the registers are the same. So the runtime index, not the scalar reads, splits them."""
    import importlib.util

    from gemm_lessons.core.lesson_cells import region

    head = ("import numpy as np\nfrom numba import cuda, float32\n"
            "from gemm_lessons.kernels.sgemm.vec import BK, BM, BN, THREADS, TM, TN\n"
            "from gemm_lessons.core.float4 import load4, store4\n"
            "from gemm_lessons.core.unroll import static_range, unrolled\n")
    text = region("gemm_lessons/kernels/sgemm/dbuf_first_attempt.py")
    const = text.replace("sAT[buf, k,", "sAT[0, k,").replace("sB[buf, k,", "sB[0, k,").replace("[1 - buf,", "[1,")
    assert const.count("[1,") == 8 and "[buf," not in const
    facts = {}
    for name, body in (("runtime", text), ("constant", const)):
        path = tmp_path / f"probe_{name}.py"
        path.write_text(head + body)
        spec = importlib.util.spec_from_file_location(f"probe_{name}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        facts[name] = offline_sass.sass_facts(module.sgemm_dbuf_indexed)
    run, con = facts["runtime"], facts["constant"]
    assert (con["LDS.128"], con["LDS"]) == (4, 0) and run["LDS.128"] < 4 < run["LDS"] + run["LDS.128"]
    assert run["loop"]["inner"] - con["loop"]["inner"] == 16 and run["regs"] == con["regs"]


if __name__ == "__main__" and "--record" in sys.argv:
    record()
