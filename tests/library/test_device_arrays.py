"""gl.sgemm as a library: every shape on the device, split-K, the dispatch rule, the launcher,
clear errors, and the shape benchmark's code path (on the simulator: tiny shapes)."""
import json
import os

import numpy as np
import pytest
from numba import cuda

import gemm_lessons as gl
from gemm_lessons.core import backend
from gemm_lessons.library import dispatch, launch, device_arrays as library, device_transpose
from gemm_lessons.measure import problems
from gemm_lessons.records import results
from gemm_lessons.runs import shapes
from gemm_lessons.library.dispatch import Plan
from gemm_lessons.kernels.library import sgemm_any_shape
from gemm_lessons.kernels.sgemm.warptile import TileConfig

from conftest import requires_gpu, requires_simulator


def lib(A, B, C, alpha=1.0, beta=0.0):
    library.sgemm(A, B, C, alpha, beta)


def plan_runner(plan):
    def run(A, B, C, alpha=1.0, beta=0.0):
        library.run_plan(plan, A, B, C, alpha, beta)
    run.__name__ = str(plan)
    return run


# ---- every shape on the device -------------------------------------------------------------
@pytest.mark.parametrize("M,N,K,alpha,beta", [
    (33, 65, 47, 1.0, 0.0),   # nothing a multiple of 4 or of a tile
    (9, 6, 1, 1.5, -0.5),     # K = 1
    (7, 1, 9, 1.0, 0.0),      # N = 1
    (1, 9, 6, 1.0, 0.0),      # M = 1
])
def test_odd_shapes_on_the_device(M, N, K, alpha, beta):
    res = problems.check(lib, M, N, K, alpha, beta, name="gl.sgemm")  # float64 reference, C poisoned
    assert res.passed, res.message()


def test_odd_shapes_use_the_any_shape_kernel_and_never_the_host(monkeypatch):
    def no_host(*a, **k):
        raise AssertionError("copied through the host")

    monkeypatch.setattr(library._DeviceArray, "copy_to_host", no_host)
    p = problems.SgemmProblem(5, 7, 3)
    assert dispatch.plan_for(5, 7, 3, False).kernel == "any_shape"
    library.sgemm(p.A_d, p.B_d, p.reset_output())
    C_padded = cuda.device_array((5, 7), np.float32)
    library.run_plan(Plan("padded", "64x64"), p.A_d, p.B_d, C_padded)  # the large shapes' path, here small
    monkeypatch.undo()
    assert problems.compare("gl", p.C_d.copy_to_host(), p.reference, 1.0, 0.0, 3).passed
    assert problems.compare("padded", C_padded.copy_to_host(), p.reference, 1.0, 0.0, 3).passed


@requires_simulator
def test_slices_misaligned_and_row_strided():
    """Views into larger arrays: rows not 16-byte aligned, row stride larger than the row."""
    rng = np.random.default_rng(3)
    big_a = rng.uniform(-1, 1, (12, 20)).astype(np.float32)
    big_b = rng.uniform(-1, 1, (20, 16)).astype(np.float32)
    big_c = np.full((10, 16), problems.POISON, np.float32)
    A_d, B_d, C_d = cuda.to_device(big_a), cuda.to_device(big_b), cuda.to_device(big_c)
    A, B, C = A_d[1:10, 3:14], B_d[2:13, 1:10], C_d[1:10, 5:14]  # 9x11 @ 11x9 into a 9x9 view
    gl.sgemm(A, B, C, 2.0, 0.0)
    out = C_d.copy_to_host()
    ref = 2.0 * big_a[1:10, 3:14].astype(np.float64) @ big_b[2:13, 1:10]
    assert problems.compare("slices", out[1:10, 5:14], ref, 2.0, 0.0, 11).passed
    untouched = np.delete(out, np.s_[5:14], axis=1)
    assert (untouched.view(np.uint32) == problems.POISON_BITS).all(), "wrote outside the view"


def test_aligned_shape_whose_pointer_is_not_aligned_is_not_wide():
    """A view starting one float into its array: K and N multiples of 4, but not 16-byte aligned."""
    A_d = cuda.to_device(np.ones((4, 9), np.float32))[:, 1:]  # 4x8 starting at byte 4
    B_d = cuda.to_device(np.ones((8, 4), np.float32))
    C_d = cuda.device_array((4, 4), np.float32)
    gl.sgemm(A_d, B_d, C_d)
    np.testing.assert_allclose(C_d.copy_to_host(), 8.0)


