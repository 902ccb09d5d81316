"""How many golden items `judgewatch judges validate` needs for an AUROC interval of a given width.

The Hanley-McNeil (1982) variance beside `stats.auroc.auroc_interval` (paired bootstrap over questions) on
simulated judges of known AUROC. Limit: at AUROC 0.80 the 40-item mini sets give an interval narrower than 0.30.

    .venv/bin/python bench/validation_size.py [--reps 40] [--resamples 1000]
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
from scipy import stats as sps

from judgewatch.stats.auroc import auroc, auroc_interval

CUTS = np.array([-0.6, 0.2, 0.9, 1.6])  # integer levels 1-5 from a continuous score (a judge's rounding)


def hanley_mcneil_width(a: float, n: int, z: float = 1.959964) -> float:
    """Width of the normal 95% interval of an AUROC `a` from n good and n bad independent scores."""
    q1, q2 = a / (2 - a), 2 * a * a / (1 + a)
    var = (a * (1 - a) + (n - 1) * (q1 - a * a) + (n - 1) * (q2 - a * a)) / (n * n)
    return 2 * z * math.sqrt(var)


def items_for_width(a: float, width: float) -> int:
    """The smallest n whose Hanley-McNeil 95% interval is at most `width` wide."""
    n = 2
    while hanley_mcneil_width(a, n) > width:
        n += 1
    return n


def simulate(a: float, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Paired (good, bad) continuous scores whose AUROC over all pairs is `a`."""
    d = math.sqrt(2) * sps.norm.ppf(a)
    question = rng.normal(0, math.sqrt(0.5), n)
    good = d + question + rng.normal(0, math.sqrt(0.5), n)
    bad = question + rng.normal(0, math.sqrt(0.5), n)
    return good, bad


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=40)
    parser.add_argument("--resamples", type=int, default=1000)
    args = parser.parse_args()
    rng = np.random.default_rng(20261201)
    started = time.process_time()
    print("| true AUROC | items | Hanley-McNeil width | bootstrap width, continuous | integer 1-5 (its AUROC) |")
    print("|---|---|---|---|---|")
    forty = 0.0
    at_400: dict[float, float] = {}
    for a in (0.7, 0.8, 0.9):
        for n in (20, 40, 100, 200, 400):
            cont, ints, int_auc = [], [], []
            for _ in range(args.reps):
                good, bad = simulate(a, n, rng)
                g, b = np.searchsorted(CUTS, good) + 1.0, np.searchsorted(CUTS, bad) + 1.0
                for widths, (x, y) in ((cont, (good, bad)), (ints, (g, b))):
                    est = auroc_interval(x, y, paired=True, resamples=args.resamples, seed=int(rng.integers(10**9)))
                    widths.append(est.high - est.low)
                int_auc.append(auroc(g, b))
            if a == 0.8 and n == 40:
                forty = float(np.mean(cont))
            if n == 400:
                at_400[a] = float(np.mean(cont))
            print(
                f"| {a:.2f} | {n} | {hanley_mcneil_width(a, n):.3f} | {np.mean(cont):.3f} | "
                f"{np.mean(ints):.3f} ({np.mean(int_auc):.2f}) |"
            )
    print()
    print("| true AUROC | items for width 0.20 / 0.10 / 0.05: Hanley-McNeil | paired bootstrap (400 items, 1/sqrt n) |")
    print("|---|---|---|")
    for a in (0.7, 0.8, 0.9):
        boot = " / ".join(str(math.ceil(400 * (at_400[a] / w) ** 2)) for w in (0.2, 0.1, 0.05))
        print(f"| {a:.2f} | {' / '.join(str(items_for_width(a, w)) for w in (0.2, 0.1, 0.05))} | {boot} |")
    print(f"\nCPU {time.process_time() - started:.1f} s")
    print(f"AUROC 0.80, 40 items: bootstrap width {forty:.3f}, ratio {forty / 0.30:.2f} of the 0.30 limit")


if __name__ == "__main__":
    main()
