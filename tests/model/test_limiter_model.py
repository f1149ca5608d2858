"""The limiter model's arithmetic, by hand."""
import pytest

from gemm_lessons.model import limiter
from gemm_lessons.model.limiter import Machine, Work

# an H100-like machine: 132 SMs at 1980 MHz, 3000 GB/s copy, 10000 GB/s L2, 350 ns DRAM latency
H = Machine("test GPU", sm_count=132, clock_mhz=1980, dram_gbs=3000, l2_gbs=10000, dram_latency_ns=350)


def sgemm_work(n=4096, instructions_per_ffma=1.0, wavefronts_per_ffma=0.0, blocks=1024, per_sm=2):
    warp_ffma = n ** 3 / 32
    return Work(ffma=n ** 3, warp_instructions=instructions_per_ffma * warp_ffma,
                shared_wavefronts=wavefronts_per_ffma * warp_ffma, l2_bytes=1e9, dram_bytes=2e8,
                blocks=blocks, blocks_per_sm=per_sm)


def test_every_ceiling_by_hand():
    w = Work(ffma=132 * 128 * 1.98e9, warp_instructions=2 * 132 * 4 * 1.98e9, shared_wavefronts=3 * 132 * 1.98e9,
             l2_bytes=4 * 10000e9, dram_bytes=5 * 3000e9, blocks=132, blocks_per_sm=1)
    p = limiter.predict(w, H)
    got = {c.name: c.seconds for c in p.ceilings}
    assert got == pytest.approx({"fp32": 1, "issue": 2, "shared": 3, "l2": 4, "dram": 5})
    assert p.binding == "dram" and p.waves == 1 and p.tail == 1 and p.seconds == pytest.approx(5)


def test_peak_and_issue_equal_fp32_when_every_instruction_is_an_ffma():
    assert H.peak_tflops == pytest.approx(66.9, abs=0.05)
    p = limiter.predict(sgemm_work(instructions_per_ffma=1.0), H)
    assert p.ceiling("issue").seconds == pytest.approx(p.ceiling("fp32").seconds)
    p = limiter.predict(sgemm_work(instructions_per_ffma=1.2), H)
    assert p.binding == "issue" and p.ceiling("issue").seconds == pytest.approx(1.2 * p.ceiling("fp32").seconds)


def test_shared_memory_binds_at_one_and_a_half_wavefronts_per_warp_ffma():
    """smem_tile's 1.5 wavefronts per warp-FMA: a ceiling of 2/1.5 x ... of the FP32 peak (the issue's 11.2 TFLOPS
    on an H100 counts FLOP per wavefront: 64 FLOP per warp-FFMA / 1.5 x 132 SMs x 1.98 GHz)."""
    p = limiter.predict(sgemm_work(wavefronts_per_ffma=1.5, instructions_per_ffma=2.0), H)
    assert p.binding == "shared"
    tflops = 2 * 4096 ** 3 / p.ceiling("shared").seconds / 1e12
    assert tflops == pytest.approx(64 / 1.5 * 132 * 1.98e9 / 1e12) and tflops == pytest.approx(11.15, abs=0.01)


def test_the_last_wave_stretches_the_time():
    p = limiter.predict(sgemm_work(blocks=1024, per_sm=2), H)  # 264 slots: 3.88 waves -> 4
    assert p.waves == 4 and p.tail == pytest.approx(4 * 264 / 1024)
    assert p.seconds == pytest.approx(max(c.seconds for c in p.ceilings) * p.tail)


def test_littles_law():
    """Bytes in flight needed per SM: copy rate x latency / SMs (the issue's 7.8 KB on an H100)."""
    assert H.in_flight_needed_per_sm == pytest.approx(3000 * 350 / 132)
    m = Machine("h100", 132, 1980, 2980, 10000, 683 / 1.98)
    assert m.in_flight_needed_per_sm / 1024 == pytest.approx(7.6, abs=0.1)
    # 8 KB in flight for half the time: about half the copy rate
    w = Work(0, 0, 0, 0, 5.4e8, blocks=65536, blocks_per_sm=2, in_flight_per_sm=8192)
    assert limiter.latency_fraction(w, m) == pytest.approx(0.5 * 8192 / m.in_flight_needed_per_sm)
    p = limiter.predict(w, m)
    assert p.binding == "latency"
    assert p.ceiling("latency").seconds == pytest.approx(p.ceiling("dram").seconds / limiter.latency_fraction(w, m))
    # enough in flight: the latency ceiling is the DRAM ceiling
    w = Work(0, 0, 0, 0, 5.4e8, blocks=65536, blocks_per_sm=8, in_flight_per_sm=32768)
    assert limiter.predict(w, m).ceiling("latency").seconds == pytest.approx(limiter.predict(w, m).ceiling("dram").seconds)


def test_no_latency_ceiling_where_bytes_in_flight_are_not_modelled():
    assert limiter.predict(sgemm_work(), H).ceiling("latency") is None


def test_the_profilers_busiest_unit():
    assert limiter.busiest({"fp32": 70, "issue": 80, "shared": 20, "l2": 10, "dram": 5}) == "issue"
    assert limiter.busiest({"fp32": 10, "issue": 30, "shared": 20, "l2": 40, "dram": 55}) == "latency"
