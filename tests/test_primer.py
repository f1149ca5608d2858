"""The primer's kernels, its compiler listing and its memory-hierarchy table."""
import json

import numpy as np
import pytest

from gemm_lessons import hierarchy, latency, results
from gemm_lessons.primer import listing, reverse, saxpy

from conftest import requires_simulator
from test_latency import _fake_record


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
    assert rec is not None and set(rec["kernels"]) == {"saxpy", "reverse_slices"}
    k = rec["kernels"]["saxpy"]
    body = listing.ptx_body(k["ptx"])
    assert "fma.rn.f32" in body and "ld.param" not in body and ".reg" not in body
    sass = listing.sass_until_exit(k["sass"])
    assert sass.splitlines()[-1].strip().endswith("EXIT ;") and "NOP" not in sass
    table = listing.explain_opcodes(k["sass"])
    for op in ("FFMA", "LDG", "STG", "S2R", "ISETP"):
        assert f"| `{op}` |" in table
    summary = k["sass_summary"]
    count = lambda prefix: sum(n for op, n in summary.items() if op.startswith(prefix))  # noqa: E731
    assert (count("FFMA"), count("LDG"), count("STG")) == (1, 2, 1)
    r = rec["kernels"]["reverse_slices"]["sass_summary"]
    assert r.get("STS") == r.get("LDS") == 1 and any(op.startswith("BAR.SYNC") for op in r)


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
