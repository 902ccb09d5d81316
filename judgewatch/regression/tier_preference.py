"""Tier preference on the same items: the pairwise judge compares two tiers' answers to every golden item both
answered, in both orders; each pair is an interaction of its own (`pair_source`, in no pointwise estimate) scored
-1 candidate worse, 0 tied, +1 better per criterion. docs/release_gate.md.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from sqlalchemy import select
from sqlmodel import Session

from judges.base import Judge, unscored
from judges.pairwise import OpenAIPairwiseJudge, PairwiseJudge, ReferencePairwiseJudge
from judgewatch.contract.items import JudgeItem
from judgewatch.contract.rubric import Rubric
from judgewatch.contract.verdicts import JudgeIdentity, UnscoredReason, Verdict, VerdictStatus
from judgewatch.regression.golden import GoldenSet
from judgewatch.stats.preference import PreferenceShares, preference_shares
from judgewatch.storage.db import table
from judgewatch.storage.interactions import Interaction
from judgewatch.storage.verdicts import VerdictRecord, is_current
from judgewatch.trust.pairwise import compare_pairs

PREFERENCE = "tier_preference_same_items"  # the estimand: shares of a release's golden items, candidate vs reference
SCORE = {"first": 1, "tie": 0, "second": -1}  # the candidate's answer is always shown first in the forward order
OUTCOME = {-1: "worse", 0: "tied", 1: "better"}


@dataclass(frozen=True, slots=True)
class PairItems:
    """The golden items a tier pair is compared on pairwise (per golden set: the ids both tiers answered), and
    how many only one of them answered (never compared pairwise)."""

    by_set: dict[str, set[str]]
    only_candidate: int
    only_reference: int

    @property
    def common(self) -> int:
        return sum(len(ids) for ids in self.by_set.values())

    def text(self, candidate: str, reference: str) -> str:
        text = f"{candidate} vs {reference}: pairwise on the {self.common} golden items both answered"
        if self.only_candidate or self.only_reference:
            text += (
                f"; {self.only_candidate} answered by {candidate} only and {self.only_reference} by {reference} "
                "only are not compared pairwise"
            )
        return text


def pair_items(
    golden: Sequence[GoldenSet], candidate: Collection[str] | None, reference: Collection[str] | None
) -> PairItems:
    """The items both tiers answered, per golden set; None for a tier means it was asked every item (live)."""
    by_set, only_c, only_r = {}, 0, 0
    for g in golden:
        ids = {item.id for item in g.items}
        cand = ids if candidate is None else ids & set(candidate)
        ref = ids if reference is None else ids & set(reference)
        by_set[g.name] = cand & ref
        only_c, only_r = only_c + len(cand - ref), only_r + len(ref - cand)
    return PairItems(by_set, only_c, only_r)


def pair_source(release: str, candidate: str, reference: str, dataset: str) -> str:
    """The interaction source of one release's candidate-vs-reference pairs on one golden set."""
    return f"pairwise:{release}/{candidate}~{reference}/{dataset}"


def pairwise_counterpart(judge: Judge) -> PairwiseJudge | None:
    """The pairwise judge of the same configuration as a pointwise one (a chain: its first link); None if none."""
    links = getattr(judge, "links", None)
    if links:
        judge = links[0]
    if judge.kind == "reference":
        return ReferencePairwiseJudge()
    endpoint = getattr(judge, "endpoint", None)
    return OpenAIPairwiseJudge(endpoint) if endpoint is not None else None


def pair_interactions(
    release: str, dataset: str, candidate: Sequence[Interaction], reference: Sequence[Interaction]
) -> list[Interaction]:
    """One pair interaction per golden item both tiers answered: question and references from the item, the
    candidate's answer as `answer`, the reference tier's answer and both answers' hash in `meta`."""
    ref_by_id = {r.source_id: r for r in reference}
    rows = []
    for cand in candidate:
        ref = ref_by_id.get(cand.source_id)
        if ref is None:
            continue
        row = Interaction.from_item(cand.to_item(), source=pair_source(release, str(cand.tier), str(ref.tier), dataset))
        row.release = release
        row.meta = {
            "dataset": dataset,
            "candidate_tier": cand.tier,
            "reference_tier": ref.tier,
            "candidate_interaction": cand.id,
            "reference_interaction": ref.id,
            "second_answer": ref.answer,
            "answers_hash": hashlib.sha256(f"{cand.answer}\x00{ref.answer}".encode()).hexdigest()[:16],
        }
        rows.append(row)
    return rows