def test_plan_of_names_the_plan_sgemm_runs(monkeypatch):
    """library.plan_of (lesson 11 prints it) gives the plan sgemm then runs, for aligned arrays,
    odd shapes and a view one float off a 16-byte boundary; bad arrays get a clear error."""
    ran = []
    real = library._runner
    monkeypatch.setattr(library, "_runner", lambda plan, *a: ran.append(plan) or real(plan, *a))
    monkeypatch.setattr(library, "_RUNS", {})
    aligned = cuda.to_device(np.ones((64, 64), np.float32))
    view = cuda.to_device(np.ones((20, 33), np.float32))[:, 1:]
    b32 = cuda.to_device(np.ones((32, 12), np.float32))
    odd_a, odd_b = cuda.to_device(np.ones((33, 47), np.float32)), cuda.to_device(np.ones((47, 65), np.float32))
    for A, B in ((aligned, aligned), (odd_a, odd_b), (view, b32)):
        plan = library.plan_of(A, B)
        library.sgemm(A, B)
        assert ran[-1] == plan
    assert library.plan_of(aligned, aligned).kernel == "wide"
    assert library.plan_of(odd_a, odd_b).kernel == library.plan_of(view, b32).kernel == "any_shape"
    with pytest.raises(TypeError, match="numba device array"):
        library.plan_of(np.ones((4, 4), np.float32), aligned)
    with pytest.raises(ValueError, match="shapes do not fit"):
        library.plan_of(odd_a, aligned)


# ---- every plan, split-K ------------------------------------------------------------------
@pytest.mark.parametrize("plan,shape", [
    (Plan("wide", "64x64"), (20, 24, 12)),
    (Plan("wide", "64x128"), (9, 8, 16)),
    (Plan("any_shape", "64x64", 3), (5, 7, 50)),      # parts of 24, 24 and 2 k
    (Plan("any_shape", "128x128", 2), (3, 5, 19)),   # ragged both ways
    (Plan("any_shape", "64x128", 1), (13, 3, 10)),
    (Plan("wide", "64x64", 3), (12, 8, 100)),        # the wide kernel split: parts of 40, 40 and 20 k
    (Plan("padded", "64x64"), (5, 7, 50)),           # zero-padded copies: 5 x 8 x 52 through the wide kernel
    (Plan("padded", "128x64"), (9, 6, 16)),          # K a multiple of 4: A read as it is, B padded to 8 columns
    (Plan("padded", "64x64", 3), (5, 7, 300)),       # padded and split: parts added into the 7-wide C
    (Plan("padded", "64x128", 2), (6, 9, 40)),
    (Plan("wide", "128x64", 2), (9, 8, 40)),         # the narrow tile, split
    (Plan("any_shape", "128x64"), (7, 5, 9)),
])
def test_each_plan_is_correct(plan, shape):
    for alpha, beta in ((1.0, 0.0), (-0.5, 2.0)):
        res = problems.check(plan_runner(plan), *shape, alpha, beta)
        assert res.passed, res.message()


def test_padded_plan_writes_its_zeros_every_call():
    """The padded plan's workspaces are reused between calls: the padding copy rewrites every
    element, so what a workspace held before (NaN here) cannot leak into the product."""
    M, N, K = 6, 5, 7
    N4, K4 = dispatch.padded_sides(N, K)
    assert (N4, K4) == (8, 8)
    for role, rows, cols in (("A", M, K4), ("B", K4, N4), ("W", M, N4)):
        library._workspace(role, rows, cols).copy_to_device(np.full((rows, cols), np.nan, np.float32))
    res = problems.check(plan_runner(Plan("padded", "64x64")), M, N, K, 1.5, -0.5)
    assert res.passed, res.message()


def test_padded_plan_copies_a_only_when_its_rows_cannot_take_16_byte_loads(monkeypatch):
    """B is always copied; A only when K is not a multiple of 4, A is strided or A starts off a
    16-byte boundary.  C is written by the kernel itself, one float at a time: never past C's own
    width, even when C is a view inside a wider array (the poison around it stays)."""
    roles = []
    real = library._workspace
    monkeypatch.setattr(library, "_workspace", lambda role, *a: roles.append(role) or real(role, *a))
    rng = np.random.default_rng(8)

    def run(A, B, C, contiguous=True):
        roles.clear()
        library.run_plan(Plan("padded", "64x64"), A, B, C, 2.0, 0.0, contiguous=contiguous)
        return list(roles)

    for K in (12, 13):  # C-contiguous, aligned arrays
        a, b = rng.uniform(-1, 1, (9, K)).astype(np.float32), rng.uniform(-1, 1, (K, 7)).astype(np.float32)
        C = cuda.device_array((9, 7), np.float32)
        assert run(cuda.to_device(a), cuda.to_device(b), C) == (["B"] if K == 12 else ["A", "B"])
        assert problems.compare("padded", C.copy_to_host(), 2.0 * a.astype(np.float64) @ b, 2.0, 0.0, K).passed
    flat = cuda.to_device(np.concatenate([[0], a[:, :12].ravel()]).astype(np.float32))[1:]  # 4 bytes off
    assert run(flat.reshape(9, 12), cuda.to_device(b[:12]), cuda.device_array((9, 7), np.float32)) == ["A", "B"]
    for split in (1, 2):  # split: the padded reduction writes the strided C one float at a time
        big_c = cuda.to_device(np.full((9, 13), problems.POISON, np.float32))
        roles.clear()
        library.run_plan(Plan("padded", "64x64", split), cuda.to_device(a), cuda.to_device(b), big_c[:, 3:10],
                         2.0, 0.0, contiguous=False)
        assert roles == ["A", "B"] + (["W"] if split > 1 else [])
        out = big_c.copy_to_host()
        assert problems.compare("padded", out[:, 3:10], 2.0 * a.astype(np.float64) @ b, 2.0, 0.0, 13).passed
        assert (np.delete(out, np.s_[3:10], axis=1).view(np.uint32) == problems.POISON_BITS).all(), "wrote outside C"


