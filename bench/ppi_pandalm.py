"""Real-label check of the calibration statistics on PandaLM (999 pairs, 3 human annotators, 2 real judges).

Each judge's agreement with the human majority; then, over 1,000 seeded 10% "reviewed" subsets, the PPI 95%
interval's coverage of the full-data human mean preference (limit >= 0.93) and its median width over the
human-only interval's (limit < 1). Preference 1 / 0.5 / 0: response1 better / tie / response2 better; an unscored
judge verdict is left out of the kappa and predicts a tie.

Run: .venv/bin/python bench/ppi_pandalm.py [--data datasets/pandalm]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from judgewatch.stats.agreement import cohen_kappa, exact_agreement
from judgewatch.stats.coverage import subset_coverage
from judgewatch.stats.krippendorff import krippendorff_alpha
from judgewatch.stats.pandalm import load_pandalm, preference_score

DEFAULT_DATA = Path(__file__).resolve().parents[1] / "datasets" / "pandalm"
COVERAGE_LIMIT = 0.93
WIDTH_LIMIT = 1.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--draws", type=int, default=1000)
    args = parser.parse_args()
    data = load_pandalm(args.data)
    a = data.annotators
    human_kappas = [cohen_kappa(a[:, i], a[:, j]).estimate for i, j in [(0, 1), (0, 2), (1, 2)]]
    alpha = krippendorff_alpha(a.T, level="nominal")
    print(f"humans: pairwise Cohen kappa {', '.join(f'{k:.3f}' for k in human_kappas)}")
    print(f"humans: Krippendorff alpha (nominal) {alpha.estimate:.3f} [{alpha.low:.3f}, {alpha.high:.3f}]")
    human = preference_score(data.human_majority)
    print(f"full-data human mean preference for response1: {human.mean():.4f} (n={human.size})")
    for name, verdicts in data.judges.items():
        kappa = cohen_kappa(verdicts, data.human_majority)
        agree = exact_agreement(verdicts, data.human_majority)
        unscored = int(np.isnan(verdicts).sum())
        print(
            f"{name}: kappa vs human majority {kappa.estimate:.3f} [{kappa.low:.3f}, {kappa.high:.3f}],"
            f" exact agreement {agree.estimate:.3f}, n={kappa.n} ({unscored} unscored)"
        )
        judge = np.nan_to_num(preference_score(verdicts), nan=0.5)
        check = subset_coverage(human, judge, fraction=0.1, draws=args.draws, seed=0)
        cov_ok = "OK" if check.ppi_coverage >= COVERAGE_LIMIT else "BELOW"
        width_ok = "OK" if check.median_width_ratio < WIDTH_LIMIT else "OVER"
        print(
            f"  {check.draws} subsets of {check.subset_size}: PPI coverage {check.ppi_coverage:.3f}"
            f" (limit >= {COVERAGE_LIMIT}: {cov_ok}), human-only coverage {check.classical_coverage:.3f}"
        )
        print(
            f"  median width ratio {check.median_width_ratio:.3f} (PPI / human-only interval,"
            f" limit < {WIDTH_LIMIT:.0f}: {width_ok}), median lambda {check.median_lam:.2f}"
        )


if __name__ == "__main__":
    main()
