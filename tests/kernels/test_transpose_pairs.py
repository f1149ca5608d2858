"""kernels/library/transpose_pairs.py: exact on even sides across block edges and off 16 bytes,
refuses odd sides; every global access two floats from 8-byte boundaries and its shared accesses
2-way as its doc says (the access log and the bank tracer, on the simulator); library.transpose
sends it the shapes its dispatch comment names."""
import numpy as np
import pytest
from numba import cuda

from gemm_lessons.kernels.library import transpose_pairs

from conftest import check_transpose_offset, requires_simulator

SHAPES = [(2, 2), (64, 66), (66, 64), (130, 70), (70, 130), (4, 258), (258, 4)]


def run(rows, cols, offset=0, **kw):
    """src and dst ``offset`` floats into fresh buffers (offset 2: 8-byte but not 16-byte aligned)."""
    check_transpose_offset(transpose_pairs.transpose, rows, cols, offset, **kw)


@pytest.mark.parametrize("rows, cols", SHAPES)
def test_pairs_is_exact_on_even_sides(rows, cols):
    run(rows, cols)


@pytest.mark.parametrize("rows, cols", [(66, 70), (4, 6)])
def test_pairs_is_exact_off_16_bytes(rows, cols):
    run(rows, cols, offset=2)


@pytest.mark.parametrize("tile, threads_rows", [(64, 8), (64, 16), (32, 8), (16, 16)])
def test_pairs_other_tiles(tile, threads_rows):
    run(70, 98, TILE=tile, ROWS=threads_rows)


@pytest.mark.parametrize("rows, cols", [(3, 4), (4, 3), (5, 7)])
def test_odd_sides_are_refused(rows, cols):
    with pytest.raises(ValueError, match="both sides must be even"):
        transpose_pairs.transpose(cuda.to_device(np.zeros((rows, cols), np.float32)),
                                  cuda.device_array((cols, rows), np.float32))


@requires_simulator
@pytest.mark.parametrize("rows, cols", [(66, 70), (64, 66)])
def test_every_global_access_is_a_pair_and_shared_is_2_way(rows, cols):
    from gemm_lessons.core import float4
    from gemm_lessons.instruments import access_log

    src = np.random.default_rng(0).random((rows, cols), dtype=np.float32)
    log, out = access_log.log(lambda src, dst: transpose_pairs.transpose(src, dst),
                              {"src": src, "dst": np.zeros((cols, rows), np.float32)})
    assert np.array_equal(out["dst"], src.T)
    path = float4.__file__
    sites = {}  # (block, thread, site) -> addresses, in order
    for e in (e for e in log.events if e.kind == "global"):
        assert e.site[0] == path, f"a global access outside float4.py's load2/store2: {e.site}"
        sites.setdefault((e.block, e.thread, e.array), []).append(e.address)
    for key, addresses in sites.items():  # each call moves two neighbours from an 8-byte boundary
        assert len(addresses) % 2 == 0
        for a, b in zip(addresses[::2], addresses[1::2]):
            assert a % 8 == 0 and b == a + 4, (key, a, b)
    trace = log.shared_trace((0, 0, 0), merge=())
    assert max(r["degree"] for r in trace.by_site()) == 2


def test_library_sends_rows_multiple_of_4_and_even_cols_here(monkeypatch):
    from gemm_lessons.library import device_transpose

    chosen = []
    real = device_transpose._transpose_launcher
    monkeypatch.setattr(device_transpose, "_transpose_launcher",
                        lambda kind, width=None: chosen.append(kind) or real(kind, width))
    monkeypatch.setattr(device_transpose, "_LAUNCHERS", {})  # no launcher cached from another test
    for (rows, cols), kind in [((68, 70), "pairs"), ((20, 130), "pairs"), ((70, 68), "flat"),
                               ((68, 68), "wide"), ((68, 71), "flat"), ((6, 70), "few_rows")]:
        src = np.random.default_rng(rows + cols).random((rows, cols), dtype=np.float32)
        out = device_transpose.transpose(cuda.to_device(src)).copy_to_host()
        assert np.array_equal(out, src.T) and chosen[-1] == kind, ((rows, cols), chosen[-1:], kind)
