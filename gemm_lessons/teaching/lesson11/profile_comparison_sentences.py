"""The profiles in words: gl.sgemm's kernels next to cuBLAS's (a table with its column notes),
gl.sgemm's two kernels added up against cuBLAS's one, and the multistage probe's profile.
"""
from gemm_lessons.instruments.ncu_metrics import STALL_REASONS, top_stalls
from gemm_lessons.records import results
from gemm_lessons.teaching.lesson11.profile_comparison import kernel_label, multistage_profile, ncu_versus_cublas


def ncu_versus_cublas_markdown(profile=None):
    """The recorded profile as a table: one row per kernel of each call."""
    profile = profile or ncu_versus_cublas()
    if not profile:
        return "No profile of gl.sgemm next to cuBLAS is recorded for this GPU (`experiments/ncu_vs_cublas/ncu_vs_cublas.py`)."
    header, pairs = profile
    lines = [f"**gl.sgemm's kernels next to cuBLAS's under Nsight Compute** ({header}):", "",
             "| shape | call | kernel | µs (under ncu) | blocks | registers | achieved occupancy | issue slots busy "
             "| FMA pipe busy | L2 hit rate | DRAM read | top stall reasons |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    seen = []
    for call, k in pairs:
        shape, who = call.split(" ", 1)
        top = top_stalls(k, 2)
        seen += [r for r, _ in top if r not in seen]
        stall_text = ", ".join(f"{r.replace('_', ' ')} {v:.0f}%" for r, v in top)
        lines.append(
            f"| {shape} | {who} | {kernel_label(k['kernel'])} | {k['gpu__time_duration.sum'] / 1e3:,.1f} "
            f"| {k['launch__grid_size']:,.0f} | {k['launch__registers_per_thread']:.0f} "
            f"| {k['sm__warps_active.avg.pct_of_peak_sustained_active']:.1f}% "
            f"| {k['smsp__issue_active.avg.pct_of_peak_sustained_active']:.1f}% "
            f"| {k['sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active']:.1f}% "
            f"| {k['lts__t_sector_hit_rate.pct']:.1f}% | {k['dram__bytes_read.sum'] / 1e6:,.1f} MB | {stall_text} |")
    lines += ["", "Columns, as in lesson 08's profile where it has them: *achieved occupancy*, resident warps as % "
              "of the SM's maximum; *issue slots busy*, cycles a scheduler issued an instruction; *FMA pipe busy*, cycles the FMA units worked, as % of the cycles they could; *DRAM read*, "
              "bytes read from DRAM (lesson 08 shows DRAM throughput as % of its peak instead). Stall reasons, as % of "
              "the cycles the warps were resident: "
              + "; ".join(f"**{r.replace('_', ' ')}**: {STALL_REASONS.get(r, 'see the Profiling Guide')}"
                          for r in seen) + ". More in the [glossary](GLOSSARY.md#stall-reasons)."]
    return "\n".join(lines)


def split_versus_one_kernel_sentence(shape="1024x1024x1024", profile=None):
    """Lesson 11's reading of the profile at ``shape``: gl.sgemm's two kernels added up against
    cuBLAS's one, from the record."""
    profile = profile or ncu_versus_cublas()
    if not profile:
        return ""
    T = "gpu__time_duration.sum"
    gl = [k for call, k in profile[1] if call.startswith(f"{shape} gl.sgemm")]
    cub = [k for call, k in profile[1] if call == f"{shape} cublas"]
    if len(gl) != 2 or len(cub) != 1:
        return ""
    a, b, c = gl[0][T] / 1e3, gl[1][T] / 1e3, cub[0][T] / 1e3
    return (f"At {shape} under the profiler, gl.sgemm's product kernel took {a:.1f} µs and its reduction {b:.1f} µs: "
            f"{a + b:.1f} µs in all, against {c:.1f} µs for cuBLAS's one kernel. The product alone was "
            + ("faster" if a < c else "slower") + " than cuBLAS; the reduction is what put the call behind.")


def multistage_profile_sentence(device=None):
    """The recorded ncu profile of the multistage probe's first form, in a generated sentence."""
    record = multistage_profile(device)
    if record is None:
        return ""
    header, calls, launches = record
    parts = []
    for call, k in zip(calls, launches):
        stalls = ", ".join(f"*{r.replace('_', ' ')}* {v:.0f}%" for r, v in top_stalls(k, 2))
        parts.append(f"{call}: issue slots busy {k['smsp__issue_active.avg.pct_of_peak_sustained_active']:.0f}%, FMA pipe "
                     f"busy {k['sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active']:.0f}%, top stalls {stalls}")
    where = results.ncu_where(header)
    return (f"Nsight Compute on the first form, which found each stage's offset at run time (`experiments/multistage/multistage_probe.py "
            f"--profile`, {where}, 4096^3): " + "; ".join(parts) + ".")
