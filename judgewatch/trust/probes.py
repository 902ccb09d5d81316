"""Bias probes: change one thing the rubric says must not matter, judge both versions, measure the shift.

A judge can separate a golden set's good from bad answers and still be paid by length, confidence or fluency
(docs/judges.md, "The bias probes"). Why n = 20 items (11n + n calls): the verbosity shift's 95% interval over 2n
answers is about +-0.37 wide, so a judge that does not move ends below the +0.5 limit and one that moves half a
point cannot pass; a share over 20 items has a Wilson upper bound of 16% when nothing happened, below the 30%
limit, and one overtake of 20 passes while two do not.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np
from sqlalchemy import Engine

from judges.base import Judge
from judges.errors import is_endpoint_failure
from judgewatch.contract.rubric import Rubric
from judgewatch.contract.verdicts import Verdict
from judgewatch.stats.estimate import wilson_bounds
from judgewatch.stats.paired import PairedDiff, paired_mean_diff
from judgewatch.storage.trust import TrustEvidence, TrustRecord
from judgewatch.trust.figures import bounded, rounded, score_column
from judgewatch.trust.policy import TrustPolicy
from judgewatch.trust.probe_items import FILLER, INJECTIONS, ProbeItems, probe_items, reordered
from judgewatch.trust.validate import KnownPairs, pairs_record, validation_run

logger = logging.getLogger(__name__)

DEFAULT_ITEMS = 20


def share(count: int, total: int) -> dict[str, Any]:
    """count/total with its Wilson 95% interval (None figures when total is 0)."""
    if total == 0:
        return {"share": None, "low": None, "high": None}
    low, high = wilson_bounds(count, total, 0.95)
    return {"share": rounded(count / total), "low": rounded(float(low)), "high": rounded(float(high))}


def _moved(diff: PairedDiff, mean: str, count: int, counted: str) -> dict[str, Any]:
    """A paired difference's figures: its mean (named `mean`) with the interval and n, and how many answers moved
    that way (named `counted`) with their share."""
    return {**bounded(diff, mean), "n": diff.n, counted: count, f"{counted}_share": rounded(count / diff.n)}


def verbosity_figures(
    rubric: Rubric, plain: Sequence[Verdict], padded: Sequence[Verdict], *, seed: int = 0
) -> dict[str, Any]:
    """Per criterion: mean shift padded - plain with a paired bootstrap interval, and the share that went up."""
    criteria: dict[str, Any] = {}
    for criterion in rubric.criteria:
        before, after = score_column(plain, criterion.name), score_column(padded, criterion.name)
        both = np.isfinite(before) & np.isfinite(after)
        if not both.any():
            continue
        diff = paired_mean_diff(after, before, seed=seed)
        up = int((after[both] > before[both]).sum())
        criteria[criterion.name] = {**_moved(diff, "shift", up, "up"), "down": int((after[both] < before[both]).sum())}
    return {"criteria": criteria, "answers": len(plain)}


def confidence_figures(
    rubric: Rubric,
    good: Sequence[Verdict],
    bad: Sequence[Verdict],
    hedged_good: Sequence[Verdict],
    confident_bad: Sequence[Verdict],
) -> dict[str, Any]:
    """Per criterion: how often the confident bad answer scores above the hedged good one where plainly it did not."""
    criteria: dict[str, Any] = {}
    for criterion in rubric.criteria:
        g, b = score_column(good, criterion.name), score_column(bad, criterion.name)
        hg, cb = score_column(hedged_good, criterion.name), score_column(confident_bad, criterion.name)
        scored = np.isfinite(g) & np.isfinite(b) & np.isfinite(hg) & np.isfinite(cb)
        if not scored.any():
            continue
        plain_margin, styled_margin = (g - b)[scored], (hg - cb)[scored]
        eligible = plain_margin >= 0
        overtaken = int((styled_margin[eligible] < 0).sum())
        criteria[criterion.name] = {
            "overtaken": overtaken,
            "eligible": int(eligible.sum()),
            **share(overtaken, int(eligible.sum())),
            "margin_shift": rounded(float((styled_margin - plain_margin).mean())),
            "n": int(scored.sum()),
        }
    return {"criteria": criteria, "items": len(good)}


def reference_sensitivity_figures(
    rubric: Rubric, true_refs: Sequence[Verdict], contradicting: Sequence[Verdict], *, seed: int = 0
) -> dict[str, Any]:
    """Per criterion that needs references: mean drop (true references - contradicting ones) of the same good
    answer, with a paired bootstrap interval, and the share of answers that dropped."""
    criteria: dict[str, Any] = {}
    for criterion in rubric.criteria:
        if not criterion.needs_reference:
            continue
        before, after = score_column(true_refs, criterion.name), score_column(contradicting, criterion.name)
        both = np.isfinite(before) & np.isfinite(after)
        if not both.any():
            continue
        diff = paired_mean_diff(before, after, seed=seed)
        dropped = int((after[both] < before[both]).sum())
        criteria[criterion.name] = _moved(diff, "drop", dropped, "dropped")
    return {"criteria": criteria, "answers": len(true_refs)}


def injection_figures(
    rubric: Rubric, plain: Sequence[Verdict], injected: Sequence[Verdict], *, seed: int = 0
) -> dict[str, Any]:
    """Per criterion: how far each known-bad answer rose, on average over the instructions appended to it. `injected`
    holds every bad answer with INJECTIONS[0], then with [1]...: one paired difference per item (the mean over its
    scored injections), so the interval rests on independent items."""
    n, k = len(plain), len(INJECTIONS)
    criteria: dict[str, Any] = {}
    for criterion in rubric.criteria:
        before = score_column(plain, criterion.name)
        after = score_column(injected, criterion.name).reshape(k, n)
        scored = np.isfinite(after)
        after_mean = np.divide(
            np.where(scored, after, 0.0).sum(axis=0), scored.sum(axis=0),
            out=np.full(n, np.nan), where=scored.any(axis=0),
        )  # fmt: skip
        both = np.isfinite(before) & np.isfinite(after_mean)
        if not both.any():
            continue
        diff = paired_mean_diff(after_mean, before, seed=seed)
        rose = int((after_mean[both] > before[both]).sum())
        per_instruction = [
            rounded(float(np.nanmean(after[j][both] - before[both]))) if np.isfinite(after[j][both]).any() else None
            for j in range(k)
        ]
        criteria[criterion.name] = {**_moved(diff, "shift", rose, "up"), "per_instruction": per_instruction}
    return {"criteria": criteria, "answers": len(injected), "instructions": list(INJECTIONS)}


def _same(a: Verdict, b: Verdict) -> bool:
    return a.status == b.status and a.unscored_reason == b.unscored_reason and dict(a.scores) == dict(b.scores)


def consistency_figures(first: Sequence[Verdict], second: Sequence[Verdict]) -> dict[str, Any]:
    """Share of identical verdicts (status and every score) over pairs where the endpoint answered both times."""
    pairs = [
        (a, b) for a, b in zip(first, second, strict=True) if not (is_endpoint_failure(a) or is_endpoint_failure(b))
    ]
    identical = sum(_same(a, b) for a, b in pairs)
    return {"n": len(pairs), "identical": identical, **share(identical, len(pairs))}


def probe_figures(
    rubric: Rubric, items: ProbeItems, first: Sequence[Verdict], shuffled: Sequence[Verdict], *, seed: int = 0
) -> dict[str, Any]:
    """Every probe's figures from the verdicts of `items.first_run()` (in that order) and of `items.shuffled`."""
    v: dict[str, list[Verdict]] = {}
    start = 0
    for name, size in items.sizes().items():
        v[name], start = list(first[start : start + size]), start + size
    good, bad = v["good"], v["bad"]
    return {
        "verbosity": verbosity_figures(rubric, good + bad, v["good_padded"] + v["bad_padded"], seed=seed),
        "confidence": confidence_figures(rubric, good, bad, v["good_hedged"], v["bad_confident"]),
        "reference_sensitivity": reference_sensitivity_figures(rubric, good, v["contradicted"], seed=seed),
        "injection": injection_figures(rubric, bad, v["bad_injected"], seed=seed),
        "consistency": {
            "repeat": consistency_figures(good, v["repeat"]),
            "shuffled": consistency_figures(good, shuffled) | {"order": [c.name for c in reordered(rubric).criteria]},
        },
    }


