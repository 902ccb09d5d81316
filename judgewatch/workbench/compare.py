"""`judgewatch compare A B`: two releases, or two tiers of one release, on the items both answered under one judge
series and rubric: per criterion the mean of B - A with the gate's paired bootstrap interval, regressions first."""

from __future__ import annotations

import difflib
import math
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from sqlmodel import Session

from judgewatch.workbench.items import ItemFilter, ItemRow, find_items


class CompareError(ValueError):
    """The two sides cannot be compared (unknown release, nothing in common)."""


@dataclass(frozen=True)
class Side:
    release: str
    tier: str | None = None

    @classmethod
    def parse(cls, text: str) -> Side:
        release, _, tier = text.partition("/")
        if not release:
            raise CompareError(f"{text!r} names no release: use RELEASE or RELEASE/TIER")
        return cls(release, tier or None)

    def __str__(self) -> str:
        return self.release if self.tier is None else f"{self.release}/{self.tier}"


@dataclass
class CriterionDelta:
    criterion: str
    n: int  # pairs scored on both sides
    mean_a: float
    mean_b: float
    estimate: float  # mean of B - A
    low: float
    high: float
    method: str
    unscored: int  # pairs where either side has no score for this criterion


@dataclass
class PairRow:
    key: str
    question: str
    answer_a: str
    answer_b: str
    scores_a: dict[str, int | None]
    scores_b: dict[str, int | None]
    delta: dict[str, int]  # criteria scored on both sides: B - A
    unscored: dict[str, str] = field(default_factory=dict)  # side -> reason, when a side is unscored
    interaction_a: str = ""
    interaction_b: str = ""

    @property
    def total_delta(self) -> int:
        return sum(self.delta.values())


@dataclass
class Comparison:
    a: Side
    b: Side
    rubric: str
    judge_series: str
    only_a: int  # items only A has
    only_b: int
    criteria: list[CriterionDelta]
    regressions: list[PairRow]
    improvements: list[PairRow]
    unchanged: int
    unscored: list[PairRow]

    def to_json(self) -> dict[str, Any]:
        def pair(p: PairRow) -> dict[str, Any]:
            return {
                "item": p.key,
                "question": p.question,
                "answer_a": p.answer_a,
                "answer_b": p.answer_b,
                "answer_diff": word_diff(p.answer_a, p.answer_b),
                "scores_a": p.scores_a,
                "scores_b": p.scores_b,
                "delta": p.delta,
                "unscored": p.unscored,
                "interaction_a": p.interaction_a,
                "interaction_b": p.interaction_b,
            }

        def finite(x: float) -> float | None:
            return x if math.isfinite(x) else None

        return {
            "a": str(self.a),
            "b": str(self.b),
            "estimand": "mean over the items both sides answered of (B score - A score), per criterion; "
            "the judge series and rubric below on both sides",
            "rubric": self.rubric,
            "judge_series": self.judge_series,
            "items_only_in_a": self.only_a,
            "items_only_in_b": self.only_b,
            "criteria": [
                {
                    "criterion": c.criterion,
                    "n_pairs": c.n,
                    "mean_a": finite(c.mean_a),
                    "mean_b": finite(c.mean_b),
                    "delta": finite(c.estimate),
                    "low": finite(c.low),
                    "high": finite(c.high),
                    "interval": c.method,
                    "pairs_unscored": c.unscored,
                }
                for c in self.criteria
            ],
            "regressions": [pair(p) for p in self.regressions],
            "improvements": [pair(p) for p in self.improvements],
            "unchanged": self.unchanged,
            "unscored": [pair(p) for p in self.unscored],
        }


_TOKEN = re.compile(r"\s+|[^\s]+")


def word_diff(a: str, b: str) -> str:
    """`a` turned into `b`, word by word: `[-removed-]` and `{+added+}` around the spans that differ."""
    ta, tb = _TOKEN.findall(a), _TOKEN.findall(b)
    out: list[str] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=ta, b=tb, autojunk=False).get_opcodes():
        if op == "equal":
            out.append("".join(ta[i1:i2]))
            continue
        if i2 > i1:
            out.append("[-" + "".join(ta[i1:i2]) + "-]")
        if j2 > j1:
            out.append("{+" + "".join(tb[j1:j2]) + "+}")
    return "".join(out)


