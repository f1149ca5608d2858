import subprocess

import numpy as np
import sys

import pytest

import gemm_lessons as gl
from gemm_lessons.measure import cublas, device, timing
from gemm_lessons.measure.device import DeviceInfo

from conftest import requires_simulator

H100 = DeviceInfo(name="H100-like", simulator=False, sm_count=132, compute_capability=(9, 0),
                  clock_mhz=1980, fp32_lanes_per_sm=128, memory_clock_mhz=2619, memory_bus_bits=5120)


def test_peak_and_bandwidth_formulas():
    assert H100.peak_gflops == pytest.approx(132 * 128 * 2 * 1.98)  # SMs x lanes x FLOP per FMA x GHz
    assert H100.peak_gflops / 1e3 == pytest.approx(66.9, abs=0.05)
    assert H100.memory_bandwidth_gbs == pytest.approx(3352.32)
    assert "66,908" in H100._repr_markdown_()


def test_unknown_fields_give_no_peak():
    assert DeviceInfo(name="x", simulator=False).peak_gflops is None


def test_timing_statistics():
    t = timing.Timing([1.0, 2.0, 3.0, 4.0, 100.0])
    assert t.median_ms == 3.0
    assert t.p10_ms < t.median_ms < t.p90_ms
    assert t.rate(6e9) == pytest.approx(2e12)
    assert "median=3.0000" in repr(t) and "batch=1" in repr(t)


@requires_simulator
def test_simulator_reports_itself_and_does_not_time():
    info = gl.device_info()
    assert info.simulator and info.peak_gflops is None
    line = device.banner()
    assert "simulator" in line and "nothing is timed" in line and "recorded run on" in line and "\n" not in line
    assert gl.time_gpu(lambda: None) is gl.NOT_MEASURED
    assert not gl.NOT_MEASURED and "not measured" in str(gl.NOT_MEASURED)


@requires_simulator
def test_cublas_says_why_it_is_missing():
    from numba import cuda
    import numpy as np

    A = cuda.to_device(np.zeros((4, 4), np.float32))
    with pytest.raises(cublas.CublasUnavailable, match="simulator"):
        cublas.sgemm(A, A, cuda.device_array((4, 4), np.float32))
    assert not cublas.available()


@pytest.mark.parametrize("env", ["GEMM_LESSONS_SIMULATOR=1", "NUMBA_ENABLE_CUDASIM=1"])
def test_simulator_can_be_forced_before_numba_cuda_is_imported(env):
    key, value = env.split("=")
    code = ("import gemm_lessons, numba.cuda\n"
            "from numba.cuda.core import config\n"
            "assert gemm_lessons.SIMULATOR and config.ENABLE_CUDASIM\n"
            "print(gemm_lessons.device_info().name)")
    import os
    out = subprocess.run([sys.executable, "-c", code], env={**os.environ, key: value},
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "CUDA simulator" in out.stdout


def test_blocks_per_sm():
    from gemm_lessons.instruments.compiler_facts import blocks_per_sm

    assert blocks_per_sm(128, 8192, 256) == (2, "registers")  # lesson 04 with the cap
    assert blocks_per_sm(157, 8192, 256)[0] == 1  # without it
    assert blocks_per_sm(16, 8192, 1024) == (2, "threads")
    assert blocks_per_sm(16, 100 * 1024, 128) == (2, "shared memory")
    # ties name every resource that allows the same count: lesson 01's naive kernel, 28 registers
    # (a warp's 896 rounded up to 1,024) and 256 threads: 8 blocks by registers and 8 by threads
    assert blocks_per_sm(28, 0, 256) == (8, "registers = threads")
    assert blocks_per_sm(32, 8192, 1024) == (2, "registers = threads")  # lesson 02's 32x32 tiles


def test_host_bound_flag():
    assert timing.Timing([1.0, 1.0, 1.0], batch=4, host_ms=0.9).host_bound
    assert not timing.Timing([1.0, 1.0, 1.0], batch=4, host_ms=0.1).host_bound


def test_copy_kernel_copies():
    from gemm_lessons.kernels import device_copy

    out = device_copy.example(5, 12)
    assert (out == np.arange(60, dtype=np.float32).reshape(5, 12)).all()


def test_run_on_simulator_returns_json_and_reports_failures():
    from gemm_lessons.instruments.simulator_process import run_on_simulator

    assert run_on_simulator("import gemm_lessons, json; print(json.dumps(gemm_lessons.SIMULATOR))",
                            "probe") is True
    with pytest.raises(RuntimeError, match="probe on the simulator failed"):
        run_on_simulator("raise SystemExit(3)", "probe")
