"""gemm_lessons.teaching.profile_readings: each lesson's reading of its profiler table, in words,
follows the recorded counters (results/ncu-*.csv) and the tracer."""
import pytest

from gemm_lessons.instruments import ncu_metrics, profiler
from gemm_lessons.teaching import profile_readings


def test_lesson_08_reading_follows_the_recorded_counters():
    prof = profiler.recorded(["dbuf", "warptile"], rows=ncu_metrics.LESSON_ROWS["08"])
    text = profile_readings.reading_08(prof)
    ratio = prof.value("warptile", "time") / prof.value("dbuf", "time")
    assert f"{ratio:.3f}x" in text
    gap = max(abs(prof.value("warptile", r) - prof.value("dbuf", r)) for r in ("occupancy", "l2_hit", "dram_throughput"))
    assert ("do not tell the two kernels apart" in text) == (abs(ratio - 1) < 0.02 and gap < 1)
    dram = max(prof.value(n, "dram_throughput") for n in ("dbuf", "warptile"))
    assert (f"DRAM was at most {dram:.1f}% busy" in text) == (dram < 20)
    tops = {prof.top_stalls(n, 1)[0][0] for n in ("dbuf", "warptile")}
    assert ("The largest stall reason of both is *not selected*" in text) == (tops == {"not_selected"})


