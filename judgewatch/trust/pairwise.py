"""Pairwise judging in both orders: the first answer shown as A, then as B; a tie when the two orders disagree.
Small judges prefer a position (SmolLM2-135M answered "A" 100 times out of 100): asking once would measure the
position, not the answers.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from judges.pairwise import PairCall, PairwiseJudge
from judgewatch.contract.items import JudgeItem
from judgewatch.contract.reply import Winner
from judgewatch.contract.rubric import Rubric
from judgewatch.stats.estimate import Estimate, percentile_bounds

Preferred = Literal["first", "second", "tie"]


def _as_pair_order(winner: Winner, first_is_a: bool) -> Preferred:
    if winner == "tie":
        return "tie"
    return "first" if (winner == "A") == first_is_a else "second"


@dataclass(frozen=True)
class PairOutcome:
    """One pair judged in one or both orders; `forward` shows the first answer as A, `backward` as B."""

    item_id: str
    forward: PairCall
    backward: PairCall | None

    @property
    def scored(self) -> bool:
        return self.forward.winner is not None and (self.backward is None or self.backward.winner is not None)

    @property
    def consistent(self) -> bool | None:
        """Both orders named the same answer (or both a tie); None when one order only or unscored."""
        if self.backward is None or not self.scored:
            return None
        assert self.forward.winner is not None and self.backward.winner is not None
        return _as_pair_order(self.forward.winner, True) == _as_pair_order(self.backward.winner, False)

    @property
    def winner(self) -> Preferred | None:
        """The preferred answer of the pair; a tie when the orders disagree; None when unscored."""
        if not self.scored:
            return None
        assert self.forward.winner is not None
        first = _as_pair_order(self.forward.winner, True)
        if self.backward is None:
            return first
        assert self.backward.winner is not None
        return first if first == _as_pair_order(self.backward.winner, False) else "tie"

    def row(self) -> dict[str, Any]:
        """A compact JSON row for the stored trust figures."""
        failed = next((c.unscored_reason.value for c in (self.forward, self.backward) if c and c.unscored_reason), None)
        backward = self.backward.winner if self.backward else None
        row = {"id": self.item_id, "forward": self.forward.winner, "backward": backward, "winner": self.winner}
        return {**row, "unscored_reason": failed}


async def compare_pairs(
    judge: PairwiseJudge, rubric: Rubric, pairs: Sequence[tuple[JudgeItem, str, str]], *, both_orders: bool = True
) -> list[PairOutcome]:
    """Judge (item, first answer, second answer) pairs; the judge's own client bounds the concurrency."""
    if rubric.kind != "pairwise":
        raise ValueError(f"rubric '{rubric.name}' is {rubric.kind}; pairwise judging needs a pairwise rubric")
    forward = [judge.prefer(item, first, second, rubric) for item, first, second in pairs]
    backward = [judge.prefer(item, second, first, rubric) for item, first, second in pairs] if both_orders else []
    calls = await asyncio.gather(*forward, *backward)
    n = len(pairs)
    return [
        PairOutcome(item.id, calls[i], calls[n + i] if both_orders else None) for i, (item, _, _) in enumerate(pairs)
    ]


@dataclass(frozen=True)
class PairwiseSummary:
    """Position consistency, bias and outcome counts over a batch of pairs."""

    pairs: int
    scored: int
    first_wins: int
    second_wins: int
    ties: int
    consistent: int  # pairs judged in both orders, both scored, that agree
    both_scored: int  # pairs judged in both orders with both orders scored
    a_calls: int  # single-order calls that named "A"
    scored_calls: int

    @property
    def unscored_rate(self) -> float:
        return 1.0 - self.scored / self.pairs if self.pairs else float("nan")

    @property
    def position_consistency(self) -> float:
        return self.consistent / self.both_scored if self.both_scored else float("nan")

    @property
    def inconsistency_rate(self) -> float:
        return 1.0 - self.position_consistency

    @property
    def a_rate(self) -> float:
        """Share of scored calls that named position A (0.5 means no position preference)."""
        return self.a_calls / self.scored_calls if self.scored_calls else float("nan")


def summarize(outcomes: Sequence[PairOutcome]) -> PairwiseSummary:
    winners = [o.winner for o in outcomes]
    calls = [c for o in outcomes for c in (o.forward, o.backward) if c is not None and c.winner is not None]
    return PairwiseSummary(
        pairs=len(outcomes), scored=sum(w is not None for w in winners), first_wins=winners.count("first"),
        second_wins=winners.count("second"), ties=winners.count("tie"),
        consistent=sum(o.consistent is True for o in outcomes),
        both_scored=sum(o.consistent is not None for o in outcomes), a_calls=sum(c.winner == "A" for c in calls),
        scored_calls=len(calls),
    )  # fmt: skip


def first_preference(
    outcomes: Sequence[PairOutcome], *, level: float = 0.95, resamples: int = 2000, seed: int = 0
) -> Estimate:
    """P(first answer preferred) + 0.5 P(tie) over scored pairs, with a seeded percentile-bootstrap interval. With the
    known-good answer first this is the pairwise counterpart of AUROC: 0.5 is chance."""
    values = np.array(
        [{"first": 1.0, "tie": 0.5, "second": 0.0}[o.winner] for o in outcomes if o.winner is not None], dtype=float
    )
    if values.size == 0:
        return Estimate(float("nan"), float("nan"), float("nan"), 0)
    point = float(values.mean())
    if values.size < 2:
        return Estimate(point, float("nan"), float("nan"), int(values.size))
    rng = np.random.default_rng(seed)
    reps = values[rng.integers(0, values.size, size=(resamples, values.size))].mean(axis=1)
    low, high = percentile_bounds(reps, level)
    return Estimate(point, low, high, int(values.size))
