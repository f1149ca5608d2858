"""Lesson 05 in steps: the kernels between reg2d and vec, what the compiler makes of each, and
the record the lesson renders its numbers from.

* Correctness: each new kernel against the float64 reference (relative Frobenius error,
  non-square random inputs, output poisoned before the run), on the simulator.
* The compiler: each step does what the lesson says it does, in SASS compiled offline for
  sm_90 (needs the CUDA toolkit, no GPU; skipped unless GEMM_LESSONS_SIMULATOR=0):

      export PATH=<site-packages>/nvidia/cu13/bin:$PATH
      GEMM_LESSONS_SIMULATOR=0 python -m pytest -q -n 0 tests/teaching/test_lesson05_steps.py

* The record: results/experiments/lesson05-steps-<device>.json, or a clear "not recorded yet";
  the lesson reads every compiler fact it talks about from it (one toolchain: the GPU's).
"""
import os
import re

import pytest

import gemm_lessons as gl
from conftest import requires_offline_sass, requires_simulator
from gemm_lessons.core import backend
from gemm_lessons.runs import bench
from gemm_lessons.instruments import compiler_facts, offline_sass
from gemm_lessons.kernels import ladder
from gemm_lessons.teaching import leaderboard, lesson05_steps
from gemm_lessons.course import lesson_source
from gemm_lessons.records import results
from gemm_lessons.records.schema import BenchRecord, Device, SgemmRow

NEW = ["reg2d_unrolled", "transposed_a", "wide_loads"]
RUNGS = {**ladder.SGEMM, **ladder.VARIANTS}


# --- correctness (simulator) ----------------------------------------------------------------
@requires_simulator
@pytest.mark.parametrize("name", NEW)
def test_each_new_kernel_matches_the_float64_reference(name):
    shapes = [(68, 72, 20, 1.0, 0.0), (36, 44, 12, 1.5, -0.5)]
    if not RUNGS[name].wide:  # any shape: K and N need not be multiples of 4
        shapes.append((33, 45, 19, -1.0, 0.5))
    for res in gl.check_all(RUNGS[name], shapes):
        assert res.passed, res.message()


@requires_simulator
def test_wide_loads_refuses_rows_that_are_not_16_byte_aligned():
    import numpy as np
    from numba import cuda

    A, B = cuda.to_device(np.ones((8, 6), np.float32)), cuda.to_device(np.ones((6, 8), np.float32))
    with pytest.raises(ValueError, match="multiple of 4"):
        RUNGS["wide_loads"](A, B, cuda.device_array((8, 8), np.float32))
    assert RUNGS["wide_loads"].constraint == "K and N multiples of 4"
    assert RUNGS["reg2d_unrolled"].constraint == RUNGS["transposed_a"].constraint == "any positive M, N, K"


# --- the steps, as the package describes them ------------------------------------------------
def test_the_steps_run_from_reg2d_to_vec_and_each_is_a_technique_pair():
    assert lesson05_steps.NAMES[0] == "reg2d" and lesson05_steps.NAMES[-1] == "vec"
    assert set(lesson05_steps.KERNELS) <= set(RUNGS)
    for name in NEW:
        assert ladder.VARIANTS[name].lesson == "05" and ladder.VARIANTS[name].variant
    pairs = {(before, after) for _, _, before, after in leaderboard.TECHNIQUES}
    steps = lesson05_steps.NAMES
    for before, after in zip(steps, steps[1:]):
        assert (before, after) in pairs, (before, after)
        assert lesson05_steps.previous(after) == before
    assert lesson05_steps.previous("reg2d") is None
    with pytest.raises(KeyError, match="not a step"):
        lesson05_steps.step("warptile")


def _changed(before, after):
    """The lines of code the diff of two steps' kernels removes or adds (not its headers, not
    lines that are only a comment)."""
    diff = lesson_source.kernel_diff(lesson05_steps.step(before).module, lesson05_steps.step(after).module)
    return [line[1:] for line in diff.split("\n")
            if line[:1] in "+-" and not line.startswith(("+++", "---")) and "def sgemm_" not in line
            and not line[1:].lstrip().startswith("#")]


