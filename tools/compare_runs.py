"""Do two benchmark runs agree within their spreads?  (Issue: reproducible numbers.)

    python tools/compare_runs.py results/reproducibility/<device>-run-a.json results/reproducibility/<device>-run-b.json \
        > results/reproducibility/<device>.txt
(the paths of results.path_for("reproducibility", device, "run-a") and "reproducibility-report").
Two measurements of the same kernel and size agree when their p10-p90 ranges overlap.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from gemm_lessons.records.schema import BenchRecord  # noqa: E402  (this checkout's package)


def rows(rec):
    out = {}
    for r in rec.sgemm:
        if r.gflops is not None:
            out[("sgemm", r.kernel, f"{r.M}x{r.N}x{r.K}")] = (r.gflops_p10, r.gflops, r.gflops_p90)
    for r in (rec.transpose or []) + (rec.bandwidth or []):
        out[("bytes", r.kernel, f"{r.rows}x{r.cols}")] = (r.gbs_p10, r.gbs, r.gbs_p90)
    return out


def main(a_path, b_path):
    a, b = BenchRecord.read(a_path), BenchRecord.read(b_path)
    ra, rb = rows(a), rows(b)
    keys = sorted(set(ra) & set(rb))
    agree, worst = 0, []
    lines = []
    for k in keys:
        (lo1, m1, hi1), (lo2, m2, hi2) = ra[k], rb[k]
        ok = lo1 <= hi2 and lo2 <= hi1
        agree += ok
        diff = 100 * (m2 - m1) / m1
        worst.append((abs(diff), k))
        lines.append(f"{'ok ' if ok else 'NO '} {k[1]:<24}{k[2]:>16}  run A {m1:>10,.1f} [{lo1:,.1f}-{hi1:,.1f}]"
                     f"  run B {m2:>10,.1f} [{lo2:,.1f}-{hi2:,.1f}]  {diff:+.2f}%")
    print(f"run A: {a.date}  run B: {b.date}  device: {a.device.name}")
    print(f"{agree} of {len(keys)} measurements agree within their p10-p90 ranges; "
          f"largest difference of medians {max(worst)[0]:.2f}% ({max(worst)[1][1]} {max(worst)[1][2]})")
    diffs = sorted(d for d, _ in worst)
    print(f"median |difference| {diffs[len(diffs) // 2]:.2f}%; 90th percentile {diffs[int(0.9 * len(diffs))]:.2f}%")
    print("(GFLOPS for sgemm rows, GB/s for copies and transposes)")
    print()
    print("\n".join(lines))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
