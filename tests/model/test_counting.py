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
