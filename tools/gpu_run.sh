#!/usr/bin/env bash
# One device call: benchmark, then execute every notebook on the GPU (outputs kept).
# Usage on the GPU machine: OUT=<dir> bash tools/gpu_run.sh [bench|notebooks|all]
set -uo pipefail
what=${1:-all}
nvidia-smi > "$OUT/gpu.log" 2>&1
if [[ $what == bench || $what == all ]]; then
  python3 -m gemm_lessons.bench --no-progress --out results > "$OUT/bench.log" 2>&1
  echo "bench rc=$?" >> "$OUT/gpu.log"
  cp results/*.json results/*.png "$OUT/" 2>/dev/null
fi
if [[ $what == notebooks || $what == all ]]; then
  python3 tools/refresh_outputs.py --keep-all > "$OUT/notebooks.log" 2>&1
  echo "notebooks rc=$?" >> "$OUT/gpu.log"
  tar cf "$OUT/notebooks.tar" notebooks/*.ipynb
fi
