import functools

import pytest

from gemm_lessons.model import counting
from gemm_lessons.kernels import ladder
from gemm_lessons.instruments import global_loads
from gemm_lessons.kernels.sgemm import smem_tile

from conftest import requires_simulator


def test_flop_counts_by_hand():
    # one element of C with K=3: 3 mul + 2 add = 5, then alpha*, beta*, + : 8 = 2K+2
    assert counting.sgemm_flops(1, 1, 3, alpha_beta=True) == 8
    assert counting.sgemm_flops(1, 1, 3) == 6
    assert counting.sgemm_flops(512, 256, 128, alpha_beta=True) == (2 * 128 + 2) * 512 * 256


def test_intensity_and_bytes():
    assert counting.sgemm_min_bytes(2, 3, 4) == 4 * (8 + 12 + 6)
    assert counting.sgemm_min_bytes(2, 3, 4, beta=1.0) == 4 * (8 + 12 + 12)
    assert counting.sgemm_intensity(4096, 4096, 4096) == pytest.approx(2 * 4096 / 12)


def test_compute_to_memory_ratio():
    assert counting.compute_to_memory_ratio(8, 8) == 8
    assert counting.compute_to_memory_ratio(16, 4) == pytest.approx(6.4)
    assert counting.compute_to_memory_ratio(1, 1) == 1


@requires_simulator
def test_naive_reads_2mnk():
    c = global_loads.count_global_accesses(ladder.SGEMM["naive"], 24, 40, 16)
    assert c["A_reads"] == c["B_reads"] == 24 * 40 * 16
    assert c["global_reads"] == counting.naive_global_loads(24, 40, 16)
    assert c["C_writes"] == 24 * 40 and c["C_reads"] == 0  # beta == 0: C is not read


@requires_simulator
def test_naive_reads_c_once_when_beta_nonzero():
    c = global_loads.count_global_accesses(ladder.SGEMM["naive"], 24, 40, 16, beta=0.5)
    assert c["C_reads"] == 24 * 40


@requires_simulator
@pytest.mark.parametrize("tile", [8, 16])
def test_tiled_reads_follow_the_formula(tile):
    M, N, K = 32, 48, 64  # multiples of the tile: no partial tiles
    rung = functools.partial(smem_tile.sgemm, tile=tile)
    c = global_loads.count_global_accesses(rung, M, N, K)
    assert c["A_reads"] == M * N * K // tile  # each of the N/BN block columns re-reads A
    assert c["B_reads"] == M * N * K // tile
    assert c["global_reads"] == counting.tiled_global_loads(M, N, K, tile, tile)


@requires_simulator
@pytest.mark.parametrize("name", ["reg1d", "reg2d", "vec", "vec_split", "dbuf"])
def test_register_tiled_rungs_read_each_tile_once(name):
    M, N, K = 256, 128, 16
    c = global_loads.count_global_accesses({**ladder.SGEMM, **ladder.VARIANTS}[name], M, N, K)
    assert c["global_reads"] == counting.tiled_global_loads(M, N, K, 128, 128)


@requires_simulator
@pytest.mark.parametrize("name, shape", [("naive", (24, 40, 16)), ("smem_tile16", (32, 48, 64)),
                                         ("reg1d", (256, 128, 16)), ("reg1d_64x64", (128, 64, 16)),
                                         ("reg2d", (256, 128, 16))])
def test_the_roofline_traffic_model_counts_global_reads(name, shape):
    c = global_loads.count_global_accesses({**ladder.SGEMM, **ladder.VARIANTS}[name], *shape)
    assert c["global_reads"] == counting.sgemm_traffic(name, *shape)["global"]


@requires_simulator
@pytest.mark.parametrize("name", ["smem_tile16", "reg1d", "reg1d_64x64", "reg2d"])
def test_the_roofline_traffic_model_counts_shared_reads(name):
    from gemm_lessons.instruments import shared_tracer

    BM, BN, _, _ = counting.RUNG_TILES[name]
    M, N, K = BM, BN, 16  # one block: the tracer's block 0 is the whole product
    t = shared_tracer.trace_rung(name, (M, N, K), merge=False)
    reads = sum(len(i.addresses) for i in t.instructions if i.op == "ld")
    assert reads == counting.sgemm_traffic(name, M, N, K)["shared"]


def test_shared_wavefront_time_is_one_per_sm_per_clock():
    # 2 SMs at 1 MHz serve 2e6 wavefronts a second: 4e6 of them take 2 s
    assert counting.shared_wavefront_ms(4e6, 2, 1) == pytest.approx(2000)


class _Trace:
    def __init__(self, ld, st):
        self._t = {"ld": {"instructions": 32, "wavefronts": ld}, "st": {"instructions": 32, "wavefronts": st}}

    def totals(self, op):
        return self._t[op]


def _table(padded_ms, unpadded_ms, n=8192):
    from types import SimpleNamespace as NS
    rows = [NS(kernel="smem_padded", rows=n, cols=n, median_ms=padded_ms),
            NS(kernel="smem_tile", rows=n, cols=n, median_ms=unpadded_ms)]
    return NS(rows=rows, record=NS(device=NS(sm_count=132, clock_mhz=1980.0)), source="a test")


def test_transpose_conflict_reading_adds_the_extra_wavefronts_to_the_padded_time():
    unpadded, padded = _Trace(1024, 32), _Trace(32, 32)
    # 8192^2 elements, 32 column reads of 32 elements per block: 65,536 blocks, 992 extra each
    extra_ms = 992 * 65536 / (132 * 1980e6) * 1e3
    text = counting.transpose_conflict_reading(_table(0.395, 0.576), unpadded, padded)
    assert "Why not 32x?" in text and "65,536 blocks" in text and "65.0 M more wavefronts" in text
    assert f"**{extra_ms:.3f} ms**" in text and f"{0.395 + extra_ms:.3f}" in text
    assert "1,056 against 64" in text  # column reads and tile stores, per block
    # the conflicts added 0.181 ms, less than their wavefronts' 0.249 ms: at least the difference overlapped
    assert f"at least {extra_ms - 0.181:.3f} ms of that shared-memory work ran while" in text
    assert "the other 0.395 ms stay" in text and "a copy of the same bytes" not in text  # no copy row here
    assert "the clock under load was lower" in counting.transpose_conflict_reading(
        _table(0.395, 0.9), unpadded, padded)
    assert "No timing" in counting.transpose_conflict_reading(_table(0.395, 0.5, n=64).__class__(
        rows=[], record=None, source="x"), unpadded, padded)
