"""gemm_lessons.instruments.profiler (gl.profile): ncu's CSV read from real ncu output (results/ncu-*.csv),
the table, the messages where ncu is missing or may not read the counters (ncu mocked), the
recorded counters shown without a GPU, kernels pickled for the child with their jit options
(compiled offline where libnvvm is found), and on a GPU with ncu a real profile."""
import csv
import functools
import json
import os
import subprocess
import sys
import textwrap

import pytest

from conftest import REPO, requires_gpu

import gemm_lessons as gl
from gemm_lessons.core import backend as _backend
from gemm_lessons.instruments import ncu_metrics, profiler
from gemm_lessons.records import results

DEVICE = "NVIDIA H100 80GB HBM3"
ROOFLINE = results.path_for("ncu-roofline", DEVICE)
TRANSPOSE = results.path_for("ncu-transpose", DEVICE)
BANKS = results.path_for("ncu-banks", DEVICE)


def _csv_rows(path, keep=lambda launch_id: True):
    """The file's CSV rows, read here with the csv module alone: {(ID, metric): value text}."""
    with open(path, newline="") as f:
        lines = [line for line in f if line.startswith('"')]
    return {(int(r["ID"]), r["Metric Name"]): r["Metric Value"] for r in csv.DictReader(lines) if keep(int(r["ID"]))}


def _number(text):
    return float(text.replace(",", ""))


def _csv_text(path, ids):
    """ncu's output as it came (==PROF== lines and all), keeping the CSV rows of launches ``ids``."""
    out = []
    with open(path, newline="") as f:
        for line in f:
            if line.startswith('"') and not line.startswith('"ID"'):
                if int(line.split(",", 1)[0].strip('"')) not in ids:
                    continue
            out.append(line)
    return "".join(out)


# --- reading ncu's CSV --------------------------------------------------------------------
@pytest.mark.parametrize("path", [ROOFLINE, TRANSPOSE, BANKS], ids=os.path.basename)
def test_parse_real_ncu_csv(path):
    launches = results.parse_ncu_csv(open(path, newline="").read())
    rows = _csv_rows(path)
    assert len(launches) == len({i for i, _ in rows})
    for (i, metric), text in rows.items():
        assert launches[i][metric] == _number(text), (i, metric)
    assert launches == results.ncu_launches(path)


def test_the_roofline_file_holds_the_rungs_in_ladder_order():
    launches = results.parse_ncu_csv(open(ROOFLINE).read())
    assert "sgemm_naive" in launches[0]["kernel"] and "sgemm_warptile" in launches[7]["kernel"]


# --- the table ----------------------------------------------------------------------------
def _transpose_profile(rows=("time", "registers", "occupancy", "dram_throughput", ncu_metrics.STALLS)):
    launches = results.ncu_launches(TRANSPOSE)  # copy_float4, cuBLAS sgeam, the transposes
    counters = {"copy": launches[0], "naive": launches[2]}
    counters = {k: {m: v for m, v in c.items() if m != "kernel"} for k, c in counters.items()}
    return profiler.Profile((8192, 8192, 1), rows, counters, "recorded for a test"), _csv_rows(TRANSPOSE)


def test_table_cells_come_from_the_counters():
    prof, rows = _transpose_profile()
    copy_ns = _number(rows[(0, "gpu__time_duration.sum")])
    assert prof.value("copy", "time") == copy_ns
    md = prof._repr_markdown_()
    assert f"| duration (one launch, under ncu) | {ncu_metrics.fmt_time(copy_ns)} |" in md
    occupancy = _number(rows[(2, "sm__warps_active.avg.pct_of_peak_sustained_active")])
    assert ncu_metrics.fmt_pct(occupancy) in md.split("achieved [occupancy](GLOSSARY.md#occupancy)")[1].splitlines()[0]
    assert "recorded for a test" in md and "| counter | copy | naive |" in md


