"""Compile kernels to SASS on a machine without a GPU (libnvvm, nvrtc, ptxas, cuobjdump needed).

    GEMM_LESSONS_SIMULATOR=0 python tools/offline_sass.py            # the default TileConfig
    GEMM_LESSONS_SIMULATOR=0 python tools/offline_sass.py "BK=16" "WM=64,WN=32"

Prints registers, spills and counts of the instructions that matter for each configuration:
a quick look before spending GPU time.  The GPU's own compiler may differ slightly.
"""
import collections
import os
import re
import subprocess
import sys
import tempfile
import time

from gemm_lessons import _backend

assert not _backend.SIMULATOR, "run with GEMM_LESSONS_SIMULATOR=0"
from numba import cuda, types  # noqa: E402

from gemm_lessons import tuning  # noqa: E402
from gemm_lessons.sgemm_kernels import warptile  # noqa: E402

CUOBJDUMP = os.environ.get("CUOBJDUMP", "cuobjdump")
OPS = ("FFMA", "LDS.128", "LDS.64", "LDS", "STS.128", "STS", "LDG.E.128", "LDG.E", "BAR.SYNC", "STL", "LDL")


def sass_facts(kernel, max_registers):
    arr = types.Array(types.float32, 2, "C")
    sig = types.void(arr, arr, arr, types.float32, types.float32)
    t = time.time()
    ptx, _ = cuda.compile_ptx(kernel.py_func, sig, cc=(9, 0))
    compile_s = time.time() - t
    with tempfile.TemporaryDirectory() as d:
        open(f"{d}/k.ptx", "w").write(ptx)
        opts = ["-maxrregcount", str(max_registers)] if max_registers else []
        info = subprocess.run(["ptxas", "-arch=sm_90", "-v", *opts, f"{d}/k.ptx", "-o", f"{d}/k.cubin"],
                              capture_output=True, text=True, check=True).stderr
        sass = subprocess.run([CUOBJDUMP, "-sass", f"{d}/k.cubin"], capture_output=True, text=True,
                              check=True).stdout
    counts = collections.Counter()
    for line in sass.splitlines():
        m = re.search(r"/\*[0-9a-f]{4}\*/\s+(?:@!?U?P\w+\s+)?([A-Z0-9_.]+)", line)
        if m:
            op = m.group(1)
            for name in OPS:
                if op == name or op.startswith(name + "."):
                    counts[name] += 1
                    break
            counts["all"] += 1
    regs = int(re.search(r"Used (\d+) registers", info).group(1))
    spill = re.search(r"(\d+) bytes spill stores", info).group(1)
    return dict(regs=regs, spill_bytes=int(spill), compile_s=round(compile_s, 1), **counts)


def main(args):
    for arg in args or [""]:
        cfg = tuning.parse_config(arg)
        try:
            cfg.validate()
        except ValueError as e:
            print(e)
            continue
        k = warptile.make_kernel(cfg)
        print(cfg.short(), sass_facts(k, cfg.max_registers), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
