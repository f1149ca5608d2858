"""Lesson 05's kernels compiled offline for sm_90 (no GPU): the SASS facts the lesson reads.

    GEMM_LESSONS_SIMULATOR=0 python tools/lesson05_offline.py

Needs numba's libnvvm, ptxas and cuobjdump (gemm_lessons.instruments.offline_sass; a ptxas at least as new as
the PTX numba's libnvvm writes: with pip's CUDA 13 packages, put site-packages/nvidia/cu13/bin
first on PATH or set $PTXAS).  For each kernel, compiled as tests/teaching/test_lesson05_steps.py compiles
it (lesson 04's cap of 128 registers, none for vec): registers, spill bytes, the instruction
counts of offline_sass.sass_facts, the main loop (inspect_kernel.main_loop: the k-step loop and
the loop around it) and the address operand of every shared load.  wide_loads and vec are also
compiled with and without max_registers=128, and the two listings compared (apart from the
kernel's name).  Writes results/experiments/lesson05-offline-sass.json, which
gemm_lessons.teaching.lesson05_steps renders in the lesson.  (cuobjdump needs nvdisasm: pip's
nvidia-cuda-cuobjdump and nvidia-cuda-nvdisasm, or the CUDA toolkit.)
"""
import json
import os
import subprocess
import sys

import gemm_lessons  # noqa: F401  (first: it chooses numba's backend)
from gemm_lessons.kernels import ladder
from gemm_lessons.teaching import lesson05_steps
from gemm_lessons.instruments import offline_sass
from gemm_lessons.measure import provenance

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CAP = 128  # lesson 04's register cap, which every step but vec carries
COUNTS = ("LDS", "LDS.64", "LDS.128", "LDG.E", "LDG.E.128", "STG.E", "STG.E.128", "FFMA")
CAP_CHECK = ("wide_loads", "vec")  # the lesson's step 5: the cap does not bind for these


def kernels():
    """Name in the record -> (kernel, the register cap it is compiled with on a GPU)."""
    rungs = {**ladder.SGEMM, **ladder.VARIANTS}
    out = {name: (rungs[name].kernel, CAP) for name in ("reg2d_contiguous", "reg2d_unrolled", "transposed_a")}
    out[lesson05_steps.RANGE_LOOPS] = (lesson05_steps.transposed_a_with_range_loops(), CAP)
    out["wide_loads"] = (rungs["wide_loads"].kernel, CAP)
    out["vec"] = (rungs["vec"].kernel, None)
    return out


def facts(kernel, max_registers):
    """What the lesson reads in the SASS of ``kernel``, and the listing."""
    f = offline_sass.sass_facts(kernel, max_registers)
    listing, _ = offline_sass.compile_sass(kernel, max_registers)
    return {"max_registers": max_registers, "regs": f["regs"], "spill_bytes": f["spill_bytes"],
            **{op: f[op] for op in COUNTS},
            "loop": f["loop"],  # inspect_kernel.main_loop: {"inner", "inner_FFMA", "inner_LDS", "outer_rest"}
            "lds_addresses": lesson05_steps.lds_addresses(listing)}, listing


def without_name(listing):
    """A cuobjdump listing without its 'Function :' lines: numba numbers every compile in the
    kernel's mangled name, so two compiles of one kernel differ there and nowhere else."""
    return [line for line in listing.splitlines() if not line.strip().startswith("Function :")]


def git(*args):
    return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True).stdout.strip()


def main():
    why_not = offline_sass.missing_toolchain()
    if why_not:
        sys.exit(f"cannot compile offline: {why_not}")
    record = {
        "what": "lesson 05's step kernels compiled offline for sm_90 (numba's NVVM to PTX, ptxas -arch=sm_90, "
                "cuobjdump -sass; no GPU), each with the register cap it carries on a GPU: registers, spill bytes, "
                "instruction counts, the main loop (inspect_kernel.main_loop) and the address operand of every "
                "shared load; wide_loads and vec also with and without max_registers=128 (identical_sass: the two "
                "listings are the same line for line, apart from the kernel's mangled name, which numba numbers "
                "per compile)",
        "command": "GEMM_LESSONS_SIMULATOR=0 python tools/lesson05_offline.py (with pip's CUDA 13 ptxas and "
                   "cuobjdump, site-packages/nvidia/cu13/bin, first on PATH)",
        "date": provenance.now(),
        "git_commit": git("rev-parse", "--short", "HEAD"),
        # the kernels' files as committed (False: the working tree differs from the commit there)
        "kernels_as_committed": git("status", "--porcelain", "--", "gemm_lessons/sgemm_kernels") == "",
        "versions": offline_sass.versions(),
        "arch": "sm_90",
        "kernels": {},
        "register_cap": {},
    }
    listings = {}
    for name, (kernel, cap) in kernels().items():
        record["kernels"][name], listings[name] = facts(kernel, cap)
        print(name, {k: v for k, v in record["kernels"][name].items() if k != "lds_addresses"}, flush=True)
    rungs = {**ladder.SGEMM, **ladder.VARIANTS}
    for name in CAP_CHECK:
        with_cap, listing_with = facts(rungs[name].kernel, CAP)
        without, listing_without = facts(rungs[name].kernel, None)
        record["register_cap"][name] = {"regs_with_cap": with_cap["regs"], "regs_without_cap": without["regs"],
                                        "identical_sass": without_name(listing_with) == without_name(listing_without)}
        print(name, record["register_cap"][name], flush=True)
    path = lesson05_steps.OFFLINE_RECORD
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(record, f, indent=1)
        f.write("\n")
    print("wrote", os.path.relpath(path, REPO))
    return 0


if __name__ == "__main__":
    sys.exit(main())