async def _judge_probes(
    judge: Judge, rubric: Rubric, items: ProbeItems, engine: Engine | None, pairs: KnownPairs
) -> tuple[list[Verdict], list[Verdict], dict[str, Any]]:
    """Two runs: every probe under the rubric as written, then the consistency items with the criteria shuffled."""
    verdicts: list[list[Verdict]] = []
    cost: dict[str, Any] = {"wall_s": 0.0, "calls": 0, "run_ids": []}
    for probe, run_rubric, run_items in (
        (" probes", rubric, items.first_run()),
        (" probes shuffled", reordered(rubric), items.shuffled),
    ):
        judged, run_id = await validation_run(judge, run_rubric, run_items, engine, pairs, probe)
        verdicts.append(judged.verdicts)
        cost["wall_s"] = round(cost["wall_s"] + judged.summary.wall_s, 3)
        cost["calls"] += judged.summary.items
        cost["run_ids"].append(run_id)
    return verdicts[0], verdicts[1], cost


async def probe_judge(
    judge: Judge, rubric: Rubric, pairs: KnownPairs, *, engine: Engine | None, policy: TrustPolicy, seed: int = 0
) -> TrustRecord:
    """Run every probe on `pairs` (e.g. `known_pairs(golden, limit=DEFAULT_ITEMS)`); stored when `engine` is given."""
    if rubric.kind != "pointwise":
        raise ValueError(f"rubric '{rubric.name}' is {rubric.kind}: the bias probes grade answers one by one")
    if not pairs.good:
        raise ValueError(f"golden set {pairs.dataset} has no item with both a good and a bad answer to probe")
    probe = probe_items(pairs.good, pairs.bad, rubric)
    identity = judge.identity(rubric)
    logger.info("probing %s:%s on %s (%d items)", identity.kind, identity.name, pairs.dataset, probe.n)
    first, shuffled, cost = await _judge_probes(judge, rubric, probe, engine, pairs)
    unscored = Counter(v.unscored_reason.value for v in [*first, *shuffled] if v.unscored_reason is not None)
    figures = {
        "probes": probe_figures(rubric, probe, first, shuffled, seed=seed),
        "items": probe.n,
        "in_sample_items": pairs.in_sample,
        "cost": cost,
        "unscored_reasons": dict(unscored),
        "filler": {lang: list(sentences) for lang, sentences in FILLER.items()},
    }
    return pairs_record(engine, pairs, judge, rubric, TrustEvidence.bias_probes, figures, policy)
