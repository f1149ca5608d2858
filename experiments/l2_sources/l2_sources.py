"""Where lesson 01's L2 misses were served from: DRAM, or the L2's other partition.

    ncu --query-metrics > metrics.txt
    ncu --clock-control none --profile-from-start off --csv --print-units base \
        --metrics "$(python3 -m experiments.l2_sources.l2_sources metrics metrics.txt)" \
        python3 -m experiments.l2_sources.l2_sources run > ncu-l2-sources-<device>.csv
    python3 -m experiments.l2_sources.l2_sources table ncu-l2-sources-<device>.csv

(from the repository root; the CSV, with a '# experiments/l2_sources run on DEVICE, DATE, commit C,
driver ..., Nsight Compute ...' line put first, is kept in experiments/l2_sources/)

Lesson 01's profile of `naive` at 4096^3 counts more L2 misses (L2 traffic times the miss rate)
than DRAM moved.  The H100's L2 is built of two partitions; Nsight Compute's L2 counters split
the sectors the L2 slices handled by where the request came from (``srcunit_tex``: the SMs;
``srcunit_ltcfabric``: the other partition, over the fabric that joins them) and count lookups
that missed (Profiling Guide, "L2 Cache" / "lts" metrics,
https://docs.nvidia.com/nsight-compute/ProfilingGuide/).  ``run`` launches each of lesson 01's
two kernels once at 4096^3 inside the profiled range (warmed up outside it); ``metrics`` keeps,
of the counters below, those this ncu knows (its --query-metrics listing); ``table`` prints one
row per counter.
"""
import sys

SIZE = (4096, 4096, 4096)
WANTED = ["gpu__time_duration.sum", "lts__t_bytes.sum", "lts__t_sectors.sum", "lts__t_sector_hit_rate.pct",
          "lts__t_sectors_lookup_hit.sum", "lts__t_sectors_lookup_miss.sum",
          "lts__t_sectors_srcunit_tex.sum", "lts__t_sectors_srcunit_tex_lookup_miss.sum",
          "lts__t_sectors_srcunit_ltcfabric.sum", "lts__t_sectors_srcunit_ltcfabric_lookup_miss.sum",
          "lts__t_sectors_srcnode_gpc.sum", "lts__t_sectors_srcnode_fbp.sum",
          "dram__sectors_read.sum", "dram__bytes_read.sum", "dram__bytes_write.sum"]


def metrics(listing):
    """The wanted counters whose base name (before the last '.') this ncu lists."""
    with open(listing) as f:
        known = {line.split()[0] for line in f if line.strip() and not line.startswith(("-", "Device", "Metric"))}
    return ",".join(m for m in WANTED if m.rsplit(".", 1)[0] in known)


def run():
    import functools

    import numpy as np

    import gemm_lessons  # noqa: F401  (chooses the GPU first)
    from gemm_lessons.instruments import profiler
    from gemm_lessons.kernels.sgemm import naive, naive_uncoalesced
    from gemm_lessons.runs.shapes import random_device_matrix
    from numba import cuda

    M, N, K = SIZE
    rng = np.random.default_rng(1)
    A, _ = random_device_matrix(M, K, rng)
    B, _ = random_device_matrix(K, N, rng)
    C = cuda.device_array((M, N), np.float32)
    calls = {"naive": functools.partial(naive.sgemm, A, B, C),
             "naive_uncoalesced": functools.partial(naive_uncoalesced.sgemm, A, B, C)}
    profiler.profile_calls(calls)


def read(path):
    """[(call, {metric: value})]: the launches in ncu's CSV, named by run's '# call' lines."""
    from gemm_lessons.records import results

    _, calls, launches = results.ncu_record(path)
    return list(zip(calls, launches))


def table(path):
    data = read(path)
    names = [m for m in WANTED if any(m in k for _, k in data)]
    print("| counter | " + " | ".join(call for call, _ in data) + " |")
    print("|---|" + "---:|" * len(data))
    for m in names:
        print(f"| {m} | " + " | ".join(f"{k.get(m, float('nan')):,.4g}" for _, k in data) + " |")


if __name__ == "__main__":
    what = sys.argv[1] if len(sys.argv) > 1 else ""
    if what == "metrics":
        print(metrics(sys.argv[2]))
    elif what == "run":
        run()
    elif what == "table":
        table(sys.argv[2])
    else:
        sys.exit(__doc__)
