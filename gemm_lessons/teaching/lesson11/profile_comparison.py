"""Nsight Compute's profiles behind lesson 11's section 4: gl.sgemm's kernels next to cuBLAS's
(tools/ncu_vs_cublas.py's record) and the multistage probe's first form (tools/multistage_probe.py
--profile): kernels with their counters, cuBLAS's kernel name, a short label per kernel.  The
lessons write the sentences.
"""
import re

from gemm_lessons.records import results


def ncu_versus_cublas(device=None, path=None):
    """experiments/ncu_vs_cublas/ncu_vs_cublas.py's recorded profile (or the ncu output at ``path``): (its header line,
    [(call, kernel counters)]), or None."""
    record = results.ncu_record(path or results.experiment("ncu_vs_cublas", "ncu", device))
    if record is None:
        return None
    header, calls, launches = record
    pairs, call = [], -1
    for k in launches:
        if "splitk_reduce" not in k["kernel"]:  # a split plan's reduction belongs to the call before it
            call += 1
        pairs.append((calls[call], k))
    return header, pairs


def cublas_kernel_name(shape, profile=None):
    """The name of the kernel cuBLAS ran at ``shape`` ("MxNxK") in the recorded profile (experiments/ncu_vs_cublas/)
    (the name without its template arguments), or a line saying there is none."""
    profile = profile or ncu_versus_cublas()
    names = [k["kernel"] for call, k in (profile[1] if profile else []) if call == f"{shape} cublas"]
    if not names:
        return f"no cuBLAS kernel at {shape} in the recorded profile"
    m = re.search(r"<(cutlass_[^>(]+)>", names[0])
    return m.group(1) if m else names[0]


def kernel_label(name):
    if "splitk_reduce" in name:
        return "split-K reduction (one float per thread)"
    if "warptile" in name:
        return "warptile (the product)"
    m = re.search(r"tilesize(\d+x\d+)x\d+|sgemm_(\d+x\d+)_", name)
    return f"cuBLAS, tiles {m.group(1) or m.group(2)}" if m else "cuBLAS"


def multistage_profile(device=None):
    """The recorded ncu profile of the multistage probe (experiments/multistage/multistage_probe.py --profile) for
    ``device``: (header line, calls, kernel counters) as results.ncu_record reads it, or None."""
    return results.ncu_record(results.experiment("multistage", "ncu", device))
