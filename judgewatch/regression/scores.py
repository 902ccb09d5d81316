"""A release tier's scores as judged, read from the store: baselines, per-item scores, unscored counts, worst items.
Only verdicts of one rubric and one judge configuration are read, so both sides of a comparison share one series."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial

import numpy as np
from sqlmodel import Session

from judgewatch.contract.rubric import Rubric
from judgewatch.contract.verdicts import VerdictStatus
from judgewatch.hashing import interaction_id
from judgewatch.regression.gate import TierEvaluation, compare_scores
from judgewatch.regression.golden import GoldenSet
from judgewatch.regression.report import TierSection, WorstItem
from judgewatch.regression.serving import TierSpec
from judgewatch.stats.paired import align_scores
from judgewatch.storage.releases import (
    GateDecision,
    accepted_baseline,
    get_release_tiers,
    latest_gate_decision,
    regression_source,
    tier_answers,
    tier_verdicts,
)

WORST_ITEMS = 5
FALLBACK_ONLY = "other_judge_only"  # judged only by another judge than the gate's (a fallback): not comparable
NO_ANSWER = "no_answer"  # a golden item without a stored answer (generation failed) or without a verdict


@dataclass
class TierScores:
    """One release's tier as judged: per item key ("<dataset>/<id>") its criterion scores and what to show."""

    scores: dict[str, dict[str, float | None]] = field(default_factory=dict)
    overall: dict[str, float | None] = field(default_factory=dict)
    texts: dict[str, tuple[str, str | None, str]] = field(default_factory=dict)  # question, reference, answer
    reasons: dict[str, str] = field(default_factory=dict)
    unscored: Counter[str] = field(default_factory=Counter)


@dataclass
class Baselines:
    """Which release each tier is compared with (None: a first release), what blocks that, what to note."""

    by_tier: dict[str, str | None] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def find_baselines(
    *, session: Session, release: str, tiers: Sequence[str], baseline: str, datasets: dict[str, str]
) -> Baselines:
    """Each tier's baseline release: `baseline="accepted"` takes the latest accepted release other than `release`,
    anything else names a stored release. A golden set whose revision changed since the baseline is noted: each
    side keeps the copy it answered.
    """
    out = Baselines()
    found, problems, notes = out.by_tier, out.problems, out.notes
    for tier in tiers:
        if baseline == "accepted":
            row = accepted_baseline(session=session, tier=tier, exclude_release=release)
        elif baseline == release:
            problems.append(f"--baseline {baseline}: a release cannot be its own baseline")
            continue
        else:
            row = next(iter(get_release_tiers(session=session, release=baseline, tier=tier)), None)
            if row is None:
                problems.append(f"tier {tier}: baseline release {baseline} has no stored answers for this tier")
                continue
        found[tier] = row.release if row is not None else None
        for name, revision in datasets.items():
            before = row.datasets.get(name) if row is not None else None
            if before is not None and before != revision:
                notes.append(
                    f"tier {tier}: golden set {name} changed since baseline {row.release if row else ''} "
                    f"(revision {before} -> {revision}); items are paired by id"
                )
    return out


def read_scores(
    *,
    session: Session,
    release: str,
    tier: str,
    golden: Sequence[GoldenSet],
    rubric: Rubric,
    judge_config_hash: str,
    answered: Collection[str] | None = None,
) -> TierScores:
    """The stored verdicts of one release's tier under this rubric and judge, for the current golden items
    (`answered`: only these ids, the ones the tier answered; an item it did not answer is never scored for it)."""
    criteria = [c.name for c in rubric.criteria]
    out = TierScores()
    for g in golden:
        wanted = {item.id for item in g.items if answered is None or item.id in answered}
        rows = tier_verdicts(
            session=session,
            release=release,
            tier=tier,
            dataset=g.name,
            rubric_hash=rubric.content_hash,
            judge_config_hash=judge_config_hash,
        )
        for interaction, verdict in rows:
            if interaction.source_id not in wanted:
                continue
            key = f"{g.name}/{interaction.source_id}"
            scored = verdict.status == VerdictStatus.scored.value
            out.scores[key] = {c: (verdict.scores.get(c) if scored else None) for c in criteria}
            out.overall[key] = verdict.overall if scored else None
            out.texts[key] = (interaction.question, interaction.reference_answer, interaction.answer)
            out.reasons[key] = verdict.reason if scored else f"unscored: {verdict.unscored_reason}"
            if not scored:
                out.unscored[verdict.unscored_reason or "unknown"] += 1
        if len(wanted) > len([r for r in rows if r[0].source_id in wanted]):
            answered = {i.source_id for i in tier_answers(session=session, release=release, tier=tier, dataset=g.name)}
            judged = {r[0].source_id for r in rows}
            # Judged, but by another judge (a fallback during an outage): a different judge, never pooled.
            by_other = {
                i.source_id
                for i, _ in tier_verdicts(
                    session=session, release=release, tier=tier, dataset=g.name, rubric_hash=rubric.content_hash
                )
            }
            for item_id in sorted(wanted - judged):
                missing = (
                    NO_ANSWER if item_id not in answered else FALLBACK_ONLY if item_id in by_other else "not_judged"
                )
                out.unscored[missing] += 1
    return out


