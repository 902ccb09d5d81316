"""The regression gate's report: Markdown for people, JSON beside it for machines, from one record."""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from judgewatch.calibration.report_render import fmt_num, jsonable
from judgewatch.contract.verdicts import JudgeIdentity, RubricIdentity
from judgewatch.regression.gate import Comparison, GateResult, TierEvaluation
from judgewatch.regression.tier_preference import PreferenceRow
from judgewatch.stats import Estimate
from judgewatch.stats.paired import PairedDiff
from judgewatch.stats.power import POWER

logger = logging.getLogger(__name__)

EXCERPT_CHARS = 160
LISTED_IDS = 20  # unanswered ids listed per golden set in Markdown (all of them in the JSON)


@dataclass
class WorstItem:
    """One item whose score dropped most (or, without a baseline, scored lowest)."""

    key: str  # "<dataset>/<item id>"
    question: str
    reference_answer: str | None
    candidate_answer: str
    candidate_overall: float | None
    baseline_answer: str | None = None
    baseline_overall: float | None = None
    reason: str = ""  # the judge's reason for the candidate verdict, or why it is unscored
    interaction_id: str = ""  # the candidate answer's interaction: the review app's Items page opens it

    @property
    def delta(self) -> float | None:
        if self.candidate_overall is None or self.baseline_overall is None:
            return None
        return self.candidate_overall - self.baseline_overall

    def link(self, review_url: str | None) -> str:
        """The item's key, as a Markdown link to the review app's Items page when both are known."""
        if not (review_url and self.interaction_id):
            return self.key
        return f"[{self.key}]({review_url.rstrip('/')}/?item={self.interaction_id})"


@dataclass
class TierSection:
    tier: str
    source: str  # where the answers came from: live:<url>#<model> or recorded:<file>
    evaluation: TierEvaluation
    worst: list[WorstItem] = field(default_factory=list)
    run_ids: list[str] = field(default_factory=list)
    generation: dict[str, Any] = field(default_factory=dict)  # reused / generated / failed counts
    config: dict[str, Any] = field(default_factory=dict)  # a live tier's configuration summary, keys masked


@dataclass
class RegressionReport:
    release: str
    created_at: datetime
    datasets: dict[str, str]  # name -> revision
    gate: GateResult
    margin: float
    max_unscored_share: float
    level: float = 0.95
    judge: JudgeIdentity | None = None
    rubric: RubricIdentity | None = None
    trust_summary: str | None = None
    trustworthy: bool | None = None
    accept_unvalidated_judge: bool = False
    tiers: list[TierSection] = field(default_factory=list)
    gaps: list[Comparison] = field(default_factory=list)
    baseline_tier: str | None = None  # the tier the others are compared with (tiers file or --baseline-tier)
    flow_run_id: str | None = None
    gap_margin: float | None = None  # None: the tier gap is reported, not gated
    pairwise_judge: JudgeIdentity | None = None  # the judge of the tier preference on the same items
    pairwise_trust: str | None = None  # that judge's measured trust under the pairwise rubric (one line)
    preferences: list[PreferenceRow] = field(default_factory=list)
    preference_note: str | None = None  # why the tier preference is missing, when it is
    preference_items: list[str] = field(default_factory=list)  # per tier pair: the items compared pairwise
    cost: dict[str, Any] | None = None  # the judge's cost for this release (judging.costs.Cost.to_json + "text")
    review_url: str | None = None  # the review app's address: worst items link to its Items page

    @property
    def gap_rule(self) -> tuple[float, bool]:
        """(the margin a tier gap is read against, whether the gate applies it): --gap-margin, else the gate's
        margin, reported only."""
        return (self.gap_margin, True) if self.gap_margin is not None else (self.margin, False)

    def trust_headline(self) -> str:
        """The judge's measured trust in one line: trustworthy, not trustworthy or unmeasured, and its figures."""
        word = {True: "trustworthy", False: "not trustworthy", None: "unmeasured"}[self.trustworthy]
        return f"{word}: " + (self.trust_summary or "no trust verdict").strip().splitlines()[0]