def test_top_stall_reasons_are_ranked_and_explained():
    prof, rows = _transpose_profile()
    long_sb = _number(rows[(2, ncu_metrics.stall_metric("long_scoreboard"))])
    barrier = _number(rows[(2, ncu_metrics.stall_metric("barrier"))])
    assert barrier == 0.0  # the naive transpose has no barrier: a 0% reason is not listed
    assert prof.top_stalls("naive") == [("long_scoreboard", long_sb)]
    md = prof._repr_markdown_()
    copy_long_sb = _number(rows[(0, ncu_metrics.stall_metric("long_scoreboard"))])
    assert (f"| [stall reason](GLOSSARY.md#stall-reasons) 1 | long scoreboard {copy_long_sb:.0f}% "
            f"| long scoreboard {long_sb:.0f}% |") in md
    assert "| [stall reason](GLOSSARY.md#stall-reasons) 2 | n/a | n/a |" in md
    assert "**long scoreboard**: " + ncu_metrics.STALL_REASONS["long_scoreboard"] in md
    text = repr(prof)
    assert "](" not in text and "**" not in text and "long scoreboard" in text


def test_selected_is_not_a_stall_and_blocks_per_sm_names_its_limit():
    limits = dict(zip(ncu_metrics.BLOCK_LIMITS.values(), (2.0, 3.0, 8.0, 32.0)))
    stalls = {ncu_metrics.stall_metric("selected"): 50.0, ncu_metrics.stall_metric("wait"): 10.0}
    prof = profiler.Profile((1, 1, 1), ("blocks_per_sm", ncu_metrics.STALLS), {"k": {**limits, **stalls}}, "test")
    assert prof.top_stalls("k") == [("wait", 10.0)]
    assert "| [blocks/SM](GLOSSARY.md#blocks-per-sm), limited by | 2 (registers) |" in prof._repr_markdown_()


def test_every_lesson_row_is_a_counter_and_unknown_lessons_are_refused():
    for rows in ncu_metrics.LESSON_ROWS.values():
        assert all(r in ncu_metrics.ROWS or r == ncu_metrics.STALLS for r in rows)
    assert set(ncu_metrics.LESSON_CASES) == set(ncu_metrics.LESSON_ROWS)
    with pytest.raises(ValueError, match="knows lessons 01, 04, 06, 08"):
        gl.profile("naive", lesson="05")
    with pytest.raises(ValueError, match="not a rung"):
        gl.profile({"x": "no_such_rung"})


# --- recorded counters --------------------------------------------------------------------
def test_recorded_counters_are_labelled_and_come_from_the_file():
    prof = profiler.recorded(["naive", "no_such_kernel"], rows=ncu_metrics.LESSON_ROWS["01"], why="for a test")
    assert prof.source.startswith("recorded on ") and prof.source.endswith("; for a test")
    assert prof.counters["no_such_kernel"] is None and "| not recorded |" in prof._repr_markdown_()
    assert "not recorded: no counters of a kernel of that name in the file" in prof._repr_markdown_()
    paths = results.files("ncu-lessons")
    if paths:  # the lessons' own recording, once made, comes first
        header, counters = profiler.read_recorded(paths[-1])
        assert prof.value("naive", "time") == counters["naive"]["gpu__time_duration.sum"]
        assert f"{header['device']}, {header['date'][:10]}" in prof.source
    else:
        assert prof.value("naive", "time") == _number(_csv_rows(ROOFLINE)[(0, "gpu__time_duration.sum")])
        assert "ncu-roofline" in prof.source and "date not in the file" in prof.source


def test_on_the_simulator_profile_shows_recorded_counters(monkeypatch):
    monkeypatch.setattr(_backend, "SIMULATOR", True)
    monkeypatch.setattr(subprocess, "run", _refuse)
    prof = gl.profile({"naive": "naive", "mine": "naive"}, lesson="01")
    assert prof.note is None and "not measured here: CUDA simulator" in prof.source
    assert prof.counters["mine"] == prof.counters["naive"] is not None  # a rung's name is looked up as such


def _pretend_a_gpu(monkeypatch, name="Test GPU"):
    from gemm_lessons.measure import device

    monkeypatch.setattr(_backend, "SIMULATOR", False)
    monkeypatch.setattr(device, "device_info", lambda: device.DeviceInfo(name=name, simulator=False))


def _refuse(*args, **kwargs):
    raise AssertionError(f"no process may be started here: {args}")