def test_both_copies_in_one_launch_write_every_element():
    """pad_copy_pair (kernels/library/pad_copy_pair.py): A's and B's zero-padded copies from one
    launch, destinations of different widths and heights, every element written (NaN before)."""
    from gemm_lessons.kernels.library import pad_copy, pad_copy_pair

    rng = np.random.default_rng(3)
    srcs = [rng.uniform(-1, 1, (5, 7)).astype(np.float32), rng.uniform(-1, 1, (7, 517)).astype(np.float32)]
    dsts = [cuda.to_device(np.full((5, 8), np.nan, np.float32)), cuda.to_device(np.full((8, 520), np.nan, np.float32))]
    grid = pad_copy_pair.grid(dsts[0].shape, dsts[1].shape)
    assert grid == (2, 8, 2) and pad_copy.grid(*dsts[1].shape) == (2, 8)
    library._launcher("pad_pair", "", "C")(grid, cuda.to_device(srcs[0]), dsts[0], cuda.to_device(srcs[1]), dsts[1])
    for src, dst in zip(srcs, dsts):
        want = np.zeros(dst.shape, np.float32)
        want[:src.shape[0], :src.shape[1]] = src
        np.testing.assert_array_equal(dst.copy_to_host(), want)


def test_split_k_parts_cover_k_once():
    for K in (2, 7, 8, 9, 100, 1000):
        for split in dispatch.SPLITS:
            p = Plan("any_shape", "64x64", split)
            chunk = p.k_chunk(K)
            assert chunk % TileConfig().BK == 0 and chunk * split >= K  # every k in some part
            covered = [min(K, z * chunk + chunk) - min(K, z * chunk) for z in range(split)]
            assert sum(covered) == K


