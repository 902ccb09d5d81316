"""Comparing the labels of one item: two reviewers who differ by more than one point need an adjudicator."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations

TOLERANCE = 1  # points two reviewers may differ on one criterion and still count as agreeing


def disagreement(labels: Sequence[dict[str, int]]) -> dict[str, list[int]]:
    """{criterion: the scores given} for each criterion where some two labels differ by more than TOLERANCE."""
    split: dict[str, list[int]] = {}
    for a, b in combinations(labels, 2):
        for name in a.keys() & b.keys():
            if abs(a[name] - b[name]) > TOLERANCE:
                split[name] = sorted(label[name] for label in labels if name in label)
    return dict(sorted(split.items()))