def test_a_record_round_trip(tmp_path, monkeypatch):
    """record() writes a header and ncu's output; read back, it is the preferred recorded source."""
    names = ["naive", "smem_tile", "reg1d", "reg2d", "vec", "vec_split", "dbuf", "warptile"]  # the roofline's order
    text = _csv_text(ROOFLINE, ids=range(len(names)))  # without cuBLAS's launches
    _pretend_a_gpu(monkeypatch)
    monkeypatch.setattr(profiler, "LESSON_CASES", {"01": tuple(names)})
    monkeypatch.setattr(profiler, "run_ncu", lambda cases, size, metrics, timeout: (None, [], text))
    monkeypatch.setattr(profiler, "ncu_path", lambda: "/opt/nsight-compute/ncu")
    monkeypatch.setattr(profiler, "ncu_version", lambda ncu: "Version 2025.3.0.0")
    path = profiler.record(str(tmp_path))
    header, counters = profiler.read_recorded(path)
    assert header["cases"] == names and header["ncu"] == "Version 2025.3.0.0"
    rows = _csv_rows(ROOFLINE)
    assert counters["reg2d"]["lts__t_bytes.sum"] == _number(rows[(3, "lts__t_bytes.sum")])
    import shutil

    shutil.copy(ROOFLINE, tmp_path)  # both sources present: the lessons' recording is preferred
    prof = profiler.recorded(["warptile"], directory=str(tmp_path))
    when = f"{header['device']}, {header['date'][:10]}"
    assert prof.source.startswith(f"recorded on {when} ({tmp_path.name}/ncu-lessons-")
    assert prof.value("warptile", "time") == _number(rows[(7, "gpu__time_duration.sum")])
    assert "## lesson 01" in profiler.show(path)


# --- running ncu, mocked ------------------------------------------------------------------
class FakeNcu:
    """subprocess.run as ncu would answer: ``answers`` in turn for profiling runs; --version."""

    def __init__(self, *answers):
        self.answers, self.commands, self.envs = list(answers), [], []

    def __call__(self, cmd, **kwargs):
        if cmd[1:] == ["--version"]:
            version = "NVIDIA (R) Nsight Compute Command Line Profiler\nVersion 2025.3.0.0\n"
            return subprocess.CompletedProcess(cmd, 0, version, "")
        self.commands.append(cmd)
        self.envs.append(kwargs.get("env"))
        rc, out, err = self.answers.pop(0)
        return subprocess.CompletedProcess(cmd, rc, out, err)


def _on_a_gpu(monkeypatch, fake, ncu="/opt/nsight-compute/ncu"):
    _pretend_a_gpu(monkeypatch)
    monkeypatch.setattr(profiler, "ncu_path", lambda: ncu)
    monkeypatch.setattr(subprocess, "run", fake)


CHILD_DONE = profiler.CHILD_LINE + json.dumps({"device": "test", "cases": []}) + "\n"


def test_missing_ncu_says_what_to_do_and_shows_recorded_counters(monkeypatch):
    _on_a_gpu(monkeypatch, _refuse, ncu=None)
    prof = gl.profile({"naive": "naive"}, lesson="01")
    assert "`ncu`, was not found" in prof.note and "GEMM_LESSONS_NCU" in prof.note and "PATH" in prof.note
    assert prof._repr_markdown_().startswith("**Not profiled here.** Nsight Compute's command line")
    assert prof.source.startswith("recorded on ") and prof.value("naive", "time") is not None


def test_no_permission_says_what_to_do_and_shows_recorded_counters(monkeypatch):
    denied = ("==PROF== Connected to process 1 (python3)\n==ERROR== ERR_NVGPUCTRPERM - The user does not have "
              "permission to access NVIDIA GPU Performance Counters on the target device 0. For instructions on "
              "enabling permissions and to get more information see https://developer.nvidia.com/ERR_NVGPUCTRPERM\n")
    fake = FakeNcu((0, denied + CHILD_DONE, ""))
    _on_a_gpu(monkeypatch, fake)
    prof = gl.profile({"naive": "naive"}, lesson="01")
    assert "ERR_NVGPUCTRPERM" in prof.note and "https://developer.nvidia.com/ERR_NVGPUCTRPERM" in prof.note
    assert prof.source.startswith("recorded on ")
    cmd = fake.commands[0]
    assert cmd[:4] == ["/opt/nsight-compute/ncu", "--clock-control", "none", "--csv"]
    assert cmd[cmd.index("--kernel-name") + 1] == "regex:.*(sgemm_naive).*"
    assert cmd[cmd.index("--launch-count") + 1] == "1"
    assert cmd[-5:-1] == [sys.executable, "-m", "gemm_lessons.instruments.profiler", "child"]
    assert fake.envs[0]["PYTHONPATH"].split(os.pathsep)[0] == REPO  # the child imports this gemm_lessons
    assert set(cmd[cmd.index("--metrics") + 1].split(",")) == set(ncu_metrics.metrics_for(ncu_metrics.LESSON_ROWS["01"]))