# ---- the dispatch rule ----------------------------------------------------------------------
def _old_estimate_s(model, plan, M, N, K):
    """The model before it knew partly filled waves: every wave charged as a full one."""
    c, s = plan.config, model.speed(plan)
    gx, gy, splits = plan.grid(M, N)
    waves = -(-(gx * gy * splits) // (s.blocks_per_sm * model.sms))
    t = waves * s.blocks_per_sm * 2.0 * c.BM * c.BN * plan.k_chunk(K) / (s.gflops * 1e9 / model.sms)
    if splits > 1:
        t += 4.0 * M * N * (splits + 2) / (model.bandwidth_gbs * 1e9) + model.launch_us * 1e-6
    return t


def test_without_a_lone_block_rate_a_partial_wave_costs_a_full_one():
    """Records made before the calibration measured one block per SM keep their choices."""
    m = dispatch.Model()
    for shape in [(1024, 1024, 1024), (1000, 1000, 1000), (256, 12288, 12288), (64, 8192, 8192), (4096,) * 3,
                  (3000, 5000, 700), (33, 65, 47)]:
        for p in dispatch.candidates(*shape, True, m):
            assert m.estimate_s(p, *shape) == pytest.approx(_old_estimate_s(m, p, *shape), rel=1e-12), (p, shape)


def test_a_lone_block_rate_makes_a_partly_filled_wave_cheaper():
    """With one block per SM measured at the full SM's rate, 128 blocks of 64 x 128 (3 fit per SM)
    on 132 SMs take a third of a full wave's time; the SM rate is a straight line in between."""
    from dataclasses import replace as dc_replace
    m = dispatch.Model()
    s = m.speeds["wide/64x128"]
    fast = dc_replace(m, speeds={**m.speeds, "wide/64x128": dc_replace(s, lone_gflops=s.gflops)})
    p = Plan("wide", "64x128")
    assert fast.estimate_s(p, 1024, 1024, 1024) == pytest.approx(m.estimate_s(p, 1024, 1024, 1024) / 3)
    lone = dc_replace(s, lone_gflops=0.6 * s.gflops)
    rates = [lone.sm_rate(b, 132) for b in (1, 2, 3)]
    assert rates[0] == pytest.approx(0.6 * s.gflops * 1e9 / 132) and rates[2] == pytest.approx(s.gflops * 1e9 / 132)
    assert rates[1] == pytest.approx((rates[0] + rates[2]) / 2)
    # full waves are unchanged by the lone rate: 36 x 11 tiles = 396 blocks = 3 per SM on 132 SMs
    assert fast.estimate_s(p, 36 * 64, 11 * 128, 1024) == pytest.approx(m.estimate_s(p, 36 * 64, 11 * 128, 1024))
    assert dispatch.Model.from_dict(fast.to_dict()).speeds["wide/64x128"].lone_gflops == s.gflops


def test_lone_grid_has_one_block_per_sm():
    for sms in (132, 108, 40, 46, 7):
        tm, tn = shapes.lone_grid(sms)
        assert tm * tn == sms and tm >= tn
    assert shapes.lone_grid(132) == (12, 11)


def test_dispatch_picks_each_path_with_the_provisional_model():
    m = dispatch.Model()
    assert "provisional" in m.source
    assert dispatch.choose(4096, 4096, 4096, True, m) == Plan("wide", "128x128")  # large square: the last rung
    # odd and large: the wide kernel on zero-padded copies, whose bytes are small next to the product
    assert dispatch.choose(4095, 4097, 4093, False, m) == Plan("padded", "128x128")
    assert dispatch.choose(33, 65, 47, False, m).kernel == "any_shape"  # odd and small: the copies cost more
    assert dispatch.choose(64, 8192, 8192, True, m).split > 1                    # small M, long K: split-K
    assert dispatch.choose(8192, 64, 8192, True, m).split > 1                    # small N, long K
    assert dispatch.choose(8192, 64, 8192, True, m).tiles == "128x64"            # ... in tiles as narrow as C
    assert dispatch.choose(256, 12288, 12288, True, m) != Plan("wide", "128x128")  # 192 tiles: a wave's tail
    small = dispatch.choose(256, 256, 64, True, m)                               # too little K to split
    assert small.split == 1 and small.tiles != "128x128"
    assert dispatch.choose(3, 3, 3, False, m).split == 1


def test_dispatch_follows_the_measurements():
    """The rule is the numbers: where copies and partial sums move at 1 GB/s, nothing is padded
    or split; where the any-shape kernel is as fast as the wide one, padding cannot pay."""
    m = dispatch.Model(bandwidth_gbs=1.0, source="test")
    assert dispatch.choose(64, 8192, 8192, True, m).split == 1
    assert dispatch.choose(4095, 4097, 4093, False, m).kernel == "any_shape"
    same = {k: dispatch.PROVISIONAL[k.replace("any_shape", "wide")] for k in dispatch.PROVISIONAL}
    m = dispatch.Model(speeds=same, source="test")
    assert dispatch.choose(4095, 4097, 4093, False, m).kernel == "any_shape"


def test_dispatch_reads_a_recorded_model(tmp_path):
    measured = dispatch.Model(sms=100, bandwidth_gbs=1234.0, source="measured in a test",
                              speeds={"wide/128x128": dispatch.Speed(1.0, 1, measured=True)})
    path = tmp_path / "shapes-x.json"
    path.write_text(json.dumps({"model": measured.to_dict()}))
    m = dispatch.load_model(str(path))
    assert m.source == "measured in a test" and m.sms == 100 and m.bandwidth_gbs == 1234.0
    assert m.speeds["wide/128x128"].measured and m.speeds["wide/64x64"] == dispatch.PROVISIONAL["wide/64x64"]
    assert "provisional" in dispatch.load_model(str(tmp_path / "missing.json")).source


def test_plan_is_remembered_per_shape():
    dispatch.plan_for.cache_clear()
    dispatch.plan_for(100, 100, 100, True)
    dispatch.plan_for(100, 100, 100, True)
    assert dispatch.plan_for.cache_info().hits >= 1


# ---- cheap checks, the launcher -------------------------------------------------------------
def test_good_input_never_takes_the_slow_checks(monkeypatch):
    def slow(*a, **k):
        raise AssertionError("took the slow path")

    monkeypatch.setattr(library, "_checked_call", slow)
    monkeypatch.setattr(library, "_RUNS", {})
    monkeypatch.setattr(library, "_runner", lambda *a: lambda *b: None)  # the checks and the plan only
    A, B, C = (cuda.device_array(s, np.float32) for s in ((5, 3), (3, 6), (5, 6)))
    assert library.sgemm(A, B, C, 2.0, 1.0) is C
    assert library.sgemm(A, B).shape == (5, 6)
    assert gl.sgemm(A, B, C) is C
    assert list(library._RUNS) == [(5, 6, 3, False, True)]  # one plan remembered for the shape


def test_launcher_says_how_it_launches():
    l = library.launcher_for(Plan("wide", "64x64"))
    assert isinstance(l, launch.Launcher)
    if backend.SIMULATOR:
        assert not l.fast and "simulator" in l.why_plain
    assert "Launcher" in repr(l)


@requires_gpu
def test_fast_launch_passes_arrays_as_numba_does():
    """The flattened array argument equals numba's own marshalling of the same array."""
    from numba.cuda.dispatcher import _Kernel

    x = cuda.to_device(np.zeros((6, 10), np.float32))[1:5, 2:9]
    mine = launch._marshal_array(x)

    class Fake:
        extensions = []

    theirs = []
    _Kernel._prepare_args(Fake(), library._ARRAY["A"], x, 0, [], theirs)
    assert list(mine) == [int(v) for v in theirs]
    assert library.launcher_for(Plan("wide", "128x128")).fast


def test_launcher_refuses_an_unknown_way_to_launch():
    with pytest.raises(ValueError, match="driver"):
        launch.Launcher(*library.kernel_spec("reduce", "", "C"), via="ctypes")


@requires_gpu
def test_launcher_launches_through_the_driver():
    """The default path packs every flattened value in an 8-byte slot: as many slots as numba's
    flattening gives values, and the driver path is the one in use (not a silent fallback)."""
    l = library.launcher_for(Plan("wide", "128x128"))
    assert l.fast and l.via == "driver", l.why_not_driver
    x = cuda.device_array((4, 8), np.float32)
    assert launch._slots(library._ARRAY["C"]) and len(launch._slots(library._ARRAY["C"])) == len(launch._marshal_array(x))


@requires_gpu
def test_driver_launch_repacks_only_what_changed():
    """The parameter buffer keeps the last arguments: a new array (even one that may reuse a
    freed one's id) or a new scalar must reach the kernel; the same ones are not packed again."""
    from gemm_lessons.kernels.library import splitk_reduce

    l = library._launcher("reduce", "", "C")  # C = alpha * W + beta * C (one part)
    grid = splitk_reduce.grid(4, 8)
    full = lambda v: cuda.to_device(np.full((4, 8), v, np.float32))  # noqa: E731
    W, C1, C2 = full(1), full(0), full(0)
    l(grid, W, C1, 2.0, 0.0)
    assert (C1.copy_to_host() == 2).all()
    W = full(3)  # the old W is freed; the new one may get its id
    l(grid, W, C1, 2.0, 0.0)
    assert (C1.copy_to_host() == 6).all()
    l(grid, W, C2, 1.0, 0.0)
    assert (C2.copy_to_host() == 3).all() and (C1.copy_to_host() == 6).all()
    l(grid, W, C2, 1.0, 1.0)
    assert (C2.copy_to_host() == 6).all()


@requires_gpu
@pytest.mark.parametrize("shape", [(128, 128, 128), (64, 1024, 4096), (300, 260, 130), (1027, 1030, 1031)])
def test_driver_and_cuda_core_launches_agree(monkeypatch, shape):
    """One-kernel, split-K, any-shape and padded plans give the same bits launched either way."""
    p = problems.SgemmProblem(*shape)
    by_driver = p.run(lib)
    monkeypatch.setattr(library, "_LAUNCHERS", {})
    monkeypatch.setattr(library, "_RUNS", {})
    monkeypatch.setattr(library, "Launcher", lambda *a: launch.Launcher(*a, via="cuda.core"))
    by_core = p.run(lib)
    np.testing.assert_array_equal(by_driver, by_core)


@requires_gpu
def test_fast_launch_matches_plain_launch(monkeypatch):
    p = problems.SgemmProblem(300, 260, 130)
    fast = p.run(lib)
    monkeypatch.setattr(library, "_LAUNCHERS", {})
    monkeypatch.setattr(library, "_RUNS", {})
    monkeypatch.setenv(launch.PLAIN_ENV, "1")
    plain = p.run(lib)
    np.testing.assert_array_equal(fast, plain)


# ---- bad input: clear errors that say what to do --------------------------------------------
def test_clear_errors_on_device_arrays():
    dev = cuda.device_array
    A, B, C = dev((4, 3), np.float32), dev((3, 5), np.float32), dev((4, 5), np.float32)
    with pytest.raises(TypeError, match="astype"):
        gl.sgemm(dev((4, 3), np.float64), B, C)
    with pytest.raises(ValueError, match="inner dimensions"):
        gl.sgemm(A, dev((4, 5), np.float32), C)
    with pytest.raises(ValueError, match="C must be 4x5"):
        gl.sgemm(A, B, dev((5, 4), np.float32))
    with pytest.raises(ValueError, match="2-D"):
        gl.sgemm(dev((4, 3, 1), np.float32), B, C)
    assert tuple(gl.sgemm(dev((0, 3), np.float32), B).shape) == (0, 5)  # empty: BLAS (test_contract.py)
    with pytest.raises(ValueError, match="needs a C"):
        gl.sgemm(A, B, beta=1.0)
    with pytest.raises(TypeError, match="to_device"):
        library.sgemm(np.zeros((4, 3), np.float32), B, C)
    with pytest.raises(TypeError, match="all as NumPy"):
        gl.sgemm(np.zeros((4, 3), np.float32), B)
    with pytest.raises(ValueError, match="rows are not contiguous.*ascontiguousarray"):
        gl.sgemm(dev((4, 6), np.float32)[:, ::2], B, C)  # a step slice


def test_explicit_wide_rung_on_device_names_its_constraint():
    from gemm_lessons.kernels import ladder

    A, B = cuda.device_array((4, 3), np.float32), cuda.device_array((3, 5), np.float32)
    with pytest.raises(ValueError, match="leave out rung="):
        gl.sgemm(A, B, rung=ladder.SGEMM["warptile"])


# ---- the shape benchmark, end to end at tiny sizes ------------------------------------------
@requires_simulator
def test_shape_benchmark_runs_end_to_end_and_says_it_timed_nothing(tmp_path):
    assert shapes.main(["--shapes", "9x7x5", "3x4x300", "--out", str(tmp_path), "--no-progress"]) == 0
    path = results.path_for("shapes", "CUDA simulator", directory=str(tmp_path))
    assert results.kind_of(path) == "shapes"
    rec = results.read(path)
    assert rec.timed is False and "nothing was timed" in rec.note
    assert [r.shape for r in rec.rows] == [[9, 7, 5], [3, 4, 300]]
    assert all(r.correct and r.error is None for r in rec.rows)
    assert "split" in rec.rows[1].plan  # 3x4 with K=300: split-K's path ran too
    for r in rec.rows:  # no numbers that were not measured
        assert r.single_gl is None and r.back_to_back_gl is None and r.pct_cublas_single is None
    assert os.path.exists(results.path_for("plot", "CUDA simulator", name="shapes", directory=str(tmp_path)))


def test_shape_benchmark_records_a_failing_shape_and_goes_on(monkeypatch):
    def boom(*a, **k):
        raise RuntimeError("kernel exploded")

    monkeypatch.setattr(library, "sgemm", boom)
    from gemm_lessons.core.progress import bar

    row = shapes.measure_shape("odd", (3, 3, 3), 3, bar(1, "", False))
    assert "kernel exploded" in row.error and row.correct is None
    assert shapes.summarise([row])["failed"] == 1


def test_shape_check_catches_wrong_and_unwritten_results():
    rng = np.random.default_rng(0)
    A, B = rng.random((6, 5), dtype=np.float32), rng.random((5, 4), dtype=np.float32)
    good = (A.astype(np.float64) @ B).astype(np.float32)
    assert shapes.check_product(A, B, good)[0]
    bad = good.copy()
    bad[2, 3] += 1
    assert not shapes.check_product(A, B, bad)[0]
    bad = good.copy()
    bad[0, 0] = problems.POISON
    assert "unwritten" in shapes.check_product(A, B, bad)[2]


def test_shape_suite_has_what_the_issue_asks():
    full = [s for _, s in shapes.suite()]
    assert (4095, 4097, 4093) in full and (256, 12288, 12288) in full and (8192, 64, 8192) in full
    assert {s[0] for g, s in shapes.suite() if g == "square"} == {512, 1024, 2048, 4096, 8192, 16384}
    assert len(shapes.suite(quick=True)) < len(full)


def test_shape_benchmark_gpu_paths_run_with_stand_in_timers(monkeypatch, tmp_path):
    """What only runs on a GPU (calibration, per-call cost, timed shapes, the plan sweep, the
    plot with numbers), run here with the timers replaced by stand-ins that call once and
    return made-up times: the code path, not the numbers, is under test."""
    import types as pytypes

    from gemm_lessons.measure import rung_timing as benchmark, cublas
    from gemm_lessons.records import schema
    from gemm_lessons.core.progress import bar

    def fake_stats(fn, *a, **k):
        fn()
        return schema.Stats(median_ms=1.0, p10_ms=0.9, p90_ms=1.1, n=1)

    monkeypatch.setattr(shapes, "single_calls", fake_stats)
    monkeypatch.setattr(shapes, "back_to_back", fake_stats)
    monkeypatch.setattr(shapes, "backend", pytypes.SimpleNamespace(SIMULATOR=False))
    monkeypatch.setattr(cublas, "available", lambda: True)
    monkeypatch.setattr(cublas, "sgemm", lambda A, B, C: lib(A, B, C))  # a stand-in for cuBLAS
    monkeypatch.setattr(benchmark, "time_bandwidth", lambda **k: [pytypes.SimpleNamespace(gbs=1000.0)])
    monkeypatch.setattr(dispatch, "PLANS", [Plan("wide", "64x64"), Plan("wide", "64x64", 2)])
    monkeypatch.setattr(dispatch, "TILES", {"64x64": dispatch.TILES["64x64"]})  # the simulator is slow
    monkeypatch.setattr(library, "_RUNS", {})
    pbar = bar(100, "", False)
    rows, model = shapes.calibrate(8, 1, pbar, sms=4)
    assert [r["plan"] for r in rows[:-1]] == ["wide 64x64", "any_shape 64x64"]
    assert all("gflops" in r for r in rows[:-1]) and rows[-1] == {"copy_gbs": 1000.0}
    assert model.sms == 4 and "measured" in model.source and model.speeds["wide/64x64"].measured
    over = shapes.measure_overhead([4], pbar, calls=1)
    assert len(over) == 5 and all(r.error is None or r.caller.startswith("cuBLAS") for r in over)
    assert all(r.issue_us > 0 for r in over if r.error is None)
    row = shapes.measure_shape("odd", (5, 8, 300), 1, pbar, all_plans=True)
    assert row.error is None and row.correct
    assert row.pct_cublas_single == 100.0 and row.single_gl.median_ms == 1.0
    assert set(row.plans_ms) == {"wide 64x64", "wide 64x64 split 2"} and row.best_plan
    rec = schema.ShapesRecord(device=schema.Device(name="stand-in"), date="2026-01-01", timed=True,
                               rows=[row], overhead=over)
    rec.summary = shapes.summarise(rec.rows)
    assert rec.summary["geomean_pct_cublas_single"] == pytest.approx(100.0)
    assert os.path.exists(shapes.plot(rec, str(tmp_path / "p.png")))
    shapes.print_summary(rec)


# ----------------------------------------------------------------------------- transpose
@pytest.mark.parametrize("rows, cols", [(8, 12), (12, 7), (7, 12), (67, 70), (1, 9), (9, 1), (130, 64), (68, 70)])
def test_library_transpose_takes_every_shape(rows, cols):
    """Each side is 16 bytes wide only where its rows allow it: all four kernel forms, exact
    (68 x 70: the 8-byte kernel)."""
    from gemm_lessons.kernels.library import transpose_any_shape as t_any

    src = np.random.default_rng(rows * cols).random((rows, cols), dtype=np.float32)
    d_src = cuda.to_device(src)
    dst = cuda.to_device(np.full((cols, rows), np.nan, np.float32))  # poisoned
    assert device_transpose.transpose(d_src, dst) is dst
    assert np.array_equal(dst.copy_to_host(), src.T)
    assert t_any.sides(d_src, dst) == (cols % 4 == 0, rows % 4 == 0)
    assert np.array_equal(device_transpose.transpose(d_src).copy_to_host(), src.T)  # a new array when dst is None


def test_library_transpose_explains_bad_input():
    host = np.zeros((3, 4), np.float32)
    with pytest.raises(TypeError, match="NumPy array in host memory"):
        device_transpose.transpose(host)
    with pytest.raises(TypeError, match="float32"):
        device_transpose.transpose(cuda.to_device(np.zeros((3, 4))))
    with pytest.raises(ValueError, match="2-D"):
        device_transpose.transpose(cuda.to_device(np.zeros(3, np.float32)))
    with pytest.raises(ValueError, match="dst must be 4x3"):
        device_transpose.transpose(cuda.to_device(host), cuda.device_array((3, 4), np.float32))
    if gl.SIMULATOR:  # on a GPU .T is a transposed copy, C-contiguous (see test_inputs.py)
        with pytest.raises(ValueError, match="strides"):
            device_transpose.transpose(cuda.to_device(np.zeros((4, 6), np.float32)).T)


def test_driver_path_packs_what_numba_passes_without_a_gpu(monkeypatch):
    """The driver path's parameter buffer, read back through its address list as the driver
    would: each flattened value in its slot, float32 scalars in 4 bytes, and a new array or
    scalar repacked while the same ones are not (on the CPU: the driver call is a stand-in)."""
    import ctypes
    from types import SimpleNamespace

    pytest.importorskip("cuda.bindings", reason="the driver path needs cuda-bindings, which macOS installs do not have")
    from gemm_lessons.core.numba_compat import types  # numba-cuda 0.20 (macOS): numba.cuda.types has no Array

    class FakeArray:  # what _marshal_array reads from a numba device array
        def __init__(self, ptr, shape):
            self.device_ctypes_pointer = SimpleNamespace(value=ptr)
            self.shape, self.size = shape, shape[0] * shape[1]
            self.strides, self.dtype = (4 * shape[1], 4), np.dtype(np.float32)

    arr = types.Array(types.float32, 2, "C")
    l = launch.Launcher.__new__(launch.Launcher)
    l.kernel, l.why_plain = SimpleNamespace(__name__="fake_kernel"), None
    l.argtypes, l.block, l.via = (arr, arr, types.float32, types.int64), (16, 8), "driver"
    l._handle, l._stream = SimpleNamespace(handle=0), SimpleNamespace(handle=0)
    l._prepare_driver()
    l.fast = True
    seen = []

    def fake_launch(f, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        ptrs = ctypes.cast(params, ctypes.POINTER(ctypes.c_void_p))
        read = lambda i, c: ctypes.cast(ptrs[i], ctypes.POINTER(c))[0]  # noqa: E731
        values = [read(i, ctypes.c_int64) for i in range(18)] + [read(18, ctypes.c_float), read(19, ctypes.c_int64)]
        seen.append(((gx, gy, gz), (bx, by, bz), values))
        return (l._SUCCESS,)

    l._cuLaunchKernel = fake_launch
    X, Y = FakeArray(4096, (3, 5)), FakeArray(8192, (5, 2))
    l((2, 3), X, Y, 1.5, 7)
    assert seen[-1][0] == (2, 3, 1) and seen[-1][1] == (16, 8, 1)
    assert seen[-1][2] == [0, 0, 15, 4, 4096, 3, 5, 20, 4, 0, 0, 10, 4, 8192, 5, 2, 8, 4, 1.5, 7]
    held = list(l._packed)
    l((2, 3), X, Y, 1.5, 7)  # the same arguments: nothing repacked, the same values passed
    assert seen[-1][2] == seen[-2][2] and [h() if callable(h) else h for h in l._packed] == \
        [h() if callable(h) else h for h in held]
    Z = FakeArray(12288, (3, 5))
    l((2, 3), Z, Y, 2.0, 7)  # a new first array and a new scalar reach the kernel
    assert seen[-1][2][4] == 12288 and seen[-1][2][18] == 2.0 and seen[-1][2][13] == 8192
    del Z  # a freed array is not mistaken for a later one with the same id
    l((2, 3), FakeArray(16384, (3, 5)), Y, 2.0, 7)
    assert seen[-1][2][4] == 16384
    l._cuLaunchKernel = lambda *a: ("an error",)
    with pytest.raises(RuntimeError, match="cuLaunchKernel failed"):
        l((1, 1), X, Y, 1.0, 0)


@pytest.mark.parametrize("M,N,splits,beta", [(5, 8, 3, 0.0), (7, 516, 2, 0.5)]
                         + ([(1024, 1024, 4, 0.0), (1000, 1000, 4, 0.5), (64, 8192, 6, 0.0)] if not backend.SIMULATOR else []))
def test_wide_reduction_is_the_scalar_one_to_a_rounding(M, N, splits, beta):
    """splitk_reduce_wide.py (16-byte accesses, the wide plans') adds the parts in the same order
    as splitk_reduce.py: the same bits with beta 0; with beta, alpha * total + beta * C may be
    fused into one FMA differently by the compiler in the two kernels (on the H100, 22% of the
    elements differed), so they may differ by one rounding of the larger term."""
    from gemm_lessons.kernels.library import splitk_reduce, splitk_reduce_wide

    rng = np.random.default_rng(M + N)
    W = cuda.to_device(rng.standard_normal((splits * M, N)).astype(np.float32))
    C0 = rng.standard_normal((M, N)).astype(np.float32)
    out = []
    for kind, grid in (("reduce", splitk_reduce.grid(M, N)), ("reduce_wide", splitk_reduce_wide.grid(M, N))):
        C = cuda.to_device(C0)
        library._launcher(kind, "", "C")(grid, W, C, 1.5, beta)
        out.append(C.copy_to_host())
    total = W.copy_to_host().reshape(splits, M, N).astype(np.float64).sum(0)
    if beta == 0:
        np.testing.assert_array_equal(out[0].view(np.uint32), out[1].view(np.uint32))
    else:  # one rounding of the larger term apart (where the two terms cancel, many of the result's)
        terms = np.abs(1.5 * total) + np.abs(beta * C0.astype(np.float64))
        assert (np.abs(out[0].astype(np.float64) - out[1]) <= 2.0**-23 * terms).all()
    ref = 1.5 * total + beta * C0
    assert np.abs(out[1] - ref).max() <= 1e-5 * np.abs(ref).max()


@pytest.mark.parametrize("M,N,splits,beta,strided", [(5, 7, 3, 0.0, False), (7, 517, 2, 0.5, True)]
                         + ([(999, 1001, 4, 0.0, False), (1023, 1021, 4, 0.5, True)] if not backend.SIMULATOR else []))
def test_padded_reduction_is_the_scalar_one_to_a_rounding(M, N, splits, beta, strided):
    """splitk_reduce_padded.py (the padded split plans': the N4-wide workspace by 16-byte loads, C
    one float at a time) adds the parts in the same order as splitk_reduce.py, which the padded
    plan used before: the same bits with beta 0, one rounding of the larger term apart with beta;
    W's padded columns never reach C, and a strided C is written only inside its own columns."""
    from gemm_lessons.kernels.library import splitk_reduce, splitk_reduce_padded

    N4 = dispatch.padded_sides(N, 4)[0]
    rng = np.random.default_rng(M + N)
    w = rng.standard_normal((splits * M, N4)).astype(np.float32)
    w.reshape(splits, M, N4)[:, :, N:] = np.nan  # the padded columns: must be read and dropped
    W = cuda.to_device(w)
    C0 = rng.standard_normal((M, N)).astype(np.float32)
    layout = "A" if strided else "C"
    out = []
    for kind, grid in (("reduce", splitk_reduce.grid(M, N)), ("reduce_padded", splitk_reduce_padded.grid(M, N))):
        if strided:  # C a view inside a wider array, poison on both sides
            big = np.full((M, N + 5), problems.POISON, np.float32)
            big[:, 2:N + 2] = C0
            big_d = cuda.to_device(big)
            C = big_d[:, 2:N + 2]
        else:
            C = cuda.to_device(C0)
        library._launcher(kind, "", layout)(grid, W, C, 1.5, beta)
        out.append(C.copy_to_host())
        if strided:
            rest = np.delete(big_d.copy_to_host(), np.s_[2:N + 2], axis=1)
            assert (rest.view(np.uint32) == problems.POISON_BITS).all(), f"{kind} wrote outside C"
    total = w.reshape(splits, M, N4)[:, :, :N].astype(np.float64).sum(0)
    if beta == 0:
        np.testing.assert_array_equal(out[0].view(np.uint32), out[1].view(np.uint32))
    else:
        terms = np.abs(1.5 * total) + np.abs(beta * C0.astype(np.float64))
        assert (np.abs(out[0].astype(np.float64) - out[1]) <= 2.0**-23 * terms).all()
    ref = 1.5 * total + beta * C0
    assert np.abs(out[1] - ref).max() <= 1e-5 * np.abs(ref).max()