def worst_items(candidate: TierScores, baseline: TierScores | None, n: int = WORST_ITEMS) -> list[WorstItem]:
    """The items whose overall score dropped most against the baseline, or the lowest-scored without one."""

    def drop(key: str) -> float:
        now = candidate.overall.get(key)
        if now is None:
            return -math.inf  # unscored now: shown first, it is the least known
        before = baseline.overall.get(key) if baseline is not None else None
        return now - before if before is not None else (now if baseline is None else math.inf)

    items = []
    for key in sorted(candidate.scores, key=lambda k: (drop(k), k))[:n]:
        question, reference, answer = candidate.texts[key]
        before = baseline.texts.get(key) if baseline is not None else None
        items.append(
            WorstItem(
                key=key, question=question, reference_answer=reference, candidate_answer=answer,
                candidate_overall=candidate.overall.get(key), baseline_answer=before[2] if before else None,
                baseline_overall=baseline.overall.get(key) if baseline is not None else None,
                reason=candidate.reasons.get(key, ""),
            )
        )  # fmt: skip
    return [w for w in items if baseline is None or w.delta is None or w.delta < 0]


def tier_section(
    session: Session,
    release: str,
    spec: TierSpec,
    baseline: str | None,
    golden: Sequence[GoldenSet],
    rubric: Rubric,
    judge_config_hash: str,
    unanswered: Mapping[str, Sequence[str]] | None = None,
) -> tuple[TierSection, dict[str, dict[str, float | None]]]:
    """One tier's section of the report (comparisons with its baseline, unscored counts, worst items) and scores.

    `unanswered`: per golden set, the ids this tier's answers file lacks: listed, never scored, and outside the
    unscored share (which is of the items the tier answered)."""
    missing = {name: list(ids) for name, ids in (unanswered or {}).items() if ids}
    skipped = {item_id for ids in missing.values() for item_id in ids}

    scores_of = partial(
        read_scores, session=session, tier=spec.name, golden=golden, rubric=rubric, judge_config_hash=judge_config_hash
    )
    under_test = {item.id for g in golden for item in g.items}
    candidate = scores_of(release=release, answered=under_test - skipped if skipped else None)
    evaluation = TierEvaluation(
        tier=spec.name,
        baseline_release=baseline,
        total=len(under_test - skipped),
        unscored=sum(candidate.unscored.values()),
        unscored_reasons=dict(candidate.unscored),
        unanswered=missing,
    )
    base = None
    if baseline is not None:
        base = scores_of(release=baseline)
        evaluation.comparisons = compare_scores(
            candidate.scores,
            base.scores,
            [c.name for c in rubric.criteria],
            candidate_label=release,
            baseline_label=baseline,
        )
    worst = worst_items(candidate, base)
    for w in worst:  # "<dataset>/<item id>": the stored answer's interaction, for the report's links
        dataset, _, item = w.key.partition("/")
        w.interaction_id = interaction_id(regression_source(release, spec.name, dataset), item)
    return TierSection(spec.name, spec.source, evaluation, worst=worst), candidate.scores


@dataclass(frozen=True)
class Spread:
    """The paired differences of one tier and criterion in a release's last gate decision: their sd and count."""

    tier: str
    criterion: str
    baseline: str
    dataset: str
    sd: float
    n: int


def _scored(
    session: Session, decision: GateDecision, release: str, tier: str, dataset: str
) -> dict[str, dict[str, int | None]]:
    """Item id -> criterion scores of one release tier's scored verdicts under the decision's rubric and judge."""
    found = tier_verdicts(
        session=session,
        release=release,
        tier=tier,
        dataset=dataset,
        rubric_hash=decision.rubric_hash or "",
        judge_config_hash=decision.judge_config_hash,
    )
    return {i.source_id: v.scores for i, v in found if v.status == VerdictStatus.scored.value}


def paired_spreads(*, session: Session, release: str, dataset: str | None = None) -> list[Spread]:
    """Per tier, golden set and criterion: the spread of candidate - baseline over the items the release's last
    gate decision paired, under that decision's rubric and judge (what the gate's power rests on)."""
    decision = latest_gate_decision(session=session, release=release)
    if decision is None or decision.rubric_hash is None:
        raise ValueError(f"release {release} has no gate decision in the store: run `judgewatch regress` first")
    out = []
    for tier, baseline in sorted(decision.baselines.items()):
        if baseline is None:
            continue
        rows = get_release_tiers(session=session, release=release, tier=tier)
        for name in sorted({d for r in rows for d in r.datasets} if dataset is None else {dataset}):
            cand = _scored(session, decision, release, tier, name)
            base = _scored(session, decision, baseline, tier, name)
            for criterion in sorted({c for s in cand.values() for c in s}):
                _, x, y = align_scores(
                    {k: s.get(criterion) for k, s in cand.items()}, {k: s.get(criterion) for k, s in base.items()}
                )
                d = (x - y)[~(np.isnan(x) | np.isnan(y))]
                if d.size >= 2:
                    out.append(Spread(tier, criterion, baseline, name, float(d.std(ddof=1)), int(d.size)))
    return out
