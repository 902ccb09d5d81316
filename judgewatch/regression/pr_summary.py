"""The gate's decision as a short Markdown summary for a pull-request comment (`regress --summary-md`), from the
report's record: nothing computed again."""

from __future__ import annotations

from judgewatch.calibration.report_render import fmt_num
from judgewatch.regression.gate import Comparison, gap_name
from judgewatch.regression.report import RegressionReport, comparison_verdict, excerpt, interval_text
from judgewatch.stats.power import POWER

OUTCOME = {0: "PASS", 1: "REGRESSION", 2: "COULD NOT EVALUATE"}


def _rows(report: RegressionReport) -> list[str]:
    gap_margin, gated = report.gap_rule
    found: list[tuple[str, Comparison, float, bool]] = [
        (s.tier, c, report.margin, True) for s in report.tiers for c in s.evaluation.comparisons
    ]
    found += [(f"{gap_name(c)} (tier gap)", c, gap_margin, gated) for c in report.gaps]
    if not found:
        return []
    level = f"{report.level:.0%}"
    rows = [
        f"| tier | criterion | candidate − baseline | estimate [{level} CI] | margin | verdict "
        f"| detectable drop ({POWER:.0%}) |",
        "|---|---|---|---|---|---|---|",
    ]
    for tier, c, margin, gate in found:
        shown = f"{margin}" if gate else f"{margin} (not gated)"
        rows.append(
            f"| {tier} | {c.criterion} | {c.candidate} − {c.baseline} | {interval_text(c)} | {shown} "
            f"| {comparison_verdict(c, margin, gated=gate)} | {fmt_num(c.detectable(margin, report.level))} |"
        )
    rule = f"A criterion regresses when its whole {level} interval of candidate − baseline lies below −margin."
    return [*rows, "", rule, ""]


def _worst(report: RegressionReport) -> list[str]:
    lines = []
    for section in report.tiers:
        for w in section.worst:
            change = f"Δ {fmt_num(w.delta, '+.2f')}" if w.baseline_overall is not None else "overall"
            lines.append(
                f"- {section.tier}: {w.link(report.review_url)} ({change}, now {fmt_num(w.candidate_overall)}): "
                f"{excerpt(w.question)}"
            )
    return ["**Worst items** (largest drop against the baseline, or lowest scored):", "", *lines, ""] if lines else []


def render_summary(report: RegressionReport) -> str:
    """The pull-request comment's Markdown."""
    gate, judge = report.gate, report.judge
    lines = [f"**WARNING: {gate.accepted_unvalidated}**", ""] if gate.accepted_unvalidated else []
    lines += [
        f"### Release gate: {report.release}: {OUTCOME[gate.exit_code]} (exit {gate.exit_code})",
        "",
        *([gate.summary, ""] if gate.exit_code != 2 else []),
        *_rows(report),
        *[f"- could not evaluate: {r}" for r in gate.reasons],
        *[f"- warning: {w}" for w in gate.warnings],
        f"- judge: {judge.kind}:{judge.name} (config {judge.config_hash[:12]})" if judge else "- judge: none",
        f"- judge trust: {report.trust_headline()}",
        f"- judge cost of this release so far: {report.cost['text']}" if report.cost else "- judge cost: not known",
        "",
        *_worst(report),
    ]
    return "\n".join(lines).rstrip() + "\n"
