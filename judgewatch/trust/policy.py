"""When a judge is trusted: the policy, and the verdict it gives on a judge's stored trust records (any failed
record makes the judge untrustworthy). docs/judges.md, "What the trust policy refuses".
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from judgewatch.settings import Settings
from judgewatch.storage.trust import TrustBasis, TrustEvidence, TrustRecord
from judgewatch.trust.probe_policy import ProbeLimits, evaluate_probes, fmt


class TrustPolicy(BaseModel):
    """The configured minimum a judge must reach before a gate may rest on it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    criterion: str = "faithfulness"
    min_auroc: float = Field(default=0.70, ge=0.5, le=1.0)
    require_above_chance: bool = True  # the AUROC interval's lower bound must exceed 0.5
    max_unscored_rate: float = Field(default=0.2, ge=0.0, le=1.0)
    min_position_consistency: float = Field(default=0.8, ge=0.0, le=1.0)
    min_kappa: float = Field(default=0.4, ge=-1.0, le=1.0)
    min_items: int = Field(default=20, ge=1)
    probes: ProbeLimits = Field(default_factory=ProbeLimits)

    def describe(self) -> str:
        chance = " and its 95% interval above 0.5" if self.require_above_chance else ""
        return (
            f"{self.criterion}: AUROC point estimate >= {self.min_auroc:.2f}{chance}, unscored <= "
            f"{self.max_unscored_rate:.0%}, pairwise position consistency >= {self.min_position_consistency:.0%}, "
            f"weighted kappa with humans >= {self.min_kappa:.2f}, at least {self.min_items} items per measurement; "
            + self.probes.describe()
        )


def policy_from_settings(settings: Settings, **overrides: Any) -> TrustPolicy:
    """The configured policy (JUDGEWATCH_TRUST_*), with explicit overrides (e.g. CLI options) applied."""
    values: dict[str, Any] = {
        "criterion": settings.trust_criterion,
        "min_auroc": settings.trust_min_auroc,
        "max_unscored_rate": settings.trust_max_unscored_rate,
        "min_items": settings.trust_min_items,
    }
    values.update({k: v for k, v in overrides.items() if v is not None})
    return TrustPolicy(**values)


class EvidenceRef(TrustBasis):
    """One stored measurement a verdict rests on."""

    measured_at: datetime
    passed: bool | None
    detail: str


class TrustVerdict(BaseModel):
    """The policy's verdict on one judge configuration under one rubric: what gates and reports state."""

    judge_name: str
    judge_config_hash: str
    rubric: str
    trustworthy: bool | None
    summary: str
    evidence: list[EvidenceRef] = Field(default_factory=list)
    policy: TrustPolicy = Field(default_factory=TrustPolicy)
    accepted_on_purpose: bool = False

    def accept_unvalidated(self) -> TrustVerdict:
        """The same verdict accepted on purpose: a gate warns instead of refusing, and the report says so."""
        if self.trustworthy is True:
            return self
        summary = f"ACCEPTED ON PURPOSE (--accept-unvalidated-judge): {self.summary}"
        return self.model_copy(update={"trustworthy": None, "summary": summary, "accepted_on_purpose": True})


def _auroc_checks(figures: dict[str, Any], policy: TrustPolicy, pairwise: bool) -> tuple[bool, list[str]]:
    auroc, low = figures.get("auroc"), figures.get("low")
    unscored = figures.get("unscored_rate")
    failures: list[str] = []
    if auroc is None or math.isnan(auroc) or auroc < policy.min_auroc:
        failures.append(f"AUROC {fmt(auroc)} < {policy.min_auroc:.2f}")
    if policy.require_above_chance and (low is None or math.isnan(low) or low <= 0.5):
        failures.append(f"interval lower bound {fmt(low)} not above chance 0.50")
    if unscored is not None and unscored > policy.max_unscored_rate:
        failures.append(f"unscored {unscored:.0%} > {policy.max_unscored_rate:.0%}")
    if pairwise:
        consistency = figures.get("position_consistency")
        if consistency is None or consistency < policy.min_position_consistency:
            failures.append(f"position consistency {fmt(consistency, '.0%')} < {policy.min_position_consistency:.0%}")
    return not failures, failures


def describe_figures(evidence: str, figures: dict[str, Any]) -> str:
    """One criterion's figures in one line, e.g. 'AUROC 0.52 [0.41, 0.63], gap +0.1, unscored 51%'."""
    if evidence == TrustEvidence.human_labels:
        return f"weighted kappa {fmt(figures.get('kappa'))} [{fmt(figures.get('low'))}, {fmt(figures.get('high'))}]"
    text = f"AUROC {fmt(figures.get('auroc'))} [{fmt(figures.get('low'))}, {fmt(figures.get('high'))}]"
    if figures.get("gap") is not None:
        text += f", gap {fmt(figures.get('gap'), '+.2f')}"
    if figures.get("position_consistency") is not None:
        text += f", position consistency {fmt(figures.get('position_consistency'), '.0%')}"
    return text + f", unscored {fmt(figures.get('unscored_rate'), '.0%')}"


