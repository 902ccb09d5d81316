"""The release gate's decision: per-tier comparisons in, an exit code (0 pass, 1 regression, 2 could not evaluate)
with its reasons out. Pure. An untrustworthy or unmeasured judge wins over everything, then a regression over what
could not be evaluated; never a silent pass. docs/release_gate.md.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, Protocol

import numpy as np

from judgewatch.stats.paired import PairedDiff, align_scores, paired_mean_diff, regressed
from judgewatch.stats.power import POWER, detectable_drop
from judgewatch.stats.unpaired import UnpairedDiff

ItemScores = Mapping[str, Mapping[str, float | None]]  # item key -> criterion -> score (None = not scored)
Outcome = Literal["pass", "regression", "error"]


class TrustLike(Protocol):
    """What the gate needs of a judge-trust verdict (judgewatch.trust's TrustVerdict satisfies it)."""

    @property
    def trustworthy(self) -> bool | None: ...  # None = unmeasured

    @property
    def summary(self) -> str: ...

    @property
    def accepted_on_purpose(self) -> bool: ...  # the operator passed --accept-unvalidated-judge


@dataclass(frozen=True)
class Comparison:
    """candidate - baseline on one criterion: paired by item (means over the paired items), or, for a tier gap
    on different items, unpaired (each mean over its own items; `regression.tier_gap`)."""

    criterion: str
    candidate: str  # what is compared, e.g. "r2" or "quantized"
    baseline: str  # e.g. "r1" or "full"
    candidate_mean: float
    baseline_mean: float
    diff: PairedDiff | UnpairedDiff
    estimand: str = ""  # a tier gap's label (tier_gap_same_items | tier_gap_release_unpaired); "" between releases
    common: int = 0  # a tier gap: items both tiers answered
    only_candidate: int = 0  # items only the candidate answered: outside a paired tier gap, counted
    only_baseline: int = 0  # items only the baseline answered

    @property
    def paired(self) -> bool:
        return isinstance(self.diff, PairedDiff)

    @property
    def defined(self) -> bool:
        return self.diff.n > 0 and math.isfinite(self.diff.low) and math.isfinite(self.diff.high)

    def detectable(self, margin: float, level: float = 0.95) -> float:
        """The smallest drop this comparison catches with 80% probability at its n (`stats.power`; NaN unpaired)."""
        d = self.diff
        return detectable_drop(d.sd, d.n, margin, level=level) if isinstance(d, PairedDiff) else float("nan")

    def below(self, margin: float) -> bool:
        """The whole interval lies below -margin (an undefined interval never does)."""
        return self.defined and regressed(self.diff.high, margin)

    def items(self) -> str:
        """The items a tier gap rests on, in words (answered counts): never "the same" for an unpaired gap."""
        a, b = self.common + self.only_candidate, self.common + self.only_baseline
        if not self.paired:
            return f"different items ({a} {self.candidate}, {b} {self.baseline}; {self.common} answered by both)"
        text = f"the same golden items ({self.common} answered by both, paired)"
        if self.only_candidate or self.only_baseline:
            text += (
                f"; {self.only_candidate} answered by {self.candidate} only and {self.only_baseline} by "
                f"{self.baseline} only, outside the gap"
            )
        return text

    def basis(self) -> str:
        """A tier gap's estimand and items, e.g. "tier_gap_release_unpaired: different items (20 quantized, ...)"."""
        return f"{self.estimand}: {self.items()}" if self.estimand else ""

    def describe(self) -> str:
        d = self.diff
        n = f"n={d.n}" if isinstance(d, PairedDiff) else f"unpaired n={d.n_candidate} and {d.n_baseline}"
        return (
            f"{self.criterion} {d.estimate:+.3f} [{d.low:+.3f}, {d.high:+.3f}] "
            f"({self.candidate} {self.candidate_mean:.2f} vs {self.baseline} {self.baseline_mean:.2f}, {n})"
        )


def compare_scores(
    candidate: ItemScores,
    baseline: ItemScores,
    criteria: Sequence[str],
    *,
    candidate_label: str,
    baseline_label: str,
    level: float = 0.95,
) -> list[Comparison]:
    """Per criterion: mean of candidate - baseline over the items scored on both sides, with a paired interval."""
    comparisons = []
    for criterion in criteria:
        _, x, y = align_scores(
            {k: s.get(criterion) for k, s in candidate.items()}, {k: s.get(criterion) for k, s in baseline.items()}
        )
        both = ~(np.isnan(x) | np.isnan(y))
        diff = paired_mean_diff(x, y, level=level)
        means = (float(x[both].mean()), float(y[both].mean())) if both.any() else (math.nan, math.nan)
        comparisons.append(Comparison(criterion, candidate_label, baseline_label, means[0], means[1], diff))
    return comparisons


@dataclass
class TierEvaluation:
    """Everything the gate needs about one tier of the candidate release."""

    tier: str
    baseline_release: str | None  # None: the tier's first release
    comparisons: list[Comparison] = field(default_factory=list)
    total: int = 0  # golden items under test that this tier answered (or was asked, for a live tier)
    unscored: int = 0  # items without a usable verdict (unscored, or no answer could be generated)
    unscored_reasons: dict[str, int] = field(default_factory=dict)
    endpoint_ok: bool = True
    endpoint_detail: str = ""
    unanswered: dict[str, list[str]] = field(default_factory=dict)  # golden set -> ids its answers file lacks

    @property
    def unscored_share(self) -> float:
        return self.unscored / self.total if self.total else 1.0

    @property
    def unanswered_count(self) -> int:
        return sum(len(ids) for ids in self.unanswered.values())

    def answered_text(self) -> str:
        """ "answered 30 of 40 golden items (75%); 10 not answered (25%)": what the tier's numbers rest on."""
        under_test = self.total + self.unanswered_count
        share = self.unanswered_count / under_test if under_test else 0.0
        return (
            f"answered {self.total} of {under_test} golden items ({1 - share:.0%}); "
            f"{self.unanswered_count} not answered ({share:.0%})"
        )


@dataclass(frozen=True)
class Regression:
    tier: str
    criterion: str
    baseline: str
    estimate: float
    low: float
    high: float
    basis: str = ""  # a tier gap's estimand and items (`Comparison.basis`); "" for a release-over-release one


@dataclass(frozen=True)
class Unevaluated:
    """A reason the gate could not evaluate, and what it stops: a tier (or tier gap, named as in `Regression`;
    "" for the whole gate) and a criterion ("" for the whole tier)."""

    reason: str
    tier: str = ""
    criterion: str = ""


@dataclass(frozen=True)
class Power:
    """What one criterion's gate can detect: the smallest drop it catches with `power` probability at its n pairs
    and margin, from the paired differences' standard deviation `sd` (`stats.power`)."""

    tier: str
    criterion: str
    n: int
    sd: float
    margin: float
    detectable_drop: float
    power: float = POWER
    method: str = "margin + (t(1 - (1 - level) / 2) + t(power)) x sd / sqrt(n), n - 1 degrees of freedom"


@dataclass
class GateResult:
    exit_code: int
    outcome: Outcome
    summary: str
    reasons: list[str] = field(default_factory=list)  # the text of `unevaluated`, in its order
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    regressions: list[Regression] = field(default_factory=list)
    unevaluated: list[Unevaluated] = field(default_factory=list)
    power: list[Power] = field(default_factory=list)
    accepted_unvalidated: str | None = None  # the judge accepted unmeasured or untrusted, on purpose: say so

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _unscored_text(tier: TierEvaluation) -> str:
    reasons = ", ".join(f"{k} {v}" for k, v in sorted(tier.unscored_reasons.items(), key=lambda kv: -kv[1]))
    return f"{tier.unscored}/{tier.total} ({tier.unscored_share:.0%})" + (f": {reasons}" if reasons else "")


def _power_findings(tier: TierEvaluation, margin: float, level: float, out: GateResult) -> None:
    """Each criterion's detectable drop; a warning where the golden set cannot resolve the margin (the drop it
    catches with 80% probability is more than twice the margin)."""
    for c in tier.comparisons:
        d, drop = c.diff, c.detectable(margin, level)
        if not (isinstance(d, PairedDiff) and c.defined and math.isfinite(drop)):
            continue
        out.power.append(Power(tier.tier, c.criterion, d.n, d.sd, margin, drop))
        if drop > 2 * margin:
            out.warnings.append(
                f"tier {tier.tier}: {c.criterion}: margin {margin} is below what {d.n} golden items can detect: "
                f"a drop is caught with {POWER:.0%} probability only from {drop:.2f} (paired sd {d.sd:.2f}); "
                "`judgewatch plan gate` says how many items the margin needs"
            )


def _tier_findings(tier: TierEvaluation, margin: float, max_unscored_share: float, out: GateResult) -> None:
    def cannot(reason: str, criterion: str = "") -> None:
        out.unevaluated.append(Unevaluated(f"tier {tier.tier}: {reason}", tier.tier, criterion))

    if not tier.endpoint_ok:
        cannot(f"endpoint unreachable: {tier.endpoint_detail}")
        return
    if tier.total == 0:
        cannot("no golden items were evaluated")
        return
    if tier.unanswered:
        sets = ", ".join(f"{name} {len(ids)}" for name, ids in sorted(tier.unanswered.items()))
        out.notes.append(f"tier {tier.tier}: {tier.answered_text()}, never scored for this tier ({sets})")
    if tier.unscored_share > max_unscored_share:
        cannot(f"{_unscored_text(tier)} verdicts unscored, more than the {max_unscored_share:.0%} allowed")
    elif tier.unscored:
        out.notes.append(f"tier {tier.tier}: {_unscored_text(tier)} verdicts unscored (left out of the pairs)")
    if tier.baseline_release is None:
        out.notes.append(
            f"tier {tier.tier}: first release, no baseline to compare with: passes "
            "(accept it with `judgewatch baseline accept`)"
        )
        return
    if not any(c.diff.n for c in tier.comparisons):
        cannot(f"no item scored in both this release and baseline {tier.baseline_release}")
        return
    for c in tier.comparisons:
        if c.diff.n == 0:
            out.notes.append(f"tier {tier.tier}: {c.criterion}: no paired scores (not applicable to these items)")
        elif not c.defined:
            cannot(f"{c.criterion}: {c.diff.n} paired item(s), too few for an interval", c.criterion)
        elif c.below(margin):
            d = c.diff
            out.regressions.append(Regression(tier.tier, c.criterion, c.baseline, d.estimate, d.low, d.high))


def gap_name(gap: Comparison) -> str:
    """A tier gap as the gate names it where a tier goes ("quantized-vs-full")."""
    return f"{gap.candidate}-vs-{gap.baseline}"


def _gap_findings(gaps: Sequence[Comparison], margin: float, gap_margin: float | None, out: GateResult) -> None:
    for gap in gaps:
        what = f"{gap.candidate} vs {gap.baseline}: {gap.describe()}"
        if gap_margin is not None and gap.below(gap_margin):
            d = gap.diff
            out.regressions.append(
                Regression(gap_name(gap), gap.criterion, gap.baseline, d.estimate, d.low, d.high, gap.basis())
            )
        elif gap_margin is not None and gap.diff.n and not gap.defined:
            reason = (
                f"tier gap {gap.candidate} vs {gap.baseline}: {gap.criterion}: too few items for an interval "
                f"({gap.describe()}; {gap.basis()}): --gap-margin cannot be applied"
            )
            out.unevaluated.append(Unevaluated(reason, gap_name(gap), gap.criterion))
        elif gap.below(margin):
            out.warnings.append(f"{gap.candidate} trails {gap.baseline} beyond the margin (not gated): {what}")
    for pair in dict.fromkeys((g.candidate, g.baseline, g.basis()) for g in gaps):
        gated = f"gated at --gap-margin {gap_margin}" if gap_margin is not None else "reported, not gated"
        out.notes.append(f"tier gap {pair[0]} vs {pair[1]} ({gated}) rests on {pair[2]}")


def _trust_findings(trust: TrustLike | None, out: GateResult) -> bool:
    """Adds the trust reason, warning or note; True when the judge's trust stops the gate (exit 2)."""
    if trust is None:
        out.unevaluated.insert(0, Unevaluated("judge not measured: no trust verdict was given"))
        return True
    headline = trust.summary.strip().splitlines()[0] if trust.summary.strip() else "(no summary)"
    if trust.accepted_on_purpose and trust.trustworthy is not True:
        out.accepted_unvalidated = headline
        out.warnings.insert(0, headline)
        return False
    if trust.trustworthy is not True:
        what = "not trustworthy" if trust.trustworthy is False else "not measured"
        out.unevaluated.insert(0, Unevaluated(f"judge {what}: {headline}"))
        return True
    out.notes.append(f"judge trust: {headline}")
    return False


def decide(
    tiers: Sequence[TierEvaluation],
    *,
    margin: float,
    max_unscored_share: float = 0.2,
    trust: TrustLike | None = None,
    gaps: Sequence[Comparison] = (),
    gap_margin: float | None = None,
    problems: Sequence[str] = (),
    notes: Sequence[str] = (),
    level: float = 0.95,
) -> GateResult:
    """The gate's exit code, reasons, notes, warnings and power. `problems`: inputs that could not be used at all;
    `level`: the comparisons' interval level."""
    if margin < 0:
        raise ValueError(f"margin must be >= 0, got {margin}")
    out = GateResult(0, "pass", "", notes=list(notes), unevaluated=[Unevaluated(problem) for problem in problems])
    untrusted = _trust_findings(trust, out) if trust is not None or tiers else False
    if not tiers and not problems and not untrusted:
        out.unevaluated.append(Unevaluated("no tier was evaluated"))
    for tier in tiers:
        _tier_findings(tier, margin, max_unscored_share, out)
        if tier.baseline_release is not None and tier.endpoint_ok:
            _power_findings(tier, margin, level, out)
    _gap_findings(gaps, margin, gap_margin, out)
    out.reasons = [u.reason for u in out.unevaluated]
    if untrusted:
        out.exit_code, out.outcome = 2, "error"
    elif out.regressions:
        out.exit_code, out.outcome = 1, "regression"
    elif out.reasons:
        out.exit_code, out.outcome = 2, "error"
    out.summary = _summary(out, margin, [t.tier for t in tiers], gaps if gap_margin is not None else ())
    return out


def _summary(out: GateResult, margin: float, tiers: list[str], gated: Sequence[Comparison] = ()) -> str:
    if out.exit_code == 0:
        text = f"PASS (exit 0): no criterion regressed beyond margin {margin} on tier(s) {', '.join(tiers)}"
        pairs = dict.fromkeys(f"{g.candidate} vs {g.baseline} ({g.basis()})" for g in gated)
        return text + (f"; tier gap within --gap-margin: {'; '.join(pairs)}" if pairs else "")
    if out.exit_code == 1:
        parts = [
            f"tier {r.tier} {r.criterion} {r.estimate:+.3f} [{r.low:+.3f}, {r.high:+.3f}] vs {r.baseline}"
            + (f" ({r.basis})" if r.basis else "")
            for r in out.regressions
        ]
        return f"REGRESSION (exit 1, margin {margin}): " + "; ".join(parts)
    return "COULD NOT EVALUATE (exit 2): " + "; ".join(out.reasons)