def test_each_step_changes_one_thing_in_the_code():
    # step 3: the A tile's declaration and the store into it; the reads of both tiles as LDS.128
    changed = _changed("reg2d_unrolled", "transposed_a")
    assert all("sA" in line or "load4(sB" in line or line.lstrip().startswith(("for i in static_range(TM):",
               "for j in static_range(TN):", "for h in static_range(", "b[j] = sB")) for line in changed), changed
    assert any("load4(sAT" in line for line in changed) and any("load4(sB" in line for line in changed)
    # step 4: only the staging (the float4 this thread fetches and where its values go)
    changed = _changed("transposed_a", "wide_loads")
    assert all(any(w in line for w in ("a_r", "a_c", "b_r", "b_c", "x0", "y0", "load4", "float4", "idx", "THREADS"))
               or line.strip().startswith(("sAT[", "sB[", "else:", "r, c =", "# one condition")) for line in changed), changed
    assert not any("C[" in line or "store4" in line for line in changed)
    # step 5 (vec): the stores of C, the register cap, and vec's split / unroll_k switches
    changed = _changed("wide_loads", "vec")
    assert any("store4(C" in line for line in changed)
    assert not any("load4(A" in line or "load4(B" in line or "sAT[a_c" in line for line in changed)


def test_kernel_diff_compares_a_factory_kernel_with_a_module_level_one():
    text = lesson_source.kernel_function("gemm_lessons/kernels/sgemm/vec.py")
    assert text.startswith("@cuda.jit\n@unrolled\ndef sgemm_vec(A, B, C, alpha, beta):")
    assert text.rstrip().endswith("alpha * acc[i, j + 2] + beta * o2, alpha * acc[i, j + 3] + beta * o3)")
    with pytest.raises(ValueError, match="no 'def sgemm_"):
        lesson_source.kernel_function("gemm_lessons/kernels/transpose/naive.py")


# --- main_loop: the loop of a SASS listing, in both listing formats --------------------------
CUOBJDUMP = """
        /*0000*/                   MOV R1, c[0x0][0x28] ;
        /*0010*/                   LDG.E.128 R4, [R2.64] ;
        /*0020*/                   LDS.128 R8, [R0] ;
        /*0030*/                   FFMA R12, R8, R4, R12 ;
        /*0040*/                   FFMA R13, R9, R5, R13 ;
        /*0050*/               @P0 BRA 0x20 ;
        /*0060*/                   BAR.SYNC.DEFER_BLOCKING 0x0 ;
        /*0070*/               @P1 BRA 0x10 ;
        /*0080*/                   EXIT ;
        /*0090*/                   BRA 0x90;
"""
NVDISASM = """
        /*0000*/                   MOV R1, c[0x0][0x28] ;
.L_x_1:
        /*0010*/                   LDG.E.128 R4, desc[UR4][R2.64] ;
.L_x_0:
        /*0020*/                   LDS.128 R8, [R0] ;
        /*0030*/                   FFMA R12, R8, R4, R12 ;
        /*0040*/                   FFMA R13, R9, R5, R13 ;
        /*0050*/               @P0 BRA `(.L_x_0) ;
        /*0060*/                   BAR.SYNC.DEFER_BLOCKING 0x0 ;
        /*0070*/               @P1 BRA `(.L_x_1) ;
        /*0080*/                   EXIT ;
.L_x_2:
        /*0090*/                   BRA `(.L_x_2);
"""


@pytest.mark.parametrize("listing", [CUOBJDUMP, NVDISASM], ids=["cuobjdump", "nvdisasm"])
def test_main_loop_finds_the_k_step_loop_and_the_slice_loop_around_it(listing):
    assert compiler_facts.main_loop(listing) == {"inner": 4, "inner_FFMA": 2, "inner_LDS": 1, "outer_rest": 3}
    assert compiler_facts.main_loop("/*0000*/ FFMA R1, R2, R3, R1 ;\n/*0010*/ EXIT ;") is None


# --- the compiler, offline (sm_90) ------------------------------------------------------------
offline = requires_offline_sass
_facts = {}


def sass(name):
    """Offline SASS facts of a step, compiled as the GPU compiles it (with its register cap)."""
    if name not in _facts:
        caps = {"vec": None}  # the others carry lesson 04's cap of 128
        _facts[name] = offline_sass.sass_facts(RUNGS[name].kernel, caps.get(name, 128))
    return _facts[name]


