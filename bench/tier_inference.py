"""Benchmark: do the traffic tier intervals cover the truth? A simulation with known truth.

Runs `judgewatch.testing.tier_simulation` (two tiers serving different request mixes, a judge biased by tier
and request type, stratified sampling at unequal rates, 10% uniform plus borderline routing, double labels,
reviewer noise) for `--reps` replications and prints, per quantity (each tier's traffic mean, the tier gap
unadjusted and adjusted to the pooled request mix) and estimator, the coverage of the nominal 95% interval,
the mean width and the mean error. The corrected estimates must cover at least LIMIT of the time.

The last line is `coverage X naive Y pooled Z`: X the lowest coverage among the corrected estimates, Y and Z
the same for the judge-only and the pooled (pre-estimand) estimators.

Run: .venv/bin/python bench/tier_inference.py --reps 500
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from judgewatch.testing.tier_simulation import METHODS, QUANTITIES, Design, run

LIMIT = 0.93


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=500, help="replications (a fresh population each)")
    parser.add_argument("--seed", type=int, default=20261201)
    args = parser.parse_args()
    design = Design()
    start = time.perf_counter()
    out = run(args.reps, seed=args.seed, design=design)
    elapsed = time.perf_counter() - start
    print(f"{args.reps} replications of {design.population} interactions in {elapsed:.0f} s (seed {args.seed})")
    print("| quantity | estimator | coverage of 95% CI | mean width | width / human-only | mean error |")
    print("|---|---|---|---|---|---|")
    for q in QUANTITIES:
        human = float(np.mean(out.width[(q, "human")]))
        for m in METHODS:
            width = float(np.mean(out.width[(q, m)]))
            error = float(np.mean(out.error[(q, m)]))
            print(f"| {q} | {m} | {out.coverage(q, m):.3f} | {width:.3f} | {width / human:.2f} | {error:+.3f} |")
    corrected = out.lowest("corrected")
    print(f"lowest corrected coverage {corrected:.3f} against the limit {LIMIT}: ratio {corrected / LIMIT:.3f}")
    print(f"coverage {corrected:.3f} naive {out.lowest('naive'):.3f} pooled {out.lowest('pooled'):.3f}")


if __name__ == "__main__":
    main()
