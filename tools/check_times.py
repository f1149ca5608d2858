"""How long each exercise's check takes on the CUDA simulator (issue 32: at most 15 s each on two
cores), timed on the planted right answers (tests/data/planted/<id>/right-*.py), which run every
stage of a check.  A benchmark, not a test: run it on the machine whose time you want to know.

    GEMM_LESSONS_SIMULATOR=1 python tools/check_times.py [ID ...] [--out FILE.json]

Prints one line per answer (seconds, passed or not) and the slowest per exercise; --out writes
them with the machine's facts (cores, date, versions, commit)."""
import argparse
import glob
import json
import os
import platform
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
TARGET_S = 15.0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("ids", nargs="*", help="exercises to time (default: all)")
    parser.add_argument("--out", help="write the times as JSON here")
    args = parser.parse_args(argv)
    os.environ.setdefault("GEMM_LESSONS_SIMULATOR", "1")
    from gemm_lessons.core import backend
    from gemm_lessons.teaching import exercises
    from gemm_lessons.teaching.exercises import cli

    unknown = sorted(set(args.ids) - set(exercises.ids()))
    if unknown:
        parser.error(f"unknown exercise(s) {', '.join(unknown)}; known: {', '.join(exercises.ids())}")
    rows = []
    for exercise_id in args.ids or exercises.ids():
        for path in sorted(glob.glob(os.path.join(REPO, "tests", "data", "planted", exercise_id, "right-*.py"))):
            start = time.perf_counter()
            fb = cli.check_file(exercise_id, path)
            seconds = time.perf_counter() - start
            rows.append({"exercise": exercise_id, "answer": os.path.basename(path), "seconds": round(seconds, 2),
                         "passed": bool(fb.ok)})
            print(f"{exercise_id:18s} {os.path.basename(path):28s} {seconds:6.1f} s  {'passed' if fb.ok else 'NOT PASSED'}",
                  flush=True)
    slowest = {}
    for r in rows:
        slowest[r["exercise"]] = max(slowest.get(r["exercise"], 0.0), r["seconds"])
    over = {e: s for e, s in slowest.items() if s > TARGET_S}
    print(f"\n{len(slowest)} exercises, slowest check {max(slowest.values()):.1f} s; over {TARGET_S:.0f} s: "
          + (", ".join(f"{e} ({s:.1f} s)" for e, s in sorted(over.items())) or "none"))
    if args.out:
        from gemm_lessons.measure import provenance

        record = {"what": "seconds per exercise check on the CUDA simulator (tools/check_times.py)",
                  "date": provenance.now(), "commit": provenance.git_commit(), "versions": provenance.versions(),
                  "cores": os.cpu_count(), "machine": platform.processor() or platform.machine(),
                  "simulator": backend.SIMULATOR, "target_s": TARGET_S, "checks": rows}
        with open(args.out, "w") as f:
            json.dump(record, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
