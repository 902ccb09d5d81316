"""Benchmark: PPI tier estimates with intervals at production scale, against a plain numpy mean.

2 tiers x 3 criteria over 1,000,000 judge verdicts and 100,000 human labels (synthetic 1-5 scores): the six PPI
estimates and three tier differences, timed against `np.mean` over the same arrays, best of several repeats.
Prints "ratio X (time of PPI / time of np.mean)" against LIMIT: PPI makes a few passes over each array.

Run: .venv/bin/python bench/stats.py
"""

from __future__ import annotations

import argparse

import numpy as np

from judgewatch.stats.ppi import PPIEstimate, ppi_diff_unpaired, ppi_mean
from judgewatch.testing.timing import best_of

VERDICTS = 1_000_000
LABELS = 100_000
TIERS = ("quantized", "full")
CRITERIA = ("correctness", "faithfulness", "completeness")
REPEATS = 7
LIMIT = 15.0


Arrays = tuple[np.ndarray, np.ndarray, np.ndarray]


def synthetic(seed: int = 0) -> tuple[dict[tuple[str, str], Arrays], dict[tuple[str, str], float]]:
    """Per (tier, criterion): human labels and judge scores on the labeled items, judge scores on all; and
    the mean human score over all items (what the estimates should cover)."""
    rng = np.random.default_rng(seed)
    per_tier, labeled = VERDICTS // len(TIERS), LABELS // len(TIERS)
    data, truth = {}, {}
    for t, tier in enumerate(TIERS):
        for criterion in CRITERIA:
            human = np.clip(np.round(rng.normal(3.6 - 0.2 * t, 1.0, per_tier)), 1, 5)
            judge = np.clip(human + np.round(rng.normal(0.3, 0.8, per_tier)), 1, 5)
            pick = rng.choice(per_tier, size=labeled, replace=False)
            data[tier, criterion] = (human[pick], judge[pick], judge)
            truth[tier, criterion] = float(human.mean())
    return data, truth


def main() -> None:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    data, truth = synthetic()

    def run_ppi() -> dict[tuple[str, str], PPIEstimate]:
        est = {key: ppi_mean(y, f, f_all) for key, (y, f, f_all) in data.items()}
        for criterion in CRITERIA:
            ppi_diff_unpaired(est[TIERS[0], criterion], est[TIERS[1], criterion])
        return est

    def run_mean() -> None:
        for y, _, f_all in data.values():
            np.mean(f_all)
            np.mean(y)

    t_ppi, t_mean = best_of(run_ppi, REPEATS), best_of(run_mean, REPEATS)
    est = run_ppi()
    for (tier, criterion), e in est.items():
        print(
            f"{tier:9s} {criterion:12s} {e.estimate:.4f} [{e.low:.4f}, {e.high:.4f}]"
            f"  truth {truth[tier, criterion]:.4f}  n={e.n} N={e.n_all} lam={e.lam:.2f}"
            f" effective_n={e.effective_n:,.0f}"
        )
    for criterion in CRITERIA:
        d = ppi_diff_unpaired(est[TIERS[0], criterion], est[TIERS[1], criterion])
        print(f"diff      {criterion:12s} {d.estimate:+.4f} [{d.low:+.4f}, {d.high:+.4f}]")
    ratio = t_ppi / t_mean
    print(f"PPI (6 estimates + 3 differences): {t_ppi * 1e3:.2f} ms")
    print(f"np.mean over the same arrays: {t_mean * 1e3:.2f} ms")
    verdict = "OK" if ratio <= LIMIT else "OVER"
    print(f"ratio {ratio:.1f} (time of PPI / time of np.mean), limit {LIMIT:.0f}: {verdict}")


if __name__ == "__main__":
    main()