def evaluate_record(
    evidence: str, figures: dict[str, Any], n_items: int, policy: TrustPolicy
) -> tuple[bool | None, str]:
    """(passed, one-line detail) of one measurement under `policy`; None when it cannot decide."""
    if evidence == TrustEvidence.bias_probes:
        return evaluate_probes(figures, n_items, policy.probes, policy.min_items)
    criterion = figures.get("criteria", {}).get(policy.criterion)
    if criterion is None:
        return None, f"criterion {policy.criterion} not measured"
    line = f"{policy.criterion}: {describe_figures(evidence, criterion)}, n={n_items}"
    if figures.get("in_sample_items"):
        line += f" ({figures['in_sample_items']} in-sample items the judge was fit on left out)"
    if n_items < policy.min_items:
        return None, f"{line} (fewer than {policy.min_items} items: inconclusive)"
    if evidence == TrustEvidence.human_labels:
        kappa = criterion.get("kappa")
        if kappa is None or math.isnan(kappa) or kappa < policy.min_kappa:
            return False, f"{line} (weighted kappa below {policy.min_kappa:.2f})"
        return True, line
    passed, failures = _auroc_checks(criterion, policy, pairwise=evidence == TrustEvidence.pairwise)
    return passed, line if passed else f"{line} ({'; '.join(failures)})"


def dataset_label(dataset: str | None, revision: str | None) -> str:
    """'name@rev8' (with a subset suffix such as '[:10]' kept), or the bare name."""
    if not revision:
        return dataset or ""
    head, _, subset = revision.partition("[")
    return f"{dataset}@{head[:8]}" + (f"[{subset}" if subset else "")


def _where(record: TrustRecord) -> str:
    parts = [record.evidence.replace("_", " ")]
    if record.dataset:
        parts.append(dataset_label(record.dataset, record.dataset_revision))
    if record.tier:
        parts.append(f"tier {record.tier}")
    return " ".join(parts)


def evaluate(
    records: Sequence[TrustRecord],
    policy: TrustPolicy,
    *,
    judge_name: str,
    judge_config_hash: str,
    rubric: str,
    tier: str | None = None,
) -> TrustVerdict:
    """The verdict on a judge from its records (latest per evidence, dataset, revision and tier)."""
    latest: dict[tuple[str, str | None, str | None, str | None], TrustRecord] = {}
    for record in sorted(records, key=lambda r: r.measured_at, reverse=True):
        if tier is not None and record.tier not in (None, tier):
            continue
        latest.setdefault((record.evidence, record.dataset, record.dataset_revision, record.tier), record)
    refs = []
    for record in latest.values():
        ok, detail = evaluate_record(record.evidence, record.figures, record.n_items, policy)
        where = f"{_where(record)}: {detail}"
        refs.append(EvidenceRef(**record.basis().model_dump(), measured_at=record.measured_at, passed=ok, detail=where))
    who = f"judge {judge_name} (config {judge_config_hash[:12]}), rubric {rubric}"
    failed = [r for r in refs if r.passed is False]
    passed = [r for r in refs if r.passed is True and r.evidence != TrustEvidence.bias_probes]
    probed = [r for r in refs if r.passed is True and r.evidence == TrustEvidence.bias_probes]
    pointwise = {TrustEvidence.known_answers, TrustEvidence.human_labels}
    if failed:
        verdict, head = False, f"{who}: NOT TRUSTWORTHY"
    elif passed and (probed or not any(r.evidence in pointwise for r in passed)):
        verdict, head = True, f"{who}: trustworthy"
        passed += probed
    elif passed:
        verdict, head = None, f"{who}: NOT PROBED, so unmeasured (no conclusive bias-probe record; run the probes)"
    elif refs:
        verdict, head = None, f"{who}: UNMEASURED (no conclusive measurement)"
    else:
        verdict, head = None, f"{who}: UNMEASURED (no trust record; run `judgewatch judges validate`)"
    # The first line alone must carry the decisive figures: gates and reports quote only the headline.
    decisive = failed or passed or refs
    if decisive:
        head += " (" + "; ".join(r.detail for r in decisive) + ")"
    summary = head + "".join(f"\n  - {r.detail}" for r in refs if r not in decisive)
    if verdict is not True:
        summary += f"\n  policy: {policy.describe()}"
    return TrustVerdict(
        judge_name=judge_name, judge_config_hash=judge_config_hash, rubric=rubric, trustworthy=verdict,
        summary=summary, evidence=refs, policy=policy,
    )  # fmt: skip
