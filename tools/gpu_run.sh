#!/usr/bin/env bash
# What a GPU session runs.  Usage on the GPU machine: OUT=<dir> bash tools/gpu_run.sh STEP...
#   tests      the README's test command (pytest, notebooks included) -> logs/pytest.log, timed per test
#   bench      python -m gemm_lessons.runs.bench -> results/<device>.json + plots (copied to $OUT)
#   shapes     python -m gemm_lessons.runs.shapes: gl.sgemm vs cuBLAS on the shape suite, per-call cost, the
#              dispatch model measured -> results/shapes-<device>.json + <device>-shapes.png (copied to $OUT)
#   banks      ncu shared-memory counters for the bank lesson -> $OUT/ncu-banks.csv
#   repro      two bench runs back to back -> $OUT/run-a.json, run-b.json
#   dbuf       vec_split and the double-buffered variant only -> $OUT/dbuf.json (experiments/dbuf/ keeps the 2026-11-22 run)
#   lesson07   lesson 07's kernels (vec_split, the first attempt, one and two buffers, the guards) and cuBLAS at
#              4096^3 and 8192^3 in one process -> $OUT/lesson07-<device>.json (keep as results/experiments/)
#   tuning     lesson 08's sweep (python -m gemm_lessons.runs.tuning) -> results/tuning-<device>.json (copied to $OUT)
#   steps05    lesson 05's steps, reg2d to vec one change at a time, and cuBLAS at 4096^3 and 8192^3 in one
#              process (python -m gemm_lessons.teaching.lesson05_steps) -> results/experiments/lesson05-steps-<device>.json
#              (copied to $OUT)
#   roofline   ncu DRAM / L2 / shared counters of every SGEMM rung at 4096^3 -> $OUT/ncu-roofline.csv
#   l2order    lesson 08's block order: warptile in row-major and grouped order (GROUP_M 4, 8, 16) with cuBLAS in one
#              process at 4096^3, 8192^3, 16384^3 -> $OUT/l2order-<device>.json (keep as results/experiments/);
#              then ncu L2 / DRAM counters of one launch of each at 8192^3 -> $OUT/ncu-l2order.csv (about 4 minutes)
#   profile    ncu memory counters of the copy, sgeam and the transposes -> $OUT/ncu-transpose.csv
#   profiler   the profiler inside the lessons (gl.profile): tests/instruments/test_profiler.py, whose GPU test profiles
#              real kernels under ncu -> logs/profiler-tests.log; then the counters of lessons 01, 04, 06
#              and 08 recorded -> $OUT/ncu-lessons-<device>.csv (for results/), their tables -> logs/profiler-tables.md
#   sanitize   compute-sanitizer memcheck + racecheck (or $SANITIZE_TOOLS) over every kernel (or $SANITIZE_ONLY) -> logs
#   limiter    python -m gemm_lessons.runs.limiter measure, run under ncu, predict -> $OUT/limiter-<device>.json,
#              $OUT/ncu-limiter-<device>.csv (keep both in results/)
#   latency    python -m gemm_lessons.measure.latency and the primer's compiler listing -> results/latency-<device>.json,
#              results/primer-listing.json (copied to $OUT)
#   allocpool  experiments/alloc_pool's probe: gl.sgemm(A, B) with numba's allocator and the driver's pool, one run
#              -> $OUT/alloc-pool-probe-<device>.json (keep in experiments/alloc_pool/)
#   classes    experiments/shape_classes' probe: issue 34's shape classes, every plan and cuBLAS, clock and power
#              -> $OUT/shape-classes-probe-<device>.json (keep in experiments/shape_classes/)
#   classesncu the same shapes' ragged plans and cuBLAS under ncu -> $OUT/ncu-shape-classes-<device>.csv
#   notebooks  execute every notebook (or those of $NOTEBOOKS, e.g. "04 05") on the GPU, outputs kept; seconds per
#              cell in logs/notebooks.log; $CELL_TIMEOUT interrupts a cell that runs longer (its traceback logged)
#              -> $OUT/notebooks.tar
# Logs go to $OUT/logs/ and come back as $OUT/logs.tar.
set -uo pipefail
mkdir -p "$OUT/logs"
nvidia-smi > "$OUT/logs/nvidia-smi.log" 2>&1
for step in "$@"; do
  case $step in
    tests)
      start=$(date +%s)
      timeout "${TESTS_TIMEOUT:-570}" python3 -m pytest -v --durations=40 -p no:cacheprovider 2>&1 \
        | while IFS= read -r line; do echo "$(( $(date +%s) - start ))s $line"; done > "$OUT/logs/pytest.log"
      echo "tests rc=${PIPESTATUS[0]} $(tail -1 "$OUT/logs/pytest.log")" >> "$OUT/logs/steps.log" ;;
    bench)
      python3 -m gemm_lessons.runs.bench --no-progress > "$OUT/logs/bench.log" 2>&1
      echo "bench rc=$?" >> "$OUT/logs/steps.log"
      python3 -m gemm_lessons.teaching.plots >> "$OUT/logs/bench.log" 2>&1
      echo "plots rc=$?" >> "$OUT/logs/steps.log"
      cp results/*.json results/*.png "$OUT/" 2>/dev/null ;;
    shapes)
      python3 -m gemm_lessons.runs.shapes --no-progress > "$OUT/logs/shapes.log" 2>&1
      echo "shapes rc=$?" >> "$OUT/logs/steps.log"
      cp results/shapes-*.json results/*-shapes*.png "$OUT/" 2>/dev/null ;;
    banks)
      python3 tools/bank_truth.py run > /dev/null 2>&1  # compile once, outside the profiler
      ncu --clock-control none --csv --metrics "$(python3 tools/bank_truth.py metrics)" \
          python3 tools/bank_truth.py run > "$OUT/ncu-banks.csv" 2> "$OUT/logs/ncu.err"
      echo "banks rc=$?" >> "$OUT/logs/steps.log" ;;
    repro)
      # two complete benchmark runs back to back, for tools/compare_runs.py
      for run in a b; do
        python3 -m gemm_lessons.runs.bench --no-progress --out "/tmp/run-$run" > "$OUT/logs/bench-$run.log" 2>&1
        echo "repro $run rc=$?" >> "$OUT/logs/steps.log"
        cp /tmp/run-$run/*.json "$OUT/run-$run.json"
      done ;;
    dbuf)
      python3 -m gemm_lessons.runs.bench --no-progress --kernels vec_split dbuf --out /tmp/dbuf \
          > "$OUT/logs/bench-dbuf.log" 2>&1
      echo "dbuf rc=$?" >> "$OUT/logs/steps.log"
      cp /tmp/dbuf/*.json "$OUT/dbuf.json" ;;
    lesson07)
      # lesson 07's buffers, each pair one change apart, and cuBLAS in one process
      python3 -m gemm_lessons.runs.bench --no-progress --kernels vec_split dbuf_indexed dbuf_one_buffer dbuf \
          dbuf_short_circuit dbuf_select --sizes 4096 8192 --shapes --variant-limit 8192 --out /tmp/lesson07 \
          > "$OUT/logs/lesson07.log" 2>&1
      echo "lesson07 rc=$?" >> "$OUT/logs/steps.log"
      for f in /tmp/lesson07/*.json; do cp "$f" "$OUT/lesson07-$(basename "$f")"; done ;;
    tuning)
      # lesson 08's sweep and heatmap, one run -> results/tuning-<device>.json
      python3 -m gemm_lessons.runs.tuning > "$OUT/logs/tuning.log" 2>&1
      echo "tuning rc=$?" >> "$OUT/logs/steps.log"
      cp results/tuning-*.json "$OUT/" 2>/dev/null ;;
    steps05)
      python3 -m gemm_lessons.teaching.lesson05_steps --no-progress > "$OUT/logs/steps05.log" 2>&1
      echo "steps05 rc=$?" >> "$OUT/logs/steps.log"
      cp results/experiments/lesson05-steps-*.json "$OUT/" 2>/dev/null ;;
    roofline)
      # one profiled launch per rung (compiling happens on the host, outside the profiled kernels)
      ncu --clock-control none --print-units base --csv --metrics "$(python3 tools/roofline_profile.py metrics)" \
          python3 tools/roofline_profile.py run > "$OUT/ncu-roofline.csv" 2> "$OUT/logs/ncu-roofline.err"
      echo "roofline rc=$?" >> "$OUT/logs/steps.log" ;;
    l2order)
      python3 tools/l2order.py time --out /tmp/l2order > "$OUT/logs/l2order.log" 2>&1
      echo "l2order time rc=$?" >> "$OUT/logs/steps.log"
      cp /tmp/l2order/experiments/l2order-*.json "$OUT/" 2>/dev/null
      # one profiled launch per order (every kernel is compiled before the first launch)
      ncu --clock-control none --csv --print-units base --metrics "$(python3 tools/l2order.py metrics)" \
          python3 tools/l2order.py run > "$OUT/ncu-l2order.csv" 2> "$OUT/logs/ncu-l2order.err"
      echo "l2order ncu rc=$?" >> "$OUT/logs/steps.log" ;;
    profile)
      python3 tools/transpose_profile.py run > /dev/null 2>&1
      ncu --clock-control none --csv --metrics "$(python3 tools/transpose_profile.py metrics)" \
          python3 tools/transpose_profile.py run > "$OUT/ncu-transpose.csv" 2> "$OUT/logs/ncu-transpose.err"
      echo "profile rc=$?" >> "$OUT/logs/steps.log" ;;
    profiler)
      timeout 300 python3 -m pytest -q -s -rs -n 0 -p no:cacheprovider tests/instruments/test_profiler.py \
          > "$OUT/logs/profiler-tests.log" 2>&1
      echo "profiler tests rc=$? $(tail -1 "$OUT/logs/profiler-tests.log")" >> "$OUT/logs/steps.log"
      # one ncu run (--clock-control none) over the lessons' kernels, each launched once at 4096^3
      timeout 420 python3 -m gemm_lessons.instruments.profiler record --out "$OUT" \
          > "$OUT/logs/profiler-tables.md" 2> "$OUT/logs/profiler-record.err"
      echo "profiler record rc=$?" >> "$OUT/logs/steps.log" ;;
    sanitize)
      for tool in ${SANITIZE_TOOLS:-memcheck racecheck}; do
        # --report-api-errors no: cuda-bindings probes driver entry points with cuGetProcAddress and
        # some probes fail by design; those host-side API errors are not kernel errors
        timeout "${SANITIZE_TIMEOUT:-560}" compute-sanitizer --tool $tool --report-api-errors no \
          python3 tools/sanitize.py ${SANITIZE_ONLY:-} > "$OUT/logs/sanitizer-$tool${SANITIZE_TILES:+-${SANITIZE_TILES// /-}}.log" 2>&1
        echo "sanitize $tool rc=$?" >> "$OUT/logs/steps.log"
      done ;;
    limiter)
      # the limiter model's inputs (issue 29): the GPU's ceilings and every case timed with clock and
      # power; one profiled launch per case; the model against both -> limiter-<device>.json
      python3 -m gemm_lessons.runs.limiter measure --out "$OUT" > "$OUT/logs/limiter.log" 2>&1
      echo "limiter measure rc=$?" >> "$OUT/logs/steps.log"
      csv=$(python3 -c "from gemm_lessons.records import results; from gemm_lessons.measure.device import device_info; print(results.path_for('ncu-limiter', device_info().name, directory='$OUT'))")
      ncu --clock-control none --print-units base --csv --profile-from-start off \
          --metrics "$(python3 -m gemm_lessons.runs.limiter metrics)" \
          python3 -m gemm_lessons.runs.limiter run > "$csv" 2> "$OUT/logs/ncu-limiter.err"
      echo "limiter ncu rc=$?" >> "$OUT/logs/steps.log"
      python3 -m gemm_lessons.runs.limiter predict --out "$OUT" >> "$OUT/logs/limiter.log" 2>&1
      echo "limiter predict rc=$?" >> "$OUT/logs/steps.log" ;;
    latency)
      python3 -m gemm_lessons.measure.latency > "$OUT/logs/latency.log" 2>&1
      echo "latency rc=$?" >> "$OUT/logs/steps.log"
      python3 -m gemm_lessons.teaching.primer_listing > "$OUT/logs/listing.log" 2>&1
      echo "listing rc=$?" >> "$OUT/logs/steps.log"
      cp results/latency-*.json results/primer-listing.json "$OUT/" 2>/dev/null ;;
    allocpool)
      python3 -m experiments.alloc_pool.alloc_probe --out "$OUT" > "$OUT/logs/allocpool.log" 2>&1
      echo "allocpool rc=$?" >> "$OUT/logs/steps.log" ;;
    classes)
      python3 -m experiments.shape_classes.classes_probe --out "$OUT" > "$OUT/logs/classes.log" 2>&1
      echo "classes rc=$?" >> "$OUT/logs/steps.log" ;;
    classesncu)
      ncu --clock-control none --profile-from-start off --csv --print-units base \
          --metrics "$(python3 -m experiments.shape_classes.classes_profile metrics)" \
          python3 -m experiments.shape_classes.classes_profile run > "$OUT/ncu-shape-classes.csv" 2> "$OUT/logs/classesncu.err"
      echo "classesncu rc=$?" >> "$OUT/logs/steps.log" ;;
    notebooks)
      # NOTEBOOKS="04 05" executes only those lessons (a call has 10 minutes: a few lessons per call)
      paths=$(for n in ${NOTEBOOKS:-}; do ls notebooks/${n}_*.ipynb; done)
      # CELL_TIMEOUT=120: a cell running longer is interrupted and its traceback logged (lesson 06 stalled
      # here in its widget cell, or the one after, on 2026-11-24, while nbval ran all of it in the same session)
      GEMM_LESSONS_TEXT_PROGRESS=1 python3 tools/refresh_outputs.py --keep-all --timeout "${CELL_TIMEOUT:-1800}" $paths \
        > "$OUT/logs/notebooks.log" 2>&1
      echo "notebooks ${NOTEBOOKS:-all} rc=$?" >> "$OUT/logs/steps.log"
      tar cf "$OUT/notebooks.tar" ${paths:-notebooks/*.ipynb} ;;
  esac
done
cat "$OUT/logs/steps.log"  # each step's rc (the tests' summary line) also on stdout: the call's output keeps it
# the logs come back as $OUT/logs.tar; a command that runs this script must not write a logs.tar of its own
tar cf "$OUT/logs.tar" -C "$OUT" logs && rm -r "$OUT/logs"