def test_measured_counters_come_from_ncus_output(monkeypatch):
    fake = FakeNcu((0, _csv_text(ROOFLINE, ids={0, 3}) + CHILD_DONE, ""))  # naive and reg2d
    _on_a_gpu(monkeypatch, fake)
    prof = gl.profile({"mine": "naive", "reg2d": "reg2d"}, lesson="01")
    rows = _csv_rows(ROOFLINE)
    assert prof.note is None and prof.source.startswith("measured now on ")
    assert "Nsight Compute 2025.3.0" in prof.source
    assert prof.value("mine", "l2_bytes") == _number(rows[(0, "lts__t_bytes.sum")])
    dram = _number(rows[(3, "dram__bytes_read.sum")]) + _number(rows[(3, "dram__bytes_write.sum")])
    assert prof.value("reg2d", "dram_bytes") == dram
    assert "sgemm_reg2d" in prof.kernels["reg2d"]
    cmd = fake.commands[0]
    assert cmd[cmd.index("--kernel-name") + 1] == "regex:.*(sgemm_naive|sgemm_reg2d).*"


def test_metrics_this_ncu_lacks_are_dropped_once_and_named(monkeypatch):
    unknown = ("==ERROR== Failed to access the following 2 metrics: lts__t_sector_hit_rate.pct, "
               "l1tex__t_sector_hit_rate.pct\n")
    fake = FakeNcu((1, unknown, ""), (0, _csv_text(ROOFLINE, ids={0}) + CHILD_DONE, ""))
    _on_a_gpu(monkeypatch, fake)
    prof = gl.profile({"naive": "naive"}, lesson="01")
    second = fake.commands[1][fake.commands[1].index("--metrics") + 1].split(",")
    assert "lts__t_sector_hit_rate.pct" not in second and "lts__t_bytes.sum" in second
    assert "not available here: lts__t_sector_hit_rate.pct, l1tex__t_sector_hit_rate.pct" in prof.source
    assert prof._cell("naive", "l2_hit") == "n/a"


def test_a_failed_run_or_a_wrong_count_raises_with_the_output(monkeypatch):
    traceback = "Traceback (most recent call last):\nValueError: K must be a multiple of 4\n"
    _on_a_gpu(monkeypatch, FakeNcu((1, "==PROF== Disconnected\n", traceback)))
    with pytest.raises(RuntimeError, match="(?s)exit code 1.*K must be a multiple of 4"):
        gl.profile({"naive": "naive"})
    _on_a_gpu(monkeypatch, FakeNcu((0, _csv_text(ROOFLINE, ids={0}) + CHILD_DONE, "")))
    with pytest.raises(RuntimeError, match="1 kernel\\(s\\) for 2 launch\\(es\\): each must launch one kernel"):
        gl.profile({"naive": "naive", "reg2d": "reg2d"})
    _on_a_gpu(monkeypatch, FakeNcu((0, _csv_text(ROOFLINE, ids={3}) + CHILD_DONE, "")))
    with pytest.raises(RuntimeError, match="not the kernels"):
        gl.profile({"naive": "naive"})


