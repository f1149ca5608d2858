"""Time chosen TileConfigs at 4096^3 (and 8192^3) next to cuBLAS and vec_split; a quick look
before a full sweep.   python tools/explore_warptile.py "BK=16" "WM=64,WN=32,max_registers=None"
"""
import functools
import json
import sys

from gemm_lessons import ladder, tuning
from gemm_lessons.benchmark import time_sgemm
from gemm_lessons.sgemm_kernels import warptile
from gemm_lessons.sgemm_kernels.warptile import TileConfig

sizes = [(4096,) * 3] + ([(8192,) * 3] if "--big" in sys.argv else [])
configs = []
for arg in sys.argv[1:]:
    if arg.startswith("--") or arg.endswith(".json"):
        continue
    configs.append(tuning.parse_config(arg))
rows = tuning.sweep(configs, size=sizes[0], repeats=10)
print(tuning.table_markdown(rows), flush=True)
top = sorted([r for r in rows if r.config and r.gflops], key=lambda r: -r.gflops)[:2]
kernels = {"vec_split": ladder.SGEMM["vec_split"]}
for r in top:
    cfg = TileConfig(**r.config)
    kernels[cfg.short()] = functools.partial(warptile.sgemm, config=cfg)
base = time_sgemm(kernels, sizes, 10, progress=False)
for r in base:
    print(r.kernel, r.M, round(r.gflops / 1e3, 2), round(r.pct_cublas or 100, 1))
json.dump([r.to_dict() for r in rows], open(sys.argv[-1] if sys.argv[-1].endswith(".json") else "/dev/null", "w"),
          indent=1)