class TierPairJudge:
    """A pairwise judge asked in both orders, as a `Judge`: the item's answer is the candidate's, the second
    answer is looked up by item id. Its verdict scores each criterion -1 / 0 / +1 (see the module docstring)."""

    def __init__(self, pairwise: PairwiseJudge, second_answers: dict[str, str]) -> None:
        self.inner, self.second_answers = pairwise, second_answers
        self.kind = pairwise.kind

    def identity(self, rubric: Rubric) -> JudgeIdentity:
        return self.inner.identity(rubric)

    async def judge(self, item: JudgeItem, rubric: Rubric) -> Verdict:
        identity = self.identity(rubric)
        second = self.second_answers.get(item.id)
        if second is None:
            detail = f"no second answer for item {item.id!r}"
            return unscored(item, rubric, identity, UnscoredReason.judge_error, detail)
        (outcome,) = await compare_pairs(self.inner, rubric, [(item, item.answer, second)])
        latency = outcome.forward.latency_ms + (outcome.backward.latency_ms if outcome.backward else 0.0)
        if outcome.winner is None:
            failed = next(c for c in (outcome.forward, outcome.backward) if c is not None and c.winner is None)
            why = failed.unscored_reason or UnscoredReason.judge_error
            return unscored(item, rubric, identity, why, failed.detail, latency_ms=latency, attempts=2)
        score = SCORE[outcome.winner]
        backward = outcome.backward.winner if outcome.backward else None
        orders = f"candidate shown first: {outcome.forward.winner}; shown second: {backward}"
        agree = "" if outcome.consistent is not False else " (the orders disagree: a tie)"
        reason = f"{OUTCOME[score]}{agree}; {orders}; {outcome.forward.reason}"
        return Verdict(
            item_id=item.id, status=VerdictStatus.scored, scores={c.name: score for c in rubric.criteria},
            overall=float(score), reason=reason[:500], judge=identity, rubric=rubric.identity, latency_ms=latency,
            attempts=2,
        )  # fmt: skip

    async def aclose(self) -> None:
        await self.inner.aclose()


@dataclass(frozen=True, slots=True)
class PreferenceRow:
    """One release's candidate-vs-reference preference on one golden set ("all" for every set) and criterion."""

    release: str
    candidate: str
    reference: str
    dataset: str
    criterion: str
    pairs: int  # golden items both tiers answered
    unscored: int  # pairs with no usable verdict (an order unscored, or not judged)
    shares: PreferenceShares
    estimand: str = PREFERENCE


def read_preferences(
    *,
    session: Session,
    release: str,
    candidate: str,
    reference: str,
    datasets: Sequence[str],
    rubric: Rubric,
    judge_config_hash: str,
    level: float = 0.95,
    items: PairItems | None = None,
) -> list[PreferenceRow]:
    """Per golden set and criterion, then over every set: the stored pairwise verdicts counted and tested
    (`items`: only the pairs of these golden ids, the ones both tiers answered now)."""
    i, v = table(Interaction).c, table(VerdictRecord).c
    totals: dict[str, list[int]] = {c.name: [0, 0, 0, 0, 0] for c in rubric.criteria}  # worse tied better pairs uns.
    rows: list[PreferenceRow] = []
    for dataset in datasets:
        source = pair_source(release, candidate, reference, dataset)
        query_pairs = select(i.id, i.source_id).where(i.source == source)
        wanted = items.by_set.get(dataset, set()) if items is not None else None
        pairs = [row.id for row in session.execute(query_pairs) if wanted is None or row.source_id in wanted]
        query = select(v.status, v.scores).where(
            v.interaction_id.in_(pairs),
            v.rubric_hash == rubric.content_hash,
            v.judge_config_hash == judge_config_hash,
            is_current(),
        )
        verdicts = session.execute(query).all() if pairs else []
        for criterion in rubric.criteria:
            counts = [0, 0, 0]
            for status, scores in verdicts:
                score = scores.get(criterion.name) if status == VerdictStatus.scored.value else None
                if score in (-1, 0, 1):
                    counts[score + 1] += 1
            unscored = len(pairs) - sum(counts)
            total = totals[criterion.name]
            for k, value in enumerate([*counts, len(pairs), unscored]):
                total[k] += value
            shares = preference_shares(*counts, level=level)
            row = PreferenceRow(release, candidate, reference, dataset, criterion.name, len(pairs), unscored, shares)
            rows.append(row)
    if len(datasets) > 1:
        for name, (worse, tied, better, n_pairs, unscored) in totals.items():
            shares = preference_shares(worse, tied, better, level=level)
            rows.append(PreferenceRow(release, candidate, reference, "all", name, n_pairs, unscored, shares))
    return rows
