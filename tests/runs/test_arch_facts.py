"""Compiler facts per compute capability (gemm_lessons.runs.arch_facts): the occupancy arithmetic,
by hand and against the H100's driver; the committed record (results/arch-facts.json),
against that arithmetic and the kernel list, without compiling anything."""
import json

import pytest

from gemm_lessons.runs import arch_facts
from gemm_lessons.library import dispatch
from gemm_lessons.records import results
from gemm_lessons.runs.arch_facts import ARCHS, occupancy

CCS = ["7.5", "8.0", "8.6", "8.9", "9.0"]
KIB = 1024


@pytest.mark.parametrize("registers, shared, threads, cc, blocks, limited_by", [
    # the last rung on the H100: 128 x 32 = 4096 registers per warp, 16384 per sub-partition -> 4 warps
    # each, 16 per SM = 2 blocks of 8 warps; shared (16640 + 1024 reserved) would allow 13
    (128, 16640, 256, "9.0", 2, ["registers"]),
    # a T4 holds 1024 threads: 4 blocks of 256 (registers: 40 x 32 = 1280 per warp -> 12 per
    # sub-partition = 48 warps = 6 blocks)
    (40, 0, 256, "7.5", 4, ["threads"]),
    # 1536 threads per SM on 8.6 and 8.9: 6 blocks of 256
    (32, 0, 256, "8.6", 6, ["threads"]),
    # tiny blocks hit the block cap: 24 on 8.9, 16 on 7.5, 32 on 8.0
    (16, 0, 32, "8.9", 24, ["blocks"]),
    (16, 0, 32, "7.5", 16, ["blocks"]),
    (16, 0, 32, "8.0", 32, ["blocks"]),
    # shared memory: 40 KiB + the 1 KiB reserved per block on 8.0: 164 // 41 = 4; on 7.5 nothing is
    # reserved but the SM has 64 KiB: 1
    (32, 40 * KIB, 128, "8.0", 4, ["shared memory"]),
    (32, 40 * KIB, 128, "7.5", 1, ["shared memory"]),
    # shared memory is allocated in 128-byte units: 11926 + 1024 = 12950 bytes take 13056, and
    # 233472 // 13056 = 17 (18 without the rounding)
    (32, 11926, 32, "9.0", 17, ["shared memory"]),
    # registers per sub-partition: 192 x 32 = 6144 per warp, 16384 // 6144 = 2 warps in each of 4:
    # 8 one-warp blocks (65536 // 6144 = 10 if the SM were one pool)
    (192, 0, 32, "9.0", 8, ["registers"]),
    # lesson 03's reg1d on a T4: 1024 threads, 62 registers -> 2048 per warp: one block, by
    # threads and by registers alike
    (62, 8192, 1024, "7.5", 1, ["threads", "registers"]),
])
def test_occupancy_by_hand(registers, shared, threads, cc, blocks, limited_by):
    occ = occupancy(registers, shared, threads, cc)
    assert (occ.blocks, occ.limited_by, occ.problem) == (blocks, limited_by, None)
    assert occ.warps_per_sm == blocks * -(-threads // 32)


@pytest.mark.parametrize("registers, shared, threads, words", [
    (65, 0, 1024, "73728 registers per block"),  # 65 x 32 -> 2304 per warp x 32 warps > 65536
    (32, 48 * KIB + 4, 256, "static shared memory"),
    (32, 0, 1056, "threads per block"),
    (256, 0, 32, "registers per thread"),
])
def test_what_cannot_launch_gets_zero_blocks_and_a_reason(registers, shared, threads, words):
    for cc in CCS:
        occ = occupancy(registers, shared, threads, cc)
        assert occ.blocks == 0 and words in occ.problem, (cc, occ)


def test_limits_are_the_documented_ones():
    got = {cc: (a.max_threads_per_sm, a.max_blocks_per_sm, a.shared_bytes_per_sm // KIB,
                a.shared_bytes_per_block_optin // KIB, a.shared_reserved_per_block, a.shared_unit)
           for cc, a in ARCHS.items()}
    assert got == {"7.5": (1024, 16, 64, 64, 0, 256), "8.0": (2048, 32, 164, 163, 1024, 128),
                   "8.6": (1536, 16, 100, 99, 1024, 128), "8.9": (1536, 24, 100, 99, 1024, 128),
                   "9.0": (2048, 32, 228, 227, 1024, 128)}
    assert arch_facts.CC_TABLE in arch_facts.__doc__ or "Technical Specifications per Compute Capability" in \
        arch_facts.__doc__


def test_occupancy_agrees_with_the_h100_driver():
    """results/shapes-*.json holds the driver's resident blocks per SM (occupancy calculator) of
    gl.sgemm's kernels on the H100, with their registers and shared memory."""
    rec = json.load(open(results.path_for("shapes", "NVIDIA H100 80GB HBM3")))
    rows = [r for r in rec["calibration"] if "plan" in r]
    assert len(rows) == len(dispatch.KERNELS) * len(dispatch.TILES)
    for r in rows:
        threads = dispatch.TILES[r["plan"].split()[1]].threads
        assert occupancy(r["registers"], r["shared_bytes"], threads, "9.0").blocks == r["blocks_per_sm"], r


# --- the committed record --------------------------------------------------------------------

@pytest.fixture(scope="module")
def record():
    return arch_facts.load()


def test_record_covers_every_kernel_and_every_arch(record):
    specs = arch_facts.kernel_specs()
    assert list(record["kernels"]) == [s.name for s in specs]
    for s in specs:
        k = record["kernels"][s.name]
        assert (k["group"], k["lesson"], k["threads"], k["max_registers"]) == \
            (s.group, s.lesson, s.threads, s.max_registers), s.name
        assert sorted(k["arch"]) == CCS, s.name
    assert sorted(record["archs"]) == CCS
    groups = {k["group"] for k in record["kernels"].values()}
    assert groups == {"rung", "variant", "transpose", "copy", "library", "sweep"}


def test_record_follows_from_its_compiler_facts(record):
    """Blocks per SM, the limits, the summary: what occupancy() and ARCHS give from the
    recorded registers and shared memory (a change to either needs --rederive)."""
    assert arch_facts.rederive(record) == record


def test_record_says_which_toolchain_and_when(record):
    assert record["versions"]["ptxas"] and record["versions"]["numba-cuda"] and record["date"]
    assert record["sources"]["limits"] == arch_facts.CC_TABLE


def test_every_kernel_fits_on_every_arch(record):
    """At its launch configuration, every kernel has at least one resident block per SM on every
    compute capability (a kernel that did not would need a configuration of its own there)."""
    assert {cc: s["do_not_fit"] for cc, s in record["summary"].items()} == {cc: [] for cc in CCS}


def test_offline_sm90_matches_what_the_h100_recorded(record):
    check = record["h100_check"]
    assert len(check["same"]) >= 15 and check["differ"] == {}


def test_lesson_formula_agrees_at_cc90(record):
    """inspect_kernel.blocks_per_sm (the primer's arithmetic: one register pool per SM, no
    allocation unit for shared memory) gives the same blocks per SM for every kernel here."""
    from gemm_lessons.instruments.compiler_facts import blocks_per_sm

    for name, k in record["kernels"].items():
        r = k["arch"]["9.0"]
        assert blocks_per_sm(r["registers"], r["shared_bytes"], k["threads"])[0] == r["blocks_per_sm"], name


def test_tables_and_results_md_are_rendered_from_the_record(record):
    assert open(arch_facts.TABLES).read() == arch_facts.markdown(record), \
        "results/arch-facts.md differs: python -m gemm_lessons.runs.arch_facts --rederive"
    assert arch_facts.current_summary_block() == arch_facts.summary_block(record), \
        "RESULTS.md's Smaller GPUs block differs: python -m gemm_lessons.runs.arch_facts --rederive"


def _rung_names():
    from gemm_lessons.kernels import ladder

    return [f"sgemm {n}" for n in ladder.SGEMM] + [f"transpose {n}" for n in ladder.TRANSPOSE]


@pytest.mark.offline_sass
@pytest.mark.parametrize("rung", _rung_names())
def test_every_rung_compiles_and_fits_on_a_t4(rung):
    """Colab's free GPU is a T4 (compute capability 7.5): each rung compiles for it now, from the
    code as it is (the record above was compiled by hand once), and at the threads its launcher
    uses at least one block of it fits on an SM."""
    operation, name = rung.split()
    spec = next(s for s in arch_facts.kernel_specs(sweep=False)
                if s.name == (name if operation == "sgemm" else f"transpose_{name}"))
    kernel, argtypes = spec.build()
    facts = arch_facts.compile_facts(kernel, argtypes, spec.max_registers, ARCHS["7.5"])
    row = arch_facts.kernel_row(facts, spec.threads, ARCHS["7.5"])
    assert row["blocks_per_sm"] >= 1, (rung, row)