# --- kernels pickled for the child --------------------------------------------------------
PICKLE_SIDE = textwrap.dedent('''
    import functools, sys
    import numpy as np
    import gemm_lessons
    from numba import cuda, float32
    from gemm_lessons.instruments import profiler
    from gemm_lessons.core.jit import jit
    from gemm_lessons.kernels.sgemm import reg2d
    from gemm_lessons.core.unroll import static_range, unrolled

    def make(BM=16, MAX_REGISTERS=40):  # a factory in a notebook cell: closure, jit option, tile
        @jit(max_registers=MAX_REGISTERS)
        def sgemm_mine(A, B, C, alpha, beta):
            s = cuda.shared.array(BM, float32)
            i = cuda.grid(1)
            if i < C.shape[0]:
                s[i % BM] = A[i, 0]
                C[i, 0] = alpha * s[i % BM]
        sgemm_mine.tile = (BM, BM, 8, 1, 1)
        return sgemm_mine

    T = 4
    @cuda.jit
    @unrolled
    def sgemm_unrolled(A, B, C, alpha, beta):
        for j in static_range(T):
            C[0, j] = A[0, j]

    from gemm_lessons.kernels import ladder
    with open(sys.argv[1], "wb") as f:
        f.write(profiler.dumps({"cases": [("mine", functools.partial(reg2d.sgemm, kernel=make())),
                                          ("unrolled", sgemm_unrolled), ("warptile", ladder.SGEMM["warptile"])]}))
''')
LOAD_SIDE = textwrap.dedent('''
    import json, pickle, sys
    import gemm_lessons
    from numba import cuda, types
    job = pickle.load(open(sys.argv[1], "rb"))
    mine, unrolled, warptile = job["cases"][0][1].keywords["kernel"], job["cases"][1][1], job["cases"][2][1].kernel
    out = {"max_registers": mine.targetoptions.get("max_registers"), "tile": list(mine.tile),
           "names": [k.py_func.__name__ for k in (mine, unrolled, warptile)],
           "config": type(warptile.config).__name__,
           "warptile_max_registers": warptile.targetoptions.get("max_registers")}
    try:
        from numba.cuda.cudadrv import nvrtc, nvvm
        nvvm.NVVM()
        nvrtc.get_supported_ccs()  # compile_ptx asks NVRTC for the closest architecture
    except Exception:
        out["compiled"] = None  # no libnvvm or libnvrtc here: the pickle is checked, compiling is not
    else:
        sig = (types.float32[:, ::1],) * 3 + (types.float32, types.float32)
        # (warptile takes half a minute to compile here: the GPU test compiles it in the child)
        out["compiled"] = [".entry" in cuda.compile_ptx(k.py_func, sig, cc=(9, 0))[0] for k in (mine, unrolled)]
    print(json.dumps(out))
''')


def test_a_notebook_kernel_travels_to_the_child_with_its_options(tmp_path):
    """A kernel defined in a notebook (in __main__), made by a factory with max_registers and a
    tile, and an @unrolled one, pickled as gl.profile does and loaded in a fresh process."""
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}  # set by this process's backend
    # the real numba.cuda, which needs no GPU for this; the caller's PYTHONPATH stays behind the repo
    env.update(GEMM_LESSONS_SIMULATOR="0", PYTHONPATH=os.pathsep.join(p for p in [REPO, env.get("PYTHONPATH")] if p))
    (tmp_path / "dump.py").write_text(PICKLE_SIDE)
    (tmp_path / "load.py").write_text(LOAD_SIDE)
    job = str(tmp_path / "job.pkl")
    for script in ("dump.py", "load.py"):
        out = subprocess.run([sys.executable, str(tmp_path / script), job], capture_output=True, text=True,
                             env=env, cwd=str(tmp_path), timeout=300)
        assert out.returncode == 0, out.stderr[-3000:]
    facts = json.loads(out.stdout.strip().splitlines()[-1])
    from gemm_lessons.kernels.sgemm.warptile import TileConfig

    assert facts["max_registers"] == 40 and facts["tile"] == [16, 16, 8, 1, 1]
    assert facts["names"] == ["sgemm_mine", "sgemm_unrolled", "sgemm_warptile"]
    assert facts["config"] == "TileConfig" and facts["warptile_max_registers"] == TileConfig().max_registers
    assert facts["compiled"] in (None, [True, True])


