"""Fixtures of the calibration tests: the real answer_quality rubric and a fixed synthetic judge."""

from __future__ import annotations

from datetime import datetime

from judgewatch.contract.verdicts import JudgeIdentity
from judgewatch.testing.synthetic_labels import SyntheticSpec, TierTruth

JUDGE_A = JudgeIdentity(kind="fake", name="judge-a", endpoint="http://judge-a/v1", config_hash="a" * 16)


def one_release_day(
    tiers: dict[str, TierTruth], *, per_day: int, review_share: float, start: datetime = SyntheticSpec.start
) -> SyntheticSpec:
    """Golden items of release r1 answered on every tier (the same items) in one day, judged by JUDGE_A with noise
    0.3; `review_share` of them routed and labelled."""
    return SyntheticSpec(JUDGE_A, tiers, days=1, per_day=per_day, review_share=review_share, judge_noise=0.3,
                         start=start, paired=True)  # fmt: skip
