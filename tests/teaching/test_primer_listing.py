"""The primer's kernels, its compiler listing and its memory-hierarchy table."""
import json

import numpy as np
import pytest

from gemm_lessons.teaching import hierarchy
from gemm_lessons.instruments import compiler_facts
from gemm_lessons.measure import latency
from gemm_lessons.records import results
from gemm_lessons.measure.device import DOCUMENTED_H100
from gemm_lessons.teaching import primer_listing as listing
from gemm_lessons.kernels.primer import reverse, saxpy

from conftest import requires_simulator
from measure.test_latency import _fake_record  # tests/ is on the path (pyproject.toml)


@pytest.mark.parametrize("n", [1, 255, 256, 257, 1000])
def test_saxpy_launch_covers_every_element(n):
    assert saxpy.blocks_for(n) * saxpy.THREADS >= n > (saxpy.blocks_for(n) - 1) * saxpy.THREADS
    rng = np.random.default_rng(n)
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    from numba import cuda

    out = cuda.to_device(np.full(n, np.nan, np.float32))
    saxpy.launch(1.5, cuda.to_device(x), cuda.to_device(y), out)
    np.testing.assert_allclose(out.copy_to_host(), 1.5 * x + y, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("n", [1, 127, 128, 300])
def test_reverse_slices(n):
    from numba import cuda

    x = np.arange(n, dtype=np.float32)
    out = cuda.to_device(np.full(n, np.nan, np.float32))
    reverse.launch(cuda.to_device(x), out)
    assert np.array_equal(out.copy_to_host(), reverse.reference(x))


def test_recorded_listing_reads():
    rec = listing.load()
    assert rec is not None and set(rec["kernels"]) == {"saxpy", "reverse_slices"} | {
        listing.ffma_name(c) for c in latency.FFMA_CHAINS}
    k = rec["kernels"]["saxpy"]
    body = listing.ptx_body(k["ptx"])
    assert "fma.rn.f32" in body and "ld.param" not in body and ".reg" not in body
    sass = listing.sass_until_exit(k["sass"])
    assert sass.splitlines()[-1].strip().endswith("EXIT ;") and "NOP" not in sass
    assert all(".byte" not in l and ".word" not in l for l in sass.splitlines())  # no cubin metadata
    assert sass.splitlines()[0].split("*/")[1].split()[0] == "LDC"  # starts at the first instruction
    # the instructions the primer prints: every printed line once, no padding after EXIT
    bases = [i["base"] for i in listing.instructions(k["sass"])]
    assert {"FFMA", "LDG", "STG", "S2R", "ISETP"} <= set(bases) and "NOP" not in bases and "BRA" not in bases
    assert len(bases) == len(sass.splitlines())
    summary = k["sass_summary"]
    count = lambda prefix: sum(n for op, n in summary.items() if op.startswith(prefix))  # noqa: E731
    assert (count("FFMA"), count("LDG"), count("STG")) == (1, 2, 1)
    r = rec["kernels"]["reverse_slices"]["sass_summary"]
    assert r.get("STS") == r.get("LDS") == 1 and any(op.startswith("BAR.SYNC") for op in r)


def test_sass_until_exit_keeps_the_code_only():
    raw = "\n".join(["/*0000*/ \t.byte\t0x04, 0x2f", "/*0004*/ \t.word\tindex@(_Z1k)", "/*0030*/ \t.string\t\"ptxas\"",
                     "/*0000*/                   LDC R1, c[0x0][0x28] ;",
                     "/*0010*/               @P0 EXIT ;",
                     "/*0020*/                   FFMA R5, R4, UR6, R7 ;",
                     "/*0030*/                   EXIT ;",
                     "/*0040*/                   BRA `(.L_x_0);",
                     "/*0050*/                   NOP;"])
    code = listing.sass_until_exit(raw)
    assert code.splitlines()[0].endswith("LDC R1, c[0x0][0x28] ;") and code.splitlines()[-1].endswith("EXIT ;")
    assert len(code.splitlines()) == 4 and listing.sass_until_exit(code) == code
    assert listing.clean_sass(raw) == code
    assert [i["base"] for i in listing.instructions(raw)] == ["LDC", "EXIT", "FFMA", "EXIT"]
    assert listing.count(raw, "FFMA") == 1


def test_the_recorded_listing_is_trimmed_when_read(tmp_path):
    with open(listing.RECORD) as f:
        raw = json.load(f)
    path = tmp_path / "primer-listing.json"
    path.write_text(json.dumps(raw))
    read = listing.load(str(path))
    for name, k in raw["kernels"].items():
        assert read["kernels"][name]["sass"] == listing.sass_until_exit(k["sass"])
        assert len(read["kernels"][name]["sass"]) <= len(k["sass"])


@requires_simulator
def test_listing_on_the_simulator_is_the_record_and_the_command_refuses():
    how, kernels = listing.listing()
    assert how.startswith("recorded:") and "saxpy" in kernels
    with pytest.raises(SystemExit):
        listing.main([])


@requires_simulator
def test_hierarchy_without_a_record_uses_documented_sizes(tmp_path, monkeypatch):
    monkeypatch.setattr(results, "RESULTS_DIR", str(tmp_path))  # no records at all
    h = hierarchy.hierarchy()
    assert h.latency_record is None and "documented" in h.size_source and "not measured yet" in h.latency_source
    text = h._repr_markdown_()
    assert "| L2 cache | all SMs | 50 MiB | not measured yet |" in text
    assert "hopper-tuning-guide" in text


@requires_simulator
def test_hierarchy_with_a_record_shows_its_sizes_and_latencies(tmp_path, monkeypatch):
    rec = _fake_record()
    rec["limits"].update(registers_per_sm=65536, shared_bytes_per_sm=233472, shared_bytes_per_block_optin=232448,
                         global_bytes=80 * 2**30, compute_capability=[9, 0])
    (tmp_path / "latency-fake-gpu.json").write_text(json.dumps(rec))
    monkeypatch.setattr(results, "RESULTS_DIR", str(tmp_path))
    h = hierarchy.hierarchy()
    assert h.latency_record["device"]["name"] == "Fake GPU"
    text = h._repr_markdown_()
    assert "recorded on Fake GPU, 2026-01-01" in text
    assert "| L2 cache | all SMs | 50 MiB | 260 cycles, 130 ns (4 MiB working set) |" in text
    assert "| shared memory | the threads of one block | 228 KiB per SM, 227 KiB per block at most | 29 cycles |" in text
    assert [r["short_latency"] for r in h.rows][2:] == ["30 cycles", "260 cycles", "700 cycles"]
    assert latency.load(directory=str(tmp_path))["device"]["name"] == "Fake GPU"


def test_the_saxpy_walkthrough_is_made_from_the_listing():
    k = listing.load()["kernels"]["saxpy"]
    text = listing.saxpy_walkthrough(k)
    lines = {i["text"] for i in listing.instructions(k["sass"])}
    quoted = [q for q in text.split("`") if q in lines]
    assert len(quoted) >= 8  # S2R x 2, IMAD.WIDE, SHF, ISETP x 2, EXIT, LDG x 2, FFMA, STG
    assert any(q.startswith("IMAD.WIDE") for q in quoted) and any(q.startswith("FFMA") for q in quoted)
    assert "`@P0 EXIT`" in text and "predicate register `P0`" in text
    n = listing.count(k["sass"], "LOP3")
    assert f"x {n}: each array" in text and "wraparound" in text
    assert f"`FFMA` in this listing: {listing.count(k['sass'], 'FFMA')}" in text
    # each load named by the FFMA operand it feeds: x[i] is multiplied by a, y[i] added
    ffma = next(i for i in listing.instructions(k["sass"]) if i["base"] == "FFMA")
    times, plus = ffma["operands"][1].split(".")[0], ffma["operands"][3].split(".")[0]
    for i in listing.instructions(k["sass"]):
        if i["base"] == "LDG":
            dest = i["operands"][0].split(".")[0]
            assert f"`{i['text']}` loads `{'x' if dest == times else 'y' if dest == plus else '?'}[i]`" in text


def test_the_walkthrough_says_what_a_listing_lacks():
    k = listing.load()["kernels"]["saxpy"]
    bare = {"sass": "\n".join(l for l in k["sass"].splitlines() if "S2R" not in l and "LOP3" not in l), "ptx": ""}
    text = listing.saxpy_walkthrough(bare)
    assert "does not read `SR_TID.X`" in text and "Negative indices" not in text
    assert "`FFMA` in this listing: 1" in text


def test_cc90_limits_are_those_the_occupancy_arithmetic_uses():
    for key, what, value, source in hierarchy.CC90_LIMITS:
        assert source and "](http" in source or "cuda_occupancy.h" in source
        if key is not None:
            assert compiler_facts.SM_LIMITS_CC90[key] == value, what
    assert DOCUMENTED_H100["shared_bytes_per_block_optin"][0] == hierarchy.OPTIN_SHARED_BYTES_PER_BLOCK
    unit = hierarchy.REGISTER_ALLOCATION_UNIT
    for regs in (24, 33, 40, 64, 168):  # blocks_per_sm rounds a warp's registers up to the unit
        per_block = -(-regs * 32 // unit) * unit * 8
        assert compiler_facts.blocks_per_sm(regs, 0, 256)[0] == min(65536 // per_block, 8)


@requires_simulator
def test_this_gpu_reads_the_records(tmp_path, monkeypatch):
    monkeypatch.setattr(results, "RESULTS_DIR", str(tmp_path))
    assert hierarchy.this_gpu() is None
    rec = _fake_record()
    rec["device"].update(compute_capability=[8, 0], sm_count=108)
    rec["limits"].update(warp_size=32)
    (tmp_path / "latency-fake-gpu.json").write_text(json.dumps(rec))
    gpu = hierarchy.this_gpu()
    assert (gpu["compute_capability"], gpu["sm_count"], gpu["warp_size"]) == ("8.0", 108, 32) and gpu["simulator"]
    assert gpu["name"] == "Fake GPU" and "latency record" in gpu["source"]


def test_the_latency_curve_names_its_plateaus():
    import matplotlib
    matplotlib.use("Agg")
    from gemm_lessons.teaching import figures

    rec = _fake_record()
    labels = lambda ax: [t.get_text() for t in ax.texts]  # noqa: E731
    named = labels(figures.latency_curve(rec))
    for name, row in latency.levels(rec).items():
        assert f"{name}: {row['cycles_per_load']:.0f} cycles" in named
    assert not any(t.startswith(("L1:", "L2:", "DRAM:")) for t in labels(figures.latency_curve(rec, plateaus=False)))


@requires_simulator
def test_the_hierarchy_figure_takes_a_title(tmp_path, monkeypatch):
    import matplotlib
    matplotlib.use("Agg")

    monkeypatch.setattr(results, "RESULTS_DIR", str(tmp_path))  # no records: documented sizes
    h = hierarchy.hierarchy()
    assert h.figure(title="my title").get_title(loc="left") == "my title"
    assert "sources in the table" in h.figure().get_title(loc="left")


# --- the FFMA loops of part 4 -------------------------------------------------------------------
# a loop the compiler unrolled: a short remainder loop (2 FFMA) first, then the main loop (4 FFMA)
UNROLLED_CUOBJDUMP = """
        /*0000*/                   MOV R1, c[0x0][0x28] ;
        /*0010*/                   FFMA R6, R0, R6, R5 ;
        /*0020*/                   FFMA R6, R0, R6, R5 ;
        /*0030*/                   IADD3 R9, R9, 0x1, RZ ;
        /*0040*/               @P1 BRA 0x10 ;
        /*0050*/                   FFMA R6, R0, R6, R5 ;
        /*0060*/                   ISETP.GT.U32.AND P0, PT, R4, RZ, PT ;
        /*0070*/                   FFMA R6, R0, R6, R5 ;
        /*0080*/                   FFMA R6, R0, R6, R5 ;
        /*0090*/                   FFMA R6, R0, R6, R5 ;
        /*00a0*/               @P0 BRA 0x50 ;
        /*00b0*/                   EXIT ;
        /*00c0*/                   BRA 0xc0;
"""
UNROLLED_NVDISASM = """
        /*0000*/                   MOV R1, c[0x0][0x28] ;
.L_x_2:
        /*0010*/                   FFMA R6, R0, R6, R5 ;
        /*0020*/                   FFMA R6, R0, R6, R5 ;
        /*0030*/                   IADD3 R9, R9, 0x1, RZ ;
        /*0040*/               @P1 BRA `(.L_x_2) ;
.L_x_3:
        /*0050*/                   FFMA R6, R0, R6, R5 ;
        /*0060*/                   ISETP.GT.U32.AND P0, PT, R4, RZ, PT ;
        /*0070*/                   FFMA R6, R0, R6, R5 ;
        /*0080*/                   FFMA R6, R0, R6, R5 ;
        /*0090*/                   FFMA R6, R0, R6, R5 ;
        /*00a0*/               @P0 BRA `(.L_x_3) ;
        /*00b0*/                   EXIT ;
.L_x_4:
        /*00c0*/                   BRA `(.L_x_4);
"""


@pytest.mark.parametrize("sass", [UNROLLED_CUOBJDUMP, UNROLLED_NVDISASM], ids=["cuobjdump", "nvdisasm"])
def test_busiest_loop_is_the_main_loop_not_the_remainder(sass):
    assert compiler_facts.busiest_loop(sass) == {"instructions": 6, "FFMA": 4}
    assert compiler_facts.busiest_loop("/*0000*/ FFMA R1, R2, R3, R1 ;\n/*0010*/ EXIT ;") is None  # no loop


def test_the_recorded_ffma_loops_are_what_part_4_counts():
    """Each FFMA kernel of the latency benchmark is in the listing with its main loop: whole
    passes of FFMA_UNROLL FFMAs per chain, plus the loop's own counter, compares and branch."""
    rec = listing.load()
    for chains in latency.FFMA_CHAINS:
        k = rec["kernels"][listing.ffma_name(chains)]
        loop = k["loop"]
        assert loop["FFMA"] % (latency.FFMA_UNROLL * chains) == 0 and loop["instructions"] > loop["FFMA"]
        assert compiler_facts.busiest_loop(k["sass"]) == loop  # the stored listing gives the same count
        assert k["how"] and k["date"] and k["local_bytes"] == 0  # added with its own provenance; no spills
    # the primer's kernels keep the record's own provenance
    assert "how" not in rec["kernels"]["saxpy"] and rec["how"]