def test_the_child_launches_each_case_once_and_says_so(tmp_path):
    """`python -m gemm_lessons.instruments.profiler child JOB`, the process ncu profiles, on the simulator."""
    job = tmp_path / "job.pkl"
    job.write_bytes(profiler.dumps({"size": (8, 16, 4), "cases": [("a", "naive"), ("b", "reg1d")]}))
    env = {**os.environ, "GEMM_LESSONS_SIMULATOR": "1", "PYTHONPATH": REPO}
    out = subprocess.run([sys.executable, "-m", "gemm_lessons.instruments.profiler", "child", str(job)], capture_output=True,
                         text=True, env=env, cwd=str(tmp_path), timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.startswith(profiler.CHILD_LINE)
    assert json.loads(out.stdout[len(profiler.CHILD_LINE):])["cases"] == ["a", "b"]
    assert "RuntimeWarning" not in out.stderr  # gemm_lessons does not import the profiler before -m runs it


# --- on a GPU, for real -------------------------------------------------------------------
NOTEBOOK_CELL = textwrap.dedent('''
    import numpy as np
    from numba import cuda
    from gemm_lessons.core.jit import jit

    @jit(max_registers=32)
    def sgemm_profiled(A, B, C, alpha, beta):
        col = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
        row = cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y
        M, K = A.shape
        N = B.shape[1]
        if row < M and col < N:
            acc = np.float32(0.0)
            for k in range(K):
                acc += A[row, k] * B[k, col]
            C[row, col] = alpha * acc
''')


@requires_gpu
def test_profile_kernels_for_real_on_the_gpu():
    """A kernel from a 'notebook cell' (pickled by value, max_registers=32), a rung whose
    launcher reads kernel.tile (reg2d) and one whose launcher reads kernel.config (warptile)."""
    if profiler.ncu_path() is None:
        pytest.skip("ncu is not on PATH (set GEMM_LESSONS_NCU)")
    from gemm_lessons.kernels.sgemm import naive

    cell = {"__name__": "__main__"}  # as a notebook's cells: cloudpickle sends it by value
    exec(compile(NOTEBOOK_CELL, "<notebook cell>", "exec"), cell)
    launches = {"mine": functools.partial(naive.sgemm, kernel=cell["sgemm_profiled"]), "reg2d": "reg2d",
                "warptile": "warptile"}
    prof = gl.profile(launches, size=(512, 512, 512))
    print(repr(prof))
    assert prof.note is None and prof.source.startswith("measured now on ")
    assert "not available here" not in prof.source, prof.source  # every metric of ROWS exists on this GPU
    assert "sgemm_profiled" in prof.kernels["mine"] and "sgemm_warptile" in prof.kernels["warptile"]
    assert prof.value("mine", "registers") <= 32 and prof.value("reg2d", "registers") <= 128
    for name in launches:
        assert prof.value(name, "time") > 0 and 0 < prof.value(name, "occupancy") <= 100
        assert prof.value(name, "dram_bytes") > 0 and prof.top_stalls(name)
    assert 1 <= prof.value("mine", "sectors_per_request") <= 32
    assert prof.value("mine", "shared_ld_instructions") == 0 < prof.value("reg2d", "shared_ld_wavefronts")


def test_the_ncu_version_is_shown_short():
    assert profiler.ncu_label("Version 2025.3.1.0 (build 36398880) (public-release)") == "Nsight Compute 2025.3.1"
    assert profiler.ncu_label(None) == "Nsight Compute"


def test_profile_calls_warms_up_then_profiles_each_call_after_its_label(monkeypatch, capsys):
    """The writer of the '# call' lines that results.ncu_record reads back (the probes of
    experiments/l2_sources/, ncu_vs_cublas/ and multistage/)."""
    from numba import cuda

    seen = []
    monkeypatch.setattr(cuda, "profile_start", lambda: seen.append("start"), raising=False)
    monkeypatch.setattr(cuda, "profile_stop", lambda: seen.append("stop"), raising=False)
    monkeypatch.setattr(cuda, "synchronize", lambda: None)
    profiler.profile_calls({"a": lambda: seen.append("a"), "b": lambda: seen.append("b")}, warmups=2, prefix="8x8x8 ")
    assert seen == ["a", "a", "b", "b", "start", "a", "stop", "start", "b", "stop"]
    assert capsys.readouterr().out.splitlines() == ["# call 8x8x8 a", "# call 8x8x8 b"]
