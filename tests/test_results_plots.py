from dataclasses import replace

import matplotlib

matplotlib.use("Agg")

import pytest

from gemm_lessons import measure, plots, results


@pytest.fixture(scope="module")
def record():
    return results.load()


def test_a_gpu_record_is_committed(record):
    assert not record.device.simulator
    assert record.device.peak_gflops > 0
    for key in ("date", "versions", "sgemm", "bandwidth", "checks", "ladder"):
        assert getattr(record, key) is not None
    assert all(c.passed is not False for c in record.checks)
    assert all(r.correct is not False for r in record.sgemm)
    names = {r.kernel for r in record.sgemm}
    assert "cublas" in names and set(record.ladder) <= names


def test_recorded_cublas_is_plausible(record):
    cub = results.sgemm_gflops(record, "cublas", (4096, 4096, 4096))
    assert 0 < cub <= record.device.peak_gflops


def test_plots_are_labelled_with_device_and_date(record):
    lbl = results.label(record)
    assert record.device.name in lbl and record.date[:10] in lbl
    for fn in (plots.ladder, plots.versus_size, plots.roofline):
        ax = fn(record)
        assert lbl in ax.get_title()
        matplotlib.pyplot.close(ax.figure)


def test_recorded_comparison_table(record):
    table = measure.recorded(["naive", "cublas"], (4096, 4096, 4096), record)
    md = table._repr_markdown_()
    assert "recorded on" in md and record.device.name in md
    assert table.speedup("cublas", "naive") > 1
    assert table.speedup("cublas", "no-such-kernel") != table.speedup("cublas", "no-such-kernel")  # nan


def test_missing_results_give_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="gemm_lessons.bench"):
        results.load(directory=str(tmp_path))


def test_readme_shows_the_recorded_results():
    from gemm_lessons import report

    assert report.current_block() == report.readme_block(results.load()), \
        "README results differ from results/: run python -m gemm_lessons.report --write"


def test_sanitizer_summary_is_clean():
    files = results.files("sanitizer")
    assert files
    text = open(files[0]).read()
    assert "ERROR SUMMARY: 0 errors" in text and "0 hazards displayed (0 errors, 0 warnings)" in text
    assert "FAIL" not in text.replace("0 failed", "")


def test_bank_ground_truth_agrees_with_the_tracer():
    truth = results.load_banks()
    for row in truth.rows:
        n, t = row.ncu, row.tracer
        assert n["ld_instructions"] == t["ld_instructions"] and n["st_instructions"] == t["st_instructions"]
        if "32x32" not in row.case and row.case not in ("transpose smem_tile", "transpose smem_padded"):
            # the paired-load rule reproduces the profiler's load wavefronts exactly (lesson 06)
            assert n["ld_wavefronts"] == t["ld_wavefronts_paired"], row.case


def test_host_bound_rows_are_flagged_in_tables(record):
    row = replace(results.sgemm_rows(record, "naive", (4096, 4096, 4096))[0], host_bound=True)
    table = measure.Comparison((4096, 4096, 4096), [row], source="test")
    assert "host-bound" in table._repr_markdown_()
    bw = replace(record.bandwidth[0], host_bound=True)
    assert "host-bound" in measure.Table("copy", [bw], record, True)._repr_markdown_()


def test_roofline_rows_place_each_rung_at_its_tile_intensity(record):
    from gemm_lessons import leaderboard

    rows = {r[0]: r for r in leaderboard.roofline_rows(record)}
    peak, shared = record.device.peak_gflops / 1e3, record.device.shared_bandwidth_gbs / 1e3
    assert shared == pytest.approx(record.device.sm_count * 128 * record.device.clock_mhz / 1e6)
    _, _, x_global, _, x_shared, c_shared, _ = rows["naive"]
    assert x_global == pytest.approx(0.25) and x_shared is None  # 2 FLOP per 2 floats of 4 bytes
    _, _, x_global, _, x_shared, c_shared, _ = rows["smem_tile"]
    assert x_global == pytest.approx(2 / (4 * (1 / 32 + 1 / 32)))  # 8 FLOP/B for 32x32 tiles
    assert x_shared == pytest.approx(0.25) and c_shared == pytest.approx(0.25 * shared)
    _, _, _, _, x_shared, c_shared, _ = rows["reg2d"]
    assert x_shared == pytest.approx(2.0) and c_shared == pytest.approx(peak)  # 8x8: shared meets the peak


def test_roofline_rungs_draws_model_and_profiler_points(record):
    axes = plots.roofline_rungs(record)
    model_points = len(axes[0].lines)
    matplotlib.pyplot.close(axes[0].figure)
    counters = {"naive": {"dram__bytes_read.sum": 1e9, "dram__bytes_write.sum": 1e8}}
    axes = plots.roofline_rungs(record, counters)
    assert len(axes[0].lines) == model_points + 2  # the measured point and the line joining it
    assert results.label(record) in axes[0].get_title()
    matplotlib.pyplot.close(axes[0].figure)


def test_ncu_csv_is_read_in_launch_order(tmp_path):
    head = '"ID","Kernel Name","Metric Name","Metric Unit","Metric Value"\n'
    rows = ['"0","k_a","dram__bytes_read.sum","byte","1,024"\n', '"0","k_a","gpu__time_duration.sum","ns","5"\n',
            '"1","k_b","dram__bytes_read.sum","byte","2,048"\n']
    path = tmp_path / "ncu.csv"
    path.write_text("==PROF== Connected\n" + head + "".join(rows))
    launches = results.ncu_launches(path)
    assert [l["kernel"] for l in launches] == ["k_a", "k_b"]
    assert launches[0]["dram__bytes_read.sum"] == 1024.0 and launches[1]["dram__bytes_read.sum"] == 2048.0
