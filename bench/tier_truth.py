"""Benchmark: do the PPI-corrected tier scores and tier gaps cover the all-human truth, on real human labels?

BEGIN's development responses, each generation model a tier; a judge scores every response, a random `--share` gets
its human label, and `calibration.tiers` estimates each tier and gap (bench/README.md, "Tier truth on real human
labels"). Limits: coverage >= 0.90 for tiers and for gaps; mean PPI width / human-only width < 1.

Run: .venv/bin/python bench/tier_truth.py [--draws 200] [--share 0.1] [--baseline ctrl] [--judge reference]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # `python bench/x.py`: the repo root, for bench.*

from bench.reference_domains import BEGIN_FILES, GENERIC, RIGHT, begin_rows
from judges.base import Judge
from judgewatch.calibration.tiers import tier_differences, tier_estimates
from judgewatch.contract.items import JudgeItem
from judgewatch.contract.rubric import Rubric, load_rubric
from judgewatch.settings import REPO_ROOT

COVERAGE_LIMIT = 0.90
WIDTH_LIMIT = 1.0
SEED = 20261204
CRITERION = "faithfulness"


@dataclass(frozen=True)
class Population:
    """Every judged response: its tier, human score and judge score on the rubric's scale."""

    frame: pd.DataFrame  # columns: item_key, tier, human_all, judge
    unscored: int


async def judge_scores(judge: Judge, items: list[JudgeItem], rubric: Rubric) -> list[float | None]:
    verdicts = [await judge.judge(item, rubric) for item in items]
    return [None if v.scores.get(CRITERION) is None else float(v.scores[CRITERION]) for v in verdicts]


def population(judge: Judge, rubric: Rubric) -> Population:
    rows = [r for name in BEGIN_FILES for r in begin_rows(name) if r.label != GENERIC]
    low, high = float(rubric.scale.min), float(rubric.scale.max)
    scores = asyncio.run(judge_scores(judge, [r.item for r in rows], rubric))
    kept = [(r, s) for r, s in zip(rows, scores, strict=True) if s is not None]
    frame = pd.DataFrame(
        {
            "item_key": [r.item.id for r, _ in kept],
            "tier": [r.model for r, _ in kept],
            "human_all": [high if r.label == RIGHT else low for r, _ in kept],
            "judge": [s for _, s in kept],
        }
    )
    return Population(frame, len(rows) - len(kept))


def draw(pop: pd.DataFrame, share: float, rng: np.random.Generator) -> pd.DataFrame:
    """The frame the calibration code reads: a uniform random `share` of responses carry their human label."""
    labeled = rng.random(len(pop)) < share
    return pd.DataFrame(
        {
            "item_key": pop["item_key"],
            "tier": pop["tier"],
            "criterion": CRITERION,
            "judge": pop["judge"],
            "human": np.where(labeled, pop["human_all"], np.nan),
            "inclusion_prob": share,
            "label_via": "human",
        }
    )


def covers(low: float, high: float, truth: float) -> bool:
    return bool(np.isfinite(low) and np.isfinite(high) and low <= truth <= high)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=200)
    parser.add_argument("--share", type=float, default=0.1, help="share of responses given a human label")
    parser.add_argument("--baseline", default="ctrl", help="tier the gaps are measured against")
    parser.add_argument("--judge", default="reference", help="judge spec, as `judgewatch judge --judge`")
    parser.add_argument("--model", default=None, help="model name on an OpenAI-compatible judge")
    args = parser.parse_args()

    from judges.factory import chain, judge_links
    from judgewatch.settings import get_settings

    rubric = load_rubric("answer_quality", REPO_ROOT / "rubrics")
    judge = chain(judge_links(args.judge, get_settings(), args.model, fallback_reference=False))
    pop = population(judge, rubric)
    truth = pop.frame.groupby("tier")["human_all"].mean()
    sizes = pop.frame.groupby("tier").size()
    print(f"tier truth (BEGIN dev, judge {args.judge}, {CRITERION} on {rubric.scale.min}-{rubric.scale.max})")
    print(
        f"  {len(pop.frame)} responses ({pop.unscored} left unscored by the judge, left out), baseline {args.baseline}"
    )
    judged = pop.frame.groupby("tier")["judge"].mean()
    for tier in truth.index:
        print(f"  {tier:<5} n={sizes[tier]:<4} all-human mean {truth[tier]:.3f}  judge mean {judged[tier]:.3f}")

    scale = (float(rubric.scale.min), float(rubric.scale.max))  # the intervals are for scores on this scale
    rng = np.random.default_rng(SEED)
    tier_hits: list[bool] = []
    by_tier: dict[str, list[bool]] = {}
    zero_width = 0
    gap_hits: list[bool] = []
    ppi_widths: list[float] = []
    human_widths: list[float] = []
    too_few = 0
    for _ in range(args.draws):
        frame = draw(pop.frame, args.share, rng)
        estimates = tier_estimates(frame, bounds=scale)
        for e in estimates:
            tier_hits.append(covers(e.ppi.low, e.ppi.high, truth[e.tier]))
            by_tier.setdefault(e.tier, []).append(tier_hits[-1])
            zero_width += int(e.ppi.high - e.ppi.low == 0.0)
            if np.isfinite(e.ppi.high - e.ppi.low) and np.isfinite(e.human_only.high - e.human_only.low):
                ppi_widths.append(e.ppi.high - e.ppi.low)
                human_widths.append(e.human_only.high - e.human_only.low)
            else:
                too_few += 1
        for d in tier_differences(frame, estimates, baseline=args.baseline, bounds=scale):
            gap_hits.append(covers(d.estimate.low, d.estimate.high, truth[d.tier] - truth[d.baseline]))

    c_tier, c_gap = float(np.mean(tier_hits)), float(np.mean(gap_hits))
    width = float(np.mean(ppi_widths) / np.mean(human_widths))
    per_tier = args.share * sizes.mean()
    print(f"\n{args.draws} label draws, {args.share:.0%} of responses labelled each (about {per_tier:.0f} per tier)")
    print(f"  per-tier intervals covering the truth: {c_tier:.3f} of {len(tier_hits)} (limit >= {COVERAGE_LIMIT})")
    shares = ", ".join(f"{tier} {np.mean(hits):.3f}" for tier, hits in sorted(by_tier.items()))
    print(f"    by tier: {shares}; zero-width PPI intervals (every label alike): {zero_width} of {len(tier_hits)}")
    print(f"  gap intervals covering the truth:      {c_gap:.3f} of {len(gap_hits)} (limit >= {COVERAGE_LIMIT})")
    print(
        f"  mean width PPI / human-only on the same labels: {width:.3f} (limit < {WIDTH_LIMIT}); "
        f"{too_few} (draw, tier) pairs without a finite interval left out of the widths"
    )
    print(f"tier-truth coverage_tier {c_tier:.3f} coverage_gap {c_gap:.3f} width_ratio {width:.3f}")


if __name__ == "__main__":
    main()