@offline
@pytest.mark.parametrize("name", lesson05_steps.NAMES[1:])
def test_offline_every_step_keeps_the_work_and_spills_nothing(name):
    f = sass(name)
    assert f["FFMA"] == 128 and f["spill_bytes"] == 0 and f["LDL"] == f["STL"] == 0, f
    assert f["loop"]["inner_FFMA"] == 64 and f["loop"]["outer_rest"] is not None, f["loop"]  # one k-step per pass


@offline
def test_offline_step2_unrolling_shortens_the_k_step_loop_but_loads_stay_4_bytes():
    before, after = sass("reg2d_contiguous"), sass("reg2d_unrolled")
    assert after["loop"]["inner"] < before["loop"]["inner"], (before["loop"], after["loop"])
    assert after["LDS"] == before["LDS"] == 16 and after["LDS.128"] == 0
    assert after["LDG.E"] == before["LDG.E"] and after["LDG.E.128"] == 0


_LDS_ADDRESS = re.compile(r"\bLDS(?:\.\w+)?\s+R\d+,\s*\[([^\]]+)\]")


def _lds_addresses(name):
    """The address operand of every shared load in the offline SASS ('R113+UR6+0x20', ...):
    these kernels read shared memory only in the k-step loop."""
    listing, _ = offline_sass.compile_sass(RUNGS[name].kernel, 128)
    return _LDS_ADDRESS.findall(listing)


@offline
def test_offline_step2_addresses_become_a_base_register_plus_a_constant():
    """What the lesson says the shorter loop is made of: reg2d_contiguous computes every shared
    address into a register before its LDS; reg2d_unrolled adds constants to two base registers."""
    before, after = _lds_addresses("reg2d_contiguous"), _lds_addresses("reg2d_unrolled")
    assert len(before) == len(after) == 16
    assert all(re.fullmatch(r"R\d+", a) for a in before), before
    assert len({a.split("+")[0] for a in after}) <= 2 and sum("+0x" in a for a in after) >= 14, after


@offline
def test_offline_step3_the_transposed_tile_gives_lds128():
    before, after = sass("reg2d_unrolled"), sass("transposed_a")
    assert before["LDS.128"] == 0 and before["LDS"] == 16
    assert after["LDS.128"] == 4 and after["LDS"] == after["LDS.64"] == 0  # 8 + 8 floats in four 16-byte loads
    assert after["loop"]["inner"] < before["loop"]["inner"]
    assert after["LDG.E.128"] == 0 and after["STG.E.128"] == 0


@offline
def test_offline_step4_staging_with_ldg128():
    before, after = sass("transposed_a"), sass("wide_loads")
    assert before["LDG.E.128"] == 0 and after["LDG.E.128"] == 2  # one float4 of A and one of B per slice
    assert after["LDG.E"] == 64  # what is left: the 4-byte loads of C when beta != 0
    assert after["loop"]["inner"] == before["loop"]["inner"]  # the k-step is untouched ...
    assert after["loop"]["outer_rest"] < before["loop"]["outer_rest"]  # ... the staging around it shrinks
    assert after["LDS.128"] == 4 and after["STG.E.128"] == 0


@offline
def test_offline_step5_stores_with_stg128_and_the_same_main_loop():
    before, after = sass("wide_loads"), sass("vec")
    assert before["STG.E"] == 128 and after["STG.E"] == 0 and after["STG.E.128"] == 32
    assert after["loop"] == before["loop"]


@offline
@pytest.mark.parametrize("name", ["wide_loads", "vec"])
def test_offline_the_register_cap_no_longer_binds_from_step4_on(name):
    """vec has no cap and wide_loads has lesson 04's: at these register counts the instructions
    are the same either way and so is the occupancy (two 256-thread blocks per SM), so step 5
    changes the stores only."""
    with_cap, without = offline_sass.sass_facts(RUNGS[name].kernel, 128), offline_sass.sass_facts(RUNGS[name].kernel)
    assert {k: v for k, v in with_cap.items() if k != "regs"} == {k: v for k, v in without.items() if k != "regs"}

    def blocks(regs):  # registers are allocated per warp in units of 256 (8 per thread)
        return 65536 // (256 * -(-regs // 8) * 8)
    assert with_cap["regs"] < 128 and blocks(with_cap["regs"]) == blocks(without["regs"]) == 2


