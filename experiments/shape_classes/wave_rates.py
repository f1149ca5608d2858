"""The dispatch model's rates, as calibrated and as solved to reproduce the calibration, scored on
the shape suite's record (no GPU: it reads results/shapes-<device>.json).

    python3 -m experiments.shape_classes.wave_rates [--device NAME] [--out DIR]
    -> DIR/wave-rates-<device>.json (kept in experiments/shape_classes/)

The model (gemm_lessons.library.dispatch) charges each wave by its busiest SM, and takes a full
SM's rate as the kernel's whole-GPU rate at the calibration square divided by the SMs.  At 4096^3
with 128x128 tiles the grid is 3.88 waves and the model charges 4, so it estimates its own
calibration shape about 3% high (lesson 11's Lab notes).  "solved" scales each measured kernel's
full rate until the model's estimate of its calibration square equals the time measured there;
the lone-block rate, measured with one block per SM, stays.  Both models then estimate every plan
the suite timed: how far from the measured times (|estimate / measured - 1|), and whether the plan
with the smallest estimate was the fastest timed (its regret: how much longer the chosen plan took
than the fastest).
"""
import argparse
import dataclasses
import statistics
import sys

from experiments._shared import write_record


def solved(model, rec, iterations=8):
    """``model`` with each measured kernel's full rate scaled so that it reproduces its calibration."""
    from gemm_lessons.library import dispatch

    speeds = dict(model.speeds)
    for key, speed in model.speeds.items():
        kernel, tiles = key.split("/")
        cal = next((c for c in rec.calibration or [] if c.get("plan") == f"{kernel} {tiles}" and "median_ms" in c), None)
        if not speed.measured or cal is None:
            continue
        plan, size = dispatch.Plan(kernel, tiles), cal["size"]
        for _ in range(iterations):  # the estimate falls as the full rate rises: a fixed point, reached in a few steps
            trial = dataclasses.replace(model, speeds={**speeds, key: speed})
            speed = dataclasses.replace(speed, gflops=speed.gflops * 1e3 * trial.estimate_s(plan, size, size, size)
                                        / cal["median_ms"])
        speeds[key] = speed
    return dataclasses.replace(model, speeds=speeds)


def score(model, rec):
    """Estimates against the suite's timed plans (lesson 11's dispatch_model.model_points): errors,
    and per shape the plan with the smallest estimate against the fastest timed."""
    from gemm_lessons.teaching.lesson11.dispatch_model import model_points

    points = model_points(rec, model)  # (shape, plan, estimate ms, measured ms, ...)
    errors = sorted(abs(est / ms - 1) for _, _, est, ms, *_ in points)
    shapes = []
    for shape in dict.fromkeys(p[0] for p in points):
        mine = [p for p in points if p[0] == shape]
        chosen, fastest = min(mine, key=lambda p: p[2]), min(mine, key=lambda p: p[3])
        shapes.append({"shape": list(shape), "chosen": chosen[1], "fastest": fastest[1],
                       "regret_pct": 100 * (chosen[3] / fastest[3] - 1)})
    return {"plans": len(errors), "median_error_pct": 100 * statistics.median(errors),
            "p90_error_pct": 100 * errors[int(0.9 * len(errors))],
            "chosen_is_fastest": sum(s["chosen"] == s["fastest"] for s in shapes), "shapes": len(shapes),
            "max_regret_pct": max(s["regret_pct"] for s in shapes),
            "mean_regret_pct": statistics.mean(s["regret_pct"] for s in shapes), "per_shape": shapes}


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--device", help="whose shape-suite record (default: the course's device)")
    p.add_argument("--out")
    args = p.parse_args(argv)
    from gemm_lessons.measure import provenance
    from gemm_lessons.teaching.lesson11 import suite_record

    rec = suite_record.load(args.device)
    calibrated = suite_record.recorded_model(rec)
    models = {"calibrated": calibrated, "solved": solved(calibrated, rec)}
    out = {"kind": "wave-rates", "device": rec.device.name, "date": provenance.now(), "git_commit": provenance.git_commit(),
           "shape_suite": {"date": rec.date, "git_commit": rec.git_commit}, "models": {}}
    for name, model in models.items():
        s = score(model, rec)
        out["models"][name] = {"full_gflops": {k: v.gflops for k, v in model.speeds.items() if v.measured}, **s}
        print(f"{name:10s} {s['plans']} plans: median error {s['median_error_pct']:.1f}%, 90th percentile "
              f"{s['p90_error_pct']:.1f}%; chosen = fastest on {s['chosen_is_fastest']} of {s['shapes']} shapes, "
              f"regret at most {s['max_regret_pct']:.1f}%, mean {s['mean_regret_pct']:.2f}%")
    write_record("shape_classes", out, args.out, kind="wave_rates")
    return 0


if __name__ == "__main__":
    sys.exit(main())