def _key(row: ItemRow, with_tier: bool) -> str:
    kind = row.dataset or row.interaction.source.split(":", 1)[0]
    key = f"{kind}:{row.interaction.source_id}"
    return f"{row.interaction.tier}/{key}" if with_tier else key


def _side_rows(session: Session, side: Side, rubric: str, series: str | None) -> list[ItemRow]:
    filt = ItemFilter(release=side.release, tier=side.tier, rubric=rubric, judge_series=series)
    return find_items(session, filt, limit=None)[0]


def compare(
    session: Session, a: Side, b: Side, *, rubric: str = "answer_quality", judge_series: str | None = None
) -> Comparison:
    from judgewatch.stats.paired import paired_mean_diff

    rows_a = _side_rows(session, a, rubric, judge_series)
    rows_b = _side_rows(session, b, rubric, judge_series)
    if not rows_a or not rows_b:
        empty = a if not rows_a else b
        raise CompareError(f"no verdicts under rubric {rubric!r} for {empty}: check the release and tier names")
    with_tier = a.tier is None and b.tier is None
    series_a = Counter(r.verdict.judge_config_hash for r in rows_a)
    series_b = Counter(r.verdict.judge_config_hash for r in rows_b)
    common = {s: min(series_a[s], series_b[s]) for s in series_a if s in series_b}
    if not common:
        raise CompareError(
            f"{a} and {b} share no judge series under rubric {rubric!r}: their scores are not comparable"
        )
    series = max(common, key=lambda s: (common[s], s))
    by_a = {_key(r, with_tier): r for r in rows_a if r.verdict.judge_config_hash == series}
    by_b = {_key(r, with_tier): r for r in rows_b if r.verdict.judge_config_hash == series}
    both = sorted(set(by_a) & set(by_b))
    if not both:
        raise CompareError(f"{a} and {b} have no item in common under judge series {series[:12]}")
    pairs: list[PairRow] = []
    for key in both:
        ra, rb = by_a[key], by_b[key]
        sa, sb = dict(ra.verdict.scores), dict(rb.verdict.scores)
        delta = {c: sb[c] - sa[c] for c in sa if sa[c] is not None and sb.get(c) is not None}  # type: ignore[operator]
        unscored = {
            side: row.verdict.unscored_reason or "unscored"
            for side, row in (("a", ra), ("b", rb))
            if row.verdict.status != "scored"
        }
        ia, ib = ra.interaction, rb.interaction
        pairs.append(PairRow(key, ia.question, ia.answer, ib.answer, sa, sb, delta, unscored, ia.id, ib.id))
    criteria: list[CriterionDelta] = []
    for name in sorted({c for p in pairs for c in (*p.scores_a, *p.scores_b)}):
        scored = [p for p in pairs if name in p.delta]
        xa = [float(p.scores_a[name]) for p in scored]  # type: ignore[arg-type]
        xb = [float(p.scores_b[name]) for p in scored]  # type: ignore[arg-type]
        diff = paired_mean_diff(xb, xa)
        means = (sum(xa) / len(xa), sum(xb) / len(xb)) if xa else (math.nan, math.nan)
        unscored_pairs = len(pairs) - len(scored)
        criteria.append(
            CriterionDelta(name, len(scored), *means, diff.estimate, diff.low, diff.high, diff.method, unscored_pairs)
        )
    scored_pairs = [p for p in pairs if not p.unscored]
    regressions = sorted((p for p in scored_pairs if any(d < 0 for d in p.delta.values())), key=_order)
    improvements = sorted(
        (p for p in scored_pairs if p not in regressions and any(d > 0 for d in p.delta.values())),
        key=lambda p: (-p.total_delta, p.key),
    )
    return Comparison(
        a=a,
        b=b,
        rubric=rubric,
        judge_series=series,
        only_a=len(set(by_a) - set(by_b)),
        only_b=len(set(by_b) - set(by_a)),
        criteria=criteria,
        regressions=regressions,
        improvements=improvements,
        unchanged=len(scored_pairs) - len(regressions) - len(improvements),
        unscored=[p for p in pairs if p.unscored],
    )


def _order(p: PairRow) -> tuple[int, int, str]:
    return (min(p.delta.values()), p.total_delta, p.key)