# --- the record --------------------------------------------------------------------------------
def _record(times, device="Test GPU", loop=None):
    rows = [SgemmRow(kernel=k, M=4096, N=4096, K=4096, gflops=1e3 * t, gflops_p10=990 * t, gflops_p90=1010 * t,
                     pct_cublas=100 * t / times["cublas"]) for k, t in times.items()]
    compiler = {"vec": {"registers": 102, "loop": loop}} if loop else None
    return BenchRecord(device=Device(name=device, peak_gflops=60000.0), date="2030-01-02T03:04:05", sgemm=rows,
                       compiler=compiler)


TIMES = {"cublas": 50.0, "reg2d": 10.0, "reg2d_contiguous": 10.0, "reg2d_unrolled": 16.0, "transposed_a": 20.0,
         "wide_loads": 28.0, "vec": 30.0}


def test_the_record_is_an_experiment_file_named_for_the_device(tmp_path):
    path = lesson05_steps.record_path("Test GPU", str(tmp_path))
    assert path == str(tmp_path / "experiments" / "lesson05-steps-test-gpu.json")
    assert results.kind_of(path) == "experiment"
    assert lesson05_steps.load("Test GPU", str(tmp_path)) is None
    os.makedirs(os.path.dirname(path))
    _record(TIMES).write(path)
    assert lesson05_steps.load("Test GPU", str(tmp_path)).device.name == "Test GPU"


@requires_simulator
def test_without_a_record_the_compiler_facts_say_not_recorded_yet(tmp_path, monkeypatch):
    monkeypatch.setattr(lesson05_steps, "load", lambda device=None, directory=None: None)
    text = lesson05_steps.compiler_facts({"vec": None})._repr_markdown_()
    assert text.startswith("**Not recorded yet:**"), text
    assert os.path.relpath(lesson05_steps.record_path(), os.path.dirname(results.RESULTS_DIR)) in text
    assert "python -m gemm_lessons.teaching.lesson05_steps` on a GPU writes it" in text and str(tmp_path) not in text


@pytest.mark.skipif(not backend.SIMULATOR, reason="on a GPU it would run the benchmark")
def test_the_command_refuses_on_the_simulator():
    with pytest.raises(SystemExit, match="needs a GPU"):
        lesson05_steps.main(["--sizes", "64"])


def test_the_command_times_variants_at_every_size_it_asks_for(monkeypatch, tmp_path):
    """lesson05_steps runs bench on exactly its kernels, both sizes, variants included at 8192."""
    seen = {}

    def fake_bench(argv):
        seen["argv"] = argv
        out = argv[argv.index("--out") + 1]
        _record(TIMES).write(os.path.join(out, "test-gpu.json"))
        return 0

    monkeypatch.setattr(bench, "main", fake_bench)
    assert lesson05_steps.main(["--out", str(tmp_path)]) == 0
    argv = seen["argv"]
    kernels = argv[argv.index("--kernels") + 1:argv.index("--sizes")]
    assert kernels == lesson05_steps.KERNELS and set(kernels) <= set(RUNGS)
    assert argv[argv.index("--sizes") + 1:argv.index("--sizes") + 3] == ["4096", "8192"]
    assert argv[argv.index("--variant-limit") + 1] == "8192" and "--shapes" in argv
    written = lesson05_steps.load("Test GPU", str(tmp_path))
    assert written.command.startswith("python -m gemm_lessons.teaching.lesson05_steps --out")
    assert "gemm_lessons.runs.bench --kernels reg2d" in written.command


def test_lesson10_takes_the_pairs_its_record_lacks_from_the_steps_run():
    record = results.load()
    steps = _record(TIMES, device=record.device.name)
    steps.command = "python -m gemm_lessons.teaching.lesson05_steps --no-progress (= python -m gemm_lessons.runs.bench ...)"
    plain = leaderboard.technique_effects(record)
    both = leaderboard.technique_effects(record, extra=[None, steps])
    sources = {(before, after): e.source for e in both for _, _, before, after, *_ in [e]}
    for before, after in zip(lesson05_steps.NAMES[1:], lesson05_steps.NAMES[2:]):
        if not (results.sgemm_rows(record, before) and results.sgemm_rows(record, after)):  # not in the bench run
            assert sources[(before, after)].endswith("`python -m gemm_lessons.teaching.lesson05_steps`")
    assert all(sources[(b, a)] is None for _, _, b, a, *_ in plain)  # the bench run's own pairs stay its own
    assert len(both) >= len(plain)
    text = leaderboard.effects_markdown(both)
    if any(e.source for e in both):
        assert " †" in text and "† timed together in another run: Test GPU" not in text  # named by its device
        assert f"† timed together in another run: {record.device.name}, 2030-01-02" in text