def test_lesson_04_reading_follows_the_recorded_counters_and_the_tracer():
    names = ["reg2d", "reg2d_uncapped", "reg2d_contiguous"]
    prof = profiler.recorded(names, rows=ncu_metrics.LESSON_ROWS["04"])
    text = profile_readings.reading_04(prof, traced_conflicts=2048)
    ratio = prof.value("reg2d_uncapped", "time") / prof.value("reg2d", "time")
    assert f"one launch took {ratio:.2f}x as long" in text
    assert f"fits {prof.value('reg2d_uncapped', 'blocks_per_sm'):.0f} block(s) per SM against " \
           f"{prof.value('reg2d', 'blocks_per_sm'):.0f}" in text
    expected = 2048 * (4096 // 128) ** 2 * (4096 // 8)  # per block and slice x blocks x slices
    counted = prof.value("reg2d_contiguous", "shared_ld_conflicts")
    assert f"make {expected / 1e6:,.1f} M; the profiler counted {counted / 1e6:,.1f} M" in text
    assert abs(counted / expected - 1) < 0.001  # the tracer's count, scaled, is the profiler's
    assert f"{prof.value('reg2d', 'shared_ld_conflicts'):,.0f}" in text
    # without recorded counters of all three: says what to run
    assert "run `python -m gemm_lessons.instruments.profiler record`" in profile_readings.reading_04(
        profiler.recorded(["reg2d"], rows=ncu_metrics.LESSON_ROWS["04"]))


def test_issue_reading_says_whether_the_issue_slots_were_full():
    def prof(*busy):
        counters = {f"k{i}": ({ncu_metrics.ISSUE_ACTIVE: b} if b is not None else {}) for i, b in enumerate(busy)}
        return profiler.Profile((1, 1, 1), ("issue_active",), counters, "test")
    full = profile_readings.issue_reading(prof(91.0, 85.0), ["k0", "k1"])
    assert "91% (`k0`) and 85% (`k1`)" in full and "the likely limit" in full
    assert "were not the limit" in profile_readings.issue_reading(prof(40.0), ["k0"])
    assert "likely limit" not in profile_readings.issue_reading(prof(90.0, 50.0), ["k0", "k1"])
    assert "no issue-slot counter" in profile_readings.issue_reading(prof(None), ["k0"])
    assert "| [issue](GLOSSARY.md#issue) slots busy" in prof(91.0)._repr_markdown_()


def test_shared_limit_reading_names_the_drivers_split_only_when_it_applies():
    lim = ncu_metrics.BLOCK_LIMITS

    def prof(config=None):
        a = {lim["shared memory"]: 7.0, lim["registers"]: 2.0}
        b = {lim["shared memory"]: 1.0, lim["registers"]: 1.0}
        if config:
            a[ncu_metrics.SHARED_CONFIG], b[ncu_metrics.SHARED_CONFIG] = config
        return profiler.Profile((1, 1, 1), ("blocks_per_sm",), {"a": a, "b": b}, "test")
    assert "A likely reading, not recorded here" in profile_readings.shared_limit_reading(prof(), "a", "b")
    measured = profile_readings.shared_limit_reading(prof((102400.0, 16384.0)), "a", "b")
    assert "16 KiB for `b` against 100 KiB for `a`: less" in measured and "likely" not in measured
    assert "does not explain" in profile_readings.shared_limit_reading(prof((16384.0, 16384.0)), "a", "b")
    assert profile_readings.shared_limit_reading(prof(), "b", "a") == ""  # a's limit is not the lower one


def test_lesson_01_reading_follows_the_recorded_counters():
    prof = profiler.recorded(["naive", "naive_uncoalesced"], rows=ncu_metrics.LESSON_ROWS["01"])
    text = profile_readings.reading_01(prof)
    dram, t = prof.value("naive", "dram_bytes"), prof.value("naive", "time")
    assert f"DRAM moved {dram / 1e9:.1f} GB in {ncu_metrics.fmt_time(t)} ({dram / t:,.0f} GB/s)" in text
    assert "reads A and B once and writes C once" in text
    ia, ib = prof.value("naive", "issue_active"), prof.value("naive_uncoalesced", "issue_active")
    if ia and ib:
        assert f"{ia / ib:.2f}x as often" in text
        assert f"took {prof.value('naive_uncoalesced', 'time') / t:.2f}x as long" in text
        assert f"touched {prof.value('naive_uncoalesced', 'sectors_per_request'):.1f} sectors on average" in text
    memory = prof.top_stalls("naive", 1)[0][0] in ("long_scoreboard", "lg_throttle")
    assert ("waited mostly for global memory" in text) == memory
    assert "No counters of `naive`" in profile_readings.reading_01(profiler.recorded(["no_such"], rows=("time",)))


def test_lesson_01_reading_names_l2_misses_above_dram_as_unexplained():
    prof = profiler.recorded(["naive"], rows=ncu_metrics.LESSON_ROWS["01"])
    l2, hit, dram = (prof.value("naive", r) for r in ("l2_bytes", "l2_hit", "dram_bytes"))
    text = profile_readings.reading_01(prof)
    assert ("more than DRAM moved" in text) == (l2 * (1 - hit / 100) > 1.1 * dram)


def test_lesson_01s_l2_misses_are_split_by_source_in_the_record():
    """Lesson 01: more L2 misses than DRAM reads, because the L2 also looks up (and misses)
    requests that come over its fabric; the SMs' own misses match DRAM's reads (experiments/l2_sources/)."""
    record = profiler.l2_sources()
    assert record and "H100" in record[0] and "commit" in record[0] and "Nsight Compute" in record[0]
    k = record[1]["naive"]
    sm, fabric = k["lts__t_sectors_srcunit_tex_lookup_miss.sum"], k["lts__t_sectors_srcunit_ltcfabric_lookup_miss.sum"]
    assert abs(sm + fabric - k["lts__t_sectors_lookup_miss.sum"]) < 0.01 * k["lts__t_sectors_lookup_miss.sum"]
    assert abs(sm / k["dram__sectors_read.sum"] - 1) < 0.01 and fabric > 0.3 * sm
    text = profile_readings.l2_sources_reading("naive", record)
    assert "missed 33.2 GB, and DRAM read 33.1 GB (0.2% apart); the other 16.3 GB" in text
    assert "no such profile" in profile_readings.l2_sources_reading("naive", ("", {}))


def test_store_wavefronts_reading_scales_one_block_to_the_grid():
    class Trace:  # one block's count, as shared_tracer's totals give it
        def totals(self, op):
            return {"wavefronts": 384}

    prof = profiler.recorded(["vec", "vec_split"], size=(4096, 4096, 4096), rows=ncu_metrics.LESSON_ROWS["06"])
    got = prof.value("vec", "shared_st_wavefronts")
    if got is None:
        pytest.skip("no recorded profile of vec")
    scaled = 384 * 32 * 32 * 512 / 2  # 32 x 32 blocks, 512 slices of 8 against the 2 traced
    text = profile_readings.store_wavefronts_reading(prof, {"vec": Trace()}, (128, 128, 16))
    assert f"`vec` {got / 1e6:,.1f} M against {scaled / 1e6:,.1f} M ({100 * (got / scaled - 1):+.1f}%)" in text
