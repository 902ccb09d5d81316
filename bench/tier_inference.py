"""Benchmark: do the traffic tier intervals cover the truth? A simulation with known truth.

`judgewatch.testing.tier_simulation` replicated `--reps` times, then with exactly 5, 10 and 20 labels per tier:
coverage of the nominal 95% intervals, mean width and error per quantity and estimator. The corrected estimates
must cover at least LIMIT. Last lines: `small-n coverage k=5 X k=10 Y k=20 Z` and `coverage X naive Y pooled Z`.

Run: .venv/bin/python bench/tier_inference.py --reps 500
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace

import numpy as np

from judgewatch.testing.tier_simulation import METHODS, QUANTITIES, Design, run

LIMIT = 0.93
SMALL_N = (5, 10, 20)  # human labels per tier in the small-sample runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=500, help="replications (a fresh population each)")
    parser.add_argument("--seed", type=int, default=20261201)
    parser.add_argument("--small-reps", type=int, default=400, help="replications per small-n run")
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
    small = {}
    for k in SMALL_N:
        few = run(args.small_reps, seed=args.seed + k, design=replace(design, labels_per_tier=k))
        small[k] = few.lowest("corrected")
        widths = ", ".join(f"{q} {float(np.mean(few.width[(q, 'corrected')])):.2f}" for q in QUANTITIES)
        covers = ", ".join(f"{q} {few.coverage(q, 'corrected'):.3f}" for q in QUANTITIES)
        print(f"{k} labels per tier, {args.small_reps} replications: coverage {covers}; mean width {widths}")
    lowest = min(small.values())
    print(f"lowest small-n corrected coverage {lowest:.3f} against the limit {LIMIT}: ratio {lowest / LIMIT:.3f}")
    print("small-n coverage " + " ".join(f"k={k} {c:.3f}" for k, c in small.items()))
    print(f"coverage {corrected:.3f} naive {out.lowest('naive'):.3f} pooled {out.lowest('pooled'):.3f}")


if __name__ == "__main__":
    main()