def test_the_course_record_shows_one_width_change_per_step():
    """What the lesson's facts table shows, in the steps' record of the course GPU (the GPU's
    compiler): LDS.128 arrives with transposed_a, LDG.128 with wide_loads, STG.128 with vec,
    every step keeps the 64 FFMA of a k-step, and the last two spill nothing (under the cap of
    128 registers reg2d_contiguous and transposed_a spill a few bytes: the Lab notes print them)."""
    record = lesson05_steps.load(results.COURSE_DEVICE)
    if record is None:
        pytest.skip(f"no lesson 05 steps record of the {results.COURSE_DEVICE} yet")
    facts = {n: record.compiler[n] for n in lesson05_steps.NAMES}
    sass = {n: f["sass"] for n, f in facts.items()}
    first = {w: next(n for n in lesson05_steps.NAMES if sass[n].get(w)) for w in ("LDS.128", "LDG.E.128", "STG.E.128")}
    assert first == {"LDS.128": "transposed_a", "LDG.E.128": "wide_loads", "STG.E.128": "vec"}, first
    for n in ("transposed_a", "wide_loads", "vec"):
        assert sass[n]["LDS.128"] == 4 and sass[n].get("LDS", 0) == 0, (n, sass[n])
    for n in lesson05_steps.NAMES[2:]:
        assert facts[n]["loop"]["inner_FFMA"] == 64, n
    assert facts["wide_loads"]["local_bytes"] == facts["vec"]["local_bytes"] == 0


def test_the_lessons_list_of_steps_is_the_packages():
    """Lesson 05 lists its five steps in a markdown cell: the package's steps, in order."""
    from conftest import REPO

    text = open(os.path.join(REPO, "lessons", "05_transposed_smem_and_wide_loads.py")).read()
    listed = re.findall(r"^# (\d)\. `(\w+)`:", text, flags=re.M)
    assert [name for _, name in listed] == lesson05_steps.NAMES[1:] and [n for n, _ in listed] == list("12345")


@requires_simulator
def test_traced_loads_count_what_the_code_asks_for():
    """One block, one slice: reg2d's 16 conflict-free loads per k-step and warp (1024) plus its 64
    stores; side by side, the 4-byte loads triple; the 16-byte loads of transposed_a (4 per k-step
    and warp, paired) halve that again; counted as 4-byte loads, they cost as a column of sA and a
    row of sB read 4 bytes at a time would."""
    t = lesson05_steps.traced_loads(["reg2d", "reg2d_contiguous", "transposed_a", "vec"])
    w = {n: v["wavefronts"] for n, v in t.items()}
    assert w["reg2d"] == 1024 + 64 and w["reg2d_contiguous"] == 3072 + 64
    assert w["vec"] < w["transposed_a"] < w["reg2d_contiguous"] / 1.9
    assert t["reg2d"]["load_bytes"] == t["reg2d_contiguous"]["load_bytes"] == 4 and t["transposed_a"]["load_bytes"] == 16
    narrow = lesson05_steps.traced_loads(["transposed_a", "reg2d"], narrow=["transposed_a", "reg2d"])
    assert narrow["reg2d"] == t["reg2d"]  # nothing to split
    # sAT rows 4 bytes at a time: two addresses per warp, one wavefront (512); sB rows: 4-way (2048); stores 288
    assert narrow["transposed_a"] == {"wavefronts": 512 + 2048 + 288, "load_bytes": 16}


def test_lesson_05_lab_notes_read_the_h100_record_of_the_earlier_kernels_as_they_say():
    """Lesson 05's Lab notes: in the H100 run of the earlier kernels (plain shared indexing),
    transposed_a and wide_loads kept 4-byte LDS and only vec has LDS.128."""
    record = lesson05_steps.load(results.REFERENCE_DEVICE)
    if record is None:
        pytest.skip("no H100 lesson 05 steps record")
    sass = {n: record.compiler[n]["sass"] for n in ("transposed_a", "wide_loads", "vec")}
    for name in ("transposed_a", "wide_loads"):
        assert sass[name].get("LDS.128", 0) == 0 and sass[name]["LDS"] == 16, name
    assert sass["vec"]["LDS.128"] == 4 and sass["vec"].get("LDS", 0) == 0