def excerpt(text: str | None) -> str:
    if text is None:
        return "—"
    flat = " ".join(text.split()).replace("|", "\\|")
    return flat if len(flat) <= EXCERPT_CHARS else flat[: EXCERPT_CHARS - 1] + "…"


def interval_text(c: Comparison) -> str:
    """ "+0.120 [-0.050, +0.290]": candidate - baseline with its interval, or why there is none."""
    d = c.diff
    if d.n == 0:
        return "n/a (no pairs)" if c.paired else "n/a (no scores on a side)"
    return f"{fmt_num(d.estimate, '+.3f')} [{fmt_num(d.low, '+.3f')}, {fmt_num(d.high, '+.3f')}]"


def _n(c: Comparison) -> str:
    d = c.diff
    return str(d.n) if isinstance(d, PairedDiff) else f"{d.n_candidate} + {d.n_baseline} (unpaired)"


def comparison_verdict(c: Comparison, margin: float, *, gated: bool = True) -> str:
    """A comparison's verdict in words, by the gate's rule (`Comparison.below`)."""
    if c.below(margin):
        return "REGRESSED" if gated else "beyond margin (not gated)"
    if c.diff.n == 0:
        return "not applicable"
    return "ok" if c.defined else "no interval"


def _comparison_rows(comparisons: list[Comparison], margin: float, *, gated: bool = True) -> list[str]:
    n = "pairs" if all(c.paired for c in comparisons) else "n"
    rows = [
        f"| criterion | baseline | candidate | difference [95% CI] | {n} | dropped | method | verdict "
        f"| detectable drop ({POWER:.0%}) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for c in comparisons:
        verdict = comparison_verdict(c, margin, gated=gated)
        rows.append(
            f"| {c.criterion} | {fmt_num(c.baseline_mean)} ({c.baseline}) "
            f"| {fmt_num(c.candidate_mean)} ({c.candidate}) | {interval_text(c)} | {_n(c)} | {c.diff.n_dropped} "
            f"| {c.diff.method} | {verdict} "
            f"| {fmt_num(c.detectable(margin))} |"
        )
    return rows


def _unanswered_lines(ev: TierEvaluation) -> list[str]:
    """The golden items the tier did not answer: counted, shared and listed (never scored for this tier)."""
    if not ev.unanswered:
        return []
    lines = [f"- {ev.answered_text()}, never scored for this tier:"]
    for name, ids in sorted(ev.unanswered.items()):
        more = f" (and {len(ids) - LISTED_IDS} more: all in the JSON report)" if len(ids) > LISTED_IDS else ""
        lines.append(f"  - {name}: {len(ids)}: {', '.join(ids[:LISTED_IDS])}{more}")
    return lines


def _header(report: RegressionReport) -> list[str]:
    gate = report.gate
    # Accepting an unvalidated judge on purpose is the first thing anyone reading the report must see.
    first = [f"**WARNING: {gate.accepted_unvalidated}**", ""] if gate.accepted_unvalidated else []
    lines = [
        *first,
        f"# Regression gate: release {report.release}",
        "",
        f"**{gate.summary}**",
        "",
        f"- decided: {report.created_at.isoformat(timespec='seconds')}"
        + (f" (flow run {report.flow_run_id})" if report.flow_run_id else ""),
        f"- margin: {report.margin} (a criterion regresses when its whole {report.level:.0%} interval of "
        f"candidate - baseline lies below -{report.margin}); unscored allowed: {report.max_unscored_share:.0%}",
        f"- power: `detectable drop` is the smallest drop of a criterion's mean the gate catches with {POWER:.0%} "
        "probability at its pairs and margin (margin + (t + t) x sd / sqrt(n) of the paired differences; "
        'docs/statistics.md, "Gate power")',
        "- datasets: " + (", ".join(f"{n} (revision {r})" for n, r in report.datasets.items()) or "none"),
    ]
    if report.judge is not None:
        j = report.judge
        where = f" at {j.endpoint}" if j.endpoint else ""
        lines.append(f"- judge: {j.kind}:{j.name}{where}, config {j.config_hash}")
    if report.rubric is not None:
        lines.append(f"- rubric: {report.rubric.name} {report.rubric.version}, hash {report.rubric.hash}")
    if report.cost is not None:
        lines.append(f"- judge cost of this release so far: {report.cost['text']}")
    lines.append("")
    if report.trustworthy is not True:
        lines += ["> **WARNING: judge trust**", ">"]
        lines += [f"> {line}" for line in (report.trust_summary or "unmeasured: no trust verdict").splitlines()]
        if report.accept_unvalidated_judge:
            lines += [">", "> The operator passed `--accept-unvalidated-judge`: these scores are used on purpose."]
        lines.append("")
    elif report.trust_summary:
        lines += ["Judge trust: " + report.trust_summary.splitlines()[0], ""]
    notes = [n for n in gate.notes if not n.startswith("judge trust:")]  # stated above
    for title, entries in (("Reasons", gate.reasons), ("Warnings", gate.warnings), ("Notes", notes)):
        if entries:
            lines += [f"## {title}", "", *[f"- {e}" for e in entries], ""]
    return lines


def _config_lines(config: dict[str, Any]) -> list[str]:
    """A live tier's configuration: template and its hash, params, headers as written, the key masked."""
    if not config:
        return []
    template = config.get("template")
    if config.get("template_hash"):
        template = f"{template} (hash {config['template_hash']})"
    params = ", ".join(f"{k} {json.dumps(v, ensure_ascii=False)}" for k, v in (config.get("params") or {}).items())
    lines = [
        f"- configuration {config.get('config_hash')}: model {config.get('model')} at {config.get('url')}, "
        f"prompt template {template}",
        f"- params: {params or 'defaults'}",
    ]
    headers = ", ".join(f"{k}: {v}" for k, v in (config.get("headers") or {}).items())
    lines.append(f"- api key: {config.get('api_key', 'none')}; headers: {headers or 'none'}")
    return lines


def _tier_lines(section: TierSection, margin: float, review_url: str | None = None) -> list[str]:
    ev = section.evaluation
    lines = [f"## Tier {section.tier}", "", f"- answers: {section.source}", *_config_lines(section.config)]
    if section.generation:
        lines.append("- generation: " + ", ".join(f"{k} {v}" for k, v in section.generation.items()))
    lines.append(f"- baseline: {ev.baseline_release or 'none (first release of this tier)'}")
    lines += _unanswered_lines(ev)
    reasons = ", ".join(f"{k} {v}" for k, v in sorted(ev.unscored_reasons.items())) or "none"
    lines.append(f"- unscored: {ev.unscored} of {ev.total} ({fmt_num(ev.unscored_share * 100, '.1f')}%): {reasons}")
    if not ev.endpoint_ok:
        lines.append(f"- endpoint: UNREACHABLE ({ev.endpoint_detail})")
    if section.run_ids:
        lines.append("- runs: " + ", ".join(section.run_ids))
    lines.append("")
    if ev.comparisons:
        lines += [*_comparison_rows(ev.comparisons, margin), ""]
    if section.worst:
        title = "Worst items (largest drop vs baseline)" if ev.baseline_release else "Lowest-scored items"
        lines += [
            f"### {title}",
            "",
            "| item | Δ overall | baseline | candidate | question | baseline answer | candidate answer | judge |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for w in section.worst:
            lines.append(
                f"| {w.link(review_url)} | {fmt_num(w.delta, '+.2f')} | {fmt_num(w.baseline_overall)} "
                f"| {fmt_num(w.candidate_overall)} | {excerpt(w.question)} | {excerpt(w.baseline_answer)} "
                f"| {excerpt(w.candidate_answer)} | {excerpt(w.reason)} |"
            )
        lines.append("")
    return lines


def _share(e: Estimate, spec: str = ".0%") -> str:
    return f"{fmt_num(e.estimate, spec)} [{fmt_num(e.low, spec)}, {fmt_num(e.high, spec)}]"


def _preference_lines(report: RegressionReport) -> list[str]:
    """The tier preference on the same items: worse / tied / better shares, net preference, sign test."""
    if not report.preferences:
        note = report.preference_note
        items = [f"- {line}" for line in report.preference_items]
        return ["## Tier preference on the same items", "", note, *items, ""] if note else []
    first = report.preferences[0]
    judge = report.pairwise_judge
    lines = [
        f"## Tier preference on the same items: {first.candidate} vs {first.reference}",
        "",
        f"Pairwise judge {judge.kind}:{judge.name} (config {judge.config_hash}) on every golden item both tiers "
        "answered, asked in both orders; orders that disagree count as a tie. Shares of the scored pairs with "
        f"{report.level:.0%} Wilson intervals; net = better - worse; p: two-sided sign test on the non-tied pairs."
        if judge is not None
        else "",
        "",
        *[f"- {line}" for line in report.preference_items],
        "",
        f"Pairwise judge trust: {report.pairwise_trust or 'unmeasured: no trust record under the pairwise rubric'}",
        "",
        f"| golden set | criterion | pairs | {first.candidate} worse | tied | {first.candidate} better "
        "| net [95% CI] | p (sign test) | unscored |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in report.preferences:
        s = row.shares
        lines.append(
            f"| {row.dataset} | {row.criterion} | {row.pairs} | {_share(s.worse)} ({s.worse.n}) "
            f"| {_share(s.tied)} ({s.tied.n}) | {_share(s.better)} ({s.better.n}) | {_share(s.net, '+.2f')} "
            f"| {fmt_num(s.p_value, '.3g')} | {row.unscored} |"
        )
    return [*lines, ""]


def _gap_lines(report: RegressionReport) -> list[str]:
    """Each tier's gap to the baseline tier, one section per pair: its estimand and the items it rests on."""
    gap_margin, gated = report.gap_rule
    how = f"gated at --gap-margin {report.gap_margin}" if gated else "reported, not gated (no --gap-margin)"
    lines: list[str] = []
    pairs: dict[tuple[str, str], list[Comparison]] = {}
    for gap in report.gaps:
        pairs.setdefault((gap.candidate, gap.baseline), []).append(gap)
    for (candidate, baseline), gaps in pairs.items():
        first = gaps[0]
        kind = "paired on the same items" if first.paired else "unpaired: different items"
        method = (
            "paired bootstrap of the per-item differences"
            if first.paired
            else "difference of the two tiers' means, each over its own items, with a Welch t interval"
        )
        lines += [
            f"## Tier gap: {candidate} vs {baseline} (same release, {kind})",
            "",
            f"Estimand `{first.estimand}`: {first.items()}; {method}; {how}.",
            "",
            *_comparison_rows(gaps, gap_margin, gated=gated),
            "",
        ]
    return lines


def render_markdown(report: RegressionReport) -> str:
    lines = _header(report)
    for section in report.tiers:
        lines += _tier_lines(section, report.margin, report.review_url)
    lines += _gap_lines(report) + _preference_lines(report)
    return "\n".join(lines).rstrip() + "\n"


def to_json(report: RegressionReport) -> dict[str, Any]:
    data = asdict(report)
    for section, raw in zip(report.tiers, data["tiers"], strict=True):
        raw["evaluation"]["unscored_share"] = section.evaluation.unscored_share
        raw["evaluation"]["unanswered_count"] = section.evaluation.unanswered_count
        for worst, raw_worst in zip(section.worst, raw["worst"], strict=True):
            raw_worst["delta"] = worst.delta
    for gap, raw_gap in zip(report.gaps, data["gaps"], strict=True):
        raw_gap["paired"], raw_gap["items"] = gap.paired, gap.items()
    result: dict[str, Any] = jsonable(data)  # the judge and rubric models too
    return result


def write_report(report: RegressionReport, path: Path) -> tuple[Path, Path]:
    """Write `path` (Markdown) and the JSON beside it (same name, .json); returns both paths."""
    path.parent.mkdir(parents=True, exist_ok=True)
    json_path = path.with_suffix(".json")
    path.write_text(render_markdown(report), encoding="utf-8")
    json_path.write_text(json.dumps(to_json(report), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    logger.info("regression report written to %s and %s", path, json_path)
    return path, json_path
