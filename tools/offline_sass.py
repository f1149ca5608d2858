"""Compile kernels to SASS on a machine without a GPU (libnvvm, ptxas, cuobjdump needed).

    GEMM_LESSONS_SIMULATOR=0 python tools/offline_sass.py            # the default TileConfig
    GEMM_LESSONS_SIMULATOR=0 python tools/offline_sass.py "BK=16" "WM=64,WN=32"

Prints registers, spills and counts of the instructions that matter for each configuration
(gemm_lessons/instruments/offline_sass.py): a quick look before spending GPU time.  The GPU's own compiler
may differ slightly.
"""
import sys
import time

from gemm_lessons.instruments import offline_sass
from gemm_lessons.runs import tuning
from gemm_lessons.kernels.sgemm import warptile


def main(args):
    why_not = offline_sass.missing_toolchain()
    if why_not:
        sys.exit(f"cannot compile offline: {why_not}")
    for arg in args or [""]:
        cfg = tuning.parse_config(arg)
        try:
            cfg.validate()
        except ValueError as e:
            print(e)
            continue
        t = time.time()
        facts = offline_sass.sass_facts(warptile.make_kernel(cfg), cfg.max_registers)
        print(cfg.short(), {k: v for k, v in facts.items() if v}, f"{time.time() - t:.1f} s", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
