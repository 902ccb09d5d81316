"""The Tiers report's content, built from a `CalibrationSummary` as format-free blocks (`report_render` writes
them as Markdown, HTML or JSON, so the formats never disagree): the gate's question first, then the judge and its
trust, tier scores, tier differences, agreement, trends, drift alerts, the anchor set, the counts, the method."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from judgewatch.calibration import plots
from judgewatch.calibration.agreement import weekly_agreement
from judgewatch.calibration.estimands import ESTIMAND_TEXT, EstimandRow, regression_rows
from judgewatch.calibration.gate_question import HEADERS as GATE_HEADERS
from judgewatch.calibration.gate_question import lead_line, table_rows
from judgewatch.calibration.report_render import Block, Format, fmt_num, jsonable, write_blocks
from judgewatch.calibration.summary import CalibrationSummary
from judgewatch.calibration.tier_gap import GapRow
from judgewatch.stats import Estimate, PPIEstimate

GATE_SECTION = "The gate's question"
SECTIONS = (
    "Judge and trust",
    "Tier scores",
    "Tier difference",
    "Judge-human agreement per tier",
    "Trends",
    "Open drift alerts",
    "Anchor set",
    "What the numbers rest on",
    "Method",
)
METHOD = (
    "Two estimands, never pooled. Traffic quality: the judge's mean over the sampled traffic, each item weighted "
    "by 1 / its sampling probability (Hajek), corrected by the judge's error measured on the human-labeled items, "
    "each weighted by 1 / (sampling x routing probability) (PPI++). Release quality: the golden items' mean, "
    "corrected only by labels on those golden items. Intervals are 95% Student-t intervals for bounded scores "
    "(HC3-scaled residuals, z^2 pseudo-labels at the scale's two ends as in Agresti-Coull, cut to the scale; "
    "docs/statistics.md); an estimate "
    "resting on fewer labels than the stated minimum reads 'too few labels (n=k, need m)' and has no interval. "
    "p-values are two-sided (no difference). The traffic tier gap is shown unadjusted and reweighted to the "
    "pooled request mix of both tiers over request-side cells only (route x language x stratum x prompt length x "
    "department x category, never the answer a tier produced), naming the cells only one tier served and their "
    "share of traffic; the release gap is paired when both tiers answered the same golden items and enough of "
    "them were labeled on both tiers, unpaired otherwise (tier_gap_release_unpaired when the items differ). "
    "Where one score holds most ratings, kappa collapses and Gwet's AC1 is shown beside it. n effective: how many "
    "human labels the labels-only estimate would need for the corrected estimate's standard error (n labeled x "
    "(se labels-only / se corrected)^2; for a traffic tier gap, of the difference of the two tiers' estimates); "
    "'-' where it is not defined: an estimate without an interval (fewer labels than the minimum, the corrected "
    "column says so) and a release's tier gap (no labels-only counterpart is computed). Agreement uses the "
    "uniformly routed labels. Drift, anytime-valid: each stretch from a window's start to now against the windows "
    "before it, asymptotic confidence sequences for a fall in exact agreement and a shift of the bias, Bonferroni "
    "over both and every series tested (family-wise alpha 0.05 over every look)."
)


SINGLE_LOOK = (
    "The intervals in this table hold at one look: right for a one-off report, not for a number read every period "
    "(read the same day after day, some interval misses the truth far more often than 5% of the time)."
)
MONITORED = (
    "Traffic quality, monitored: the mean over the days of each day's traffic quality, with a 95% confidence "
    "sequence (asymptotic, Waudby-Smith et al. 2024) that holds at every daily look together (docs/statistics.md)."
)


def fmt_ci(est: Estimate | PPIEstimate, spec: str = ".2f") -> str:
    if not math.isfinite(est.estimate):
        return "n/a"
    if not (math.isfinite(est.low) and math.isfinite(est.high)):
        return f"{fmt_num(est.estimate, spec)} (no interval)"
    return f"{fmt_num(est.estimate, spec)} [{fmt_num(est.low, spec)}, {fmt_num(est.high, spec)}]"


def fmt_noted(est: Estimate | PPIEstimate, note: str, spec: str = ".2f") -> str:
    """`fmt_ci`, or the reason there is no interval ("too few labels (n=k, need m)") in its place."""
    return note if note else fmt_ci(est, spec)


def _table(headers: list[str], rows: list[list[str]]) -> Block:
    return Block("table", headers=tuple(headers), rows=tuple(tuple(r) for r in rows))


def blocks(summary: CalibrationSummary) -> list[Block]:
    """The report's content, format-free."""
    s = summary
    title = f"Tier comparison: {s.rubric_name}" + (f" {s.series.rubric.version}" if s.series else "")
    out = [Block("h1", title)]
    since = f"since {s.since:%Y-%m-%d %H:%M} UTC" if s.since else "all time"
    out.append(Block("p", f"Generated {s.generated_at:%Y-%m-%d %H:%M} UTC, {since}."))
    out += gate_blocks(s)
    out += [Block("warn", note) for note in s.notes]
    out.append(Block("h2", SECTIONS[0]))
    if s.series is None:
        out.append(Block("p", "No scored verdicts yet."))
    else:
        j = s.series.judge
        out.append(
            Block("p", f"Judge {j.kind}:{j.name} (configuration {j.config_hash}), rubric hash {s.series.rubric.hash}.")
        )
        out.append(Block("p", f"Measured trust: {s.trust.summary}" if s.trust else "Measured trust: not looked up."))
        if s.series_reason:
            out.append(Block("p", s.series_reason))
    out.append(Block("h2", SECTIONS[1]))
    out += estimate_blocks(s)
    covers, head_rows, head_gaps = headline(s)
    image = plots.estimates_png(head_rows, head_gaps, covers)
    out.append(Block("image", f"Per tier and criterion, {covers} only", image=image, name="estimates"))
    out.append(Block("h2", SECTIONS[2]))
    out += gap_blocks(s)
    out.append(Block("h2", SECTIONS[3]))
    out += agreement_blocks(s)
    out.append(Block("h2", SECTIONS[4]))
    _, left_out = plots.trend_criteria(s.daily)
    covers = pooled(s)
    text = f"Scores over time, per day: {covers}" + (f" ({left_out})" if left_out else "")
    out.append(Block("image", text, image=plots.trend_png(s.daily, s.weekly, covers), name="trend"))
    weekly = weekly_agreement(s.frame, min_labels=s.min_labels) if not s.frame.empty else {}
    _, left_out = plots.agreement_weeks(weekly)
    text = f"Judge-human agreement and bias per week: {covers}" + (f" ({left_out})" if left_out else "")
    out.append(Block("image", text, image=plots.agreement_png(weekly, s.agreement), name="agreement"))
    out.append(Block("h2", SECTIONS[5]))
    rows = [
        [a.tier, a.criterion, a.window, f"{a.window_start:%Y-%m-%d}", a.kind,
         f"{fmt_num(a.agreement_ref)} → {fmt_num(a.agreement_cur)}",
         f"{fmt_num(a.bias_ref, '+.2f')} → {fmt_num(a.bias_cur, '+.2f')}", f"{a.n_ref} / {a.n_cur}",
         a.judge_config_hash[:12]]
        for a in s.alerts
    ]  # fmt: skip
    headers = ["tier", "criterion", "window", "from", "kind", "agreement", "bias", "labels ref / cur", "judge"]
    out.append(_table(headers, rows) if rows else Block("p", "No open drift alerts."))
    out.append(Block("h2", SECTIONS[6]))
    out += anchor_blocks(s)
    out.append(Block("h2", SECTIONS[7]))
    rows = [
        [c.tier, str(c.verdicts), str(c.labeled_items), str(c.synthetic_items), str(c.annotated_items)]
        for c in s.label_counts
    ]
    headers = ["tier", "scored verdicts", "labeled items", "of which synthetic", "of which dataset_annotation"]
    out.append(_table(headers, rows) if rows else Block("p", "Nothing yet."))
    if s.excluded_verdicts:
        text = f"Left out: {s.excluded_verdicts} verdicts of other judge configurations or rubric versions."
        out.append(Block("p", text))
    out.append(Block("h2", SECTIONS[8]))
    out.append(Block("p", METHOD))
    return out


def gate_blocks(s: CalibrationSummary) -> list[Block]:
    """The gate's question, first: the newest regression's tier, criterion and gap against its baseline release,
    with its interval, then the latest decision of each recent release (`gate_question`)."""
    out = [Block("h2", GATE_SECTION), Block("p", lead_line(s.gate))]
    return [*out, _table(GATE_HEADERS, table_rows(s.gate))] if s.gate else out


def agreement_blocks(s: CalibrationSummary) -> list[Block]:
    """Judge-human agreement per tier and criterion, Gwet's AC1 beside kappa, and why kappa collapses where
    prevalence is extreme; below the minimum of labels every cell says so instead of an interval."""
    rows = [
        [a.tier, a.criterion, str(a.n), fmt_noted(a.weighted_kappa, a.interval_note), fmt_noted(a.ac1, a.interval_note),
         fmt_noted(a.spearman, a.interval_note), fmt_noted(a.bias, a.interval_note, "+.2f"),
         fmt_noted(a.exact, a.interval_note), a.prevalence_note]
        for a in s.agreement
    ]  # fmt: skip
    headers = ["tier", "criterion", "labels", "weighted kappa", "Gwet's AC1", "Spearman", "bias (judge − human)"]
    headers += ["exact agreement", "note"]
    if not rows:
        return [Block("p", "No human labels yet.")]
    text = (
        "All labels of the period, uniformly routed ones only; the weekly plot below shows the same statistics "
        f"per week. Fewer than {s.min_labels} labels: no interval."
    )
    return [_table(headers, rows), Block("p", text)]


def headline(s: CalibrationSummary) -> tuple[str, list[EstimandRow], list[GapRow]]:
    """What the headline plot covers, one population and never pooled: the release the gate's lead names (its
    newest regression, else its newest decision) when the Tier scores table holds it, else the release with the
    newest golden verdicts, else production traffic; named in its title."""
    if s.release:
        have = {e.release for e in s.release}
        worst = next((g for g in s.gate if g.outcome == "regression" and g.release in have), None)
        named = worst or next((g for g in s.gate if g.release in have), None)
        if named is not None:
            latest = named.release
            why = "the regressing release the gate names" if worst else "the release the gate decided last"
        else:
            golden = regression_rows(s.frame)
            latest = str(golden.groupby("release")["at"].max().idxmax() if not golden.empty else s.release[-1].release)
            why = "the newest golden verdicts"
        rows = [e for e in s.release if e.release == latest]
        return f"release {latest} ({why}; golden sets)", rows, [g for g in s.gaps if g.release == latest]
    return "production traffic", list(s.traffic), [g for g in s.gaps if g.release is None]


def pooled(s: CalibrationSummary) -> str:
    """What the over-time plots pool in a day or week, named: the releases (their golden items) and traffic."""
    releases = sorted({e.release for e in s.release if e.release})
    parts = ["production traffic"] if s.traffic else []
    if releases:
        parts.append(f"release{'s' if len(releases) > 1 else ''} {', '.join(releases)} (golden sets)")
    if not parts:
        return "nothing yet"
    return " and ".join(parts) + (" pooled" if len(releases) + bool(s.traffic) > 1 else "")


def fmt_n(sampled: int, labeled: int, effective: float) -> list[str]:
    """n sampled, n labeled, n effective; "-" where n effective is not defined (see METHOD)."""
    return [str(sampled), str(labeled), "-" if not math.isfinite(effective) else format(effective, ".0f")]


def fmt_p(p: float) -> str:
    return "n/a" if not math.isfinite(p) else ("< 0.001" if p < 0.001 else f"{p:.3f}")


def _labels_note(labeled: int, synthetic: int, dataset: int) -> str:
    """Who gave the labels: "-" without labels, else people and/or the programs and datasets that made them."""
    counts = {"people": max(labeled - synthetic - dataset, 0), "synthetic": synthetic, "dataset_annotation": dataset}
    return ", ".join(f"{n} {who}" for who, n in counts.items() if n) if labeled else "-"


def estimate_blocks(s: CalibrationSummary) -> list[Block]:
    """Traffic quality and release quality: one table, every row naming its estimand and its n's."""
    out = [Block("p", f"{name}: {text}.") for name, text in ESTIMAND_TEXT.items()]
    out.append(Block("p", s.traffic_covers or "No sampled production traffic in this series."))
    rows = [
        [e.estimand, f"{e.release} / {e.dataset}" if e.release else "production traffic", e.tier, e.criterion,
         fmt_num(e.judge_mean), fmt_noted(Estimate(e.estimate, e.low, e.high, e.n_labeled), e.interval_note),
         fmt_noted(Estimate(e.human_only, e.human_low, e.human_high, e.n_labeled), e.interval_note),
         *fmt_n(e.n_sampled, e.n_labeled, e.n_effective),
         _labels_note(e.n_labeled, e.n_synthetic_labels, e.n_dataset_labels)]
        for e in [*s.traffic, *s.release]
    ]  # fmt: skip
    headers = ["estimand", "population", "tier", "criterion", "judge only", "corrected [95% CI]"]
    headers += ["human only [95% CI]", "n sampled", "n labeled", "n effective", "labels by"]
    if not rows:
        text = "No estimates: sample traffic (`judgewatch sample`) or run a release (`judgewatch regress`)."
        return [*out, Block("p", text)]
    return [*out, Block("p", SINGLE_LOOK), _table(headers, rows), *monitor_blocks(s)]


def monitor_blocks(s: CalibrationSummary) -> list[Block]:
    """Traffic quality as the daily check reads it: an anytime-valid confidence sequence over the days."""
    if not s.traffic_monitor:
        return []
    rows = [
        [m.tier, m.criterion, f"{m.first_day}, {m.periods} day(s)", fmt_ci(Estimate(m.estimate, m.low, m.high, 0)),
         str(m.n_labeled)]
        for m in s.traffic_monitor
    ]  # fmt: skip
    headers = ["tier", "criterion", "days with enough labels", "mean of the days [95% CS, anytime-valid]", "labels"]
    return [Block("p", MONITORED), _table(headers, rows)]


def gap_blocks(s: CalibrationSummary) -> list[Block]:
    """Tier gaps on traffic (unadjusted and adjusted for the request mix) and on the same golden items."""
    rows = [
        [g.estimand, g.release or "production traffic", g.criterion, f"{g.tier} − {g.baseline}",
         fmt_noted(Estimate(g.estimate, g.low, g.high, g.n_labeled), g.interval_note, "+.2f"), fmt_p(g.p_value),
         fmt_num(g.judge_diff, "+.2f"), *fmt_n(g.n_sampled, g.n_labeled, g.n_effective),
         g.reference_mix or "unadjusted: each tier's own requests"]
        for g in s.gaps
    ]  # fmt: skip
    headers = ["estimand", "population", "criterion", "difference", "corrected [95% CI]", "p-value", "judge only"]
    headers += ["n sampled", "n labeled", "n effective", "adjusted to"]
    if not rows:
        return [Block("p", "Fewer than two tiers in traffic or in a release: no difference to show.")]
    return [_table(headers, rows)]


def anchor_blocks(s: CalibrationSummary) -> list[Block]:
    if not s.anchors:
        return [
            Block("p", "No anchor comparison yet: the anchors have been judged by one configuration only (or none).")
        ]
    out = []
    for comp in s.anchors:
        text = (
            f"Anchor set {comp.anchor_set} ({comp.n_items} items): configuration {comp.new_config_hash[:12]} "
            f"against the previous {comp.old_config_hash[:12]}."
        )
        out.append(Block("p", text))
        rows = [
            [a.criterion, str(a.n), fmt_num(a.mean_old), fmt_num(a.mean_new), fmt_ci(a.mean_shift, "+.2f"),
             fmt_ci(a.weighted_kappa), fmt_ci(a.exact)]
            for a in comp.criteria
        ]  # fmt: skip
        headers = ["criterion", "anchors", "old mean", "new mean", "mean shift [95% CI]", "weighted kappa", "exact"]
        out.append(_table(headers, rows))
    return out


def blocks_title(summary: CalibrationSummary) -> str:
    return f"judgewatch tiers: {summary.rubric_name}"


def report_document(summary: CalibrationSummary) -> dict[str, Any]:
    """The JSON report: every estimate with its estimand, its n's (sampled, labeled, effective) and p-values."""
    s = summary
    return jsonable(
        {
            "generated_at": s.generated_at,
            "rubric": s.rubric_name,
            "gate_question": lead_line(s.gate),
            "gate": s.gate,
            "since": s.since,
            "judge": s.series.judge if s.series else None,
            "series_reason": s.series_reason,
            "rubric_identity": s.series.rubric if s.series else None,
            "estimands": ESTIMAND_TEXT,
            "traffic_covers": s.traffic_covers,
            "traffic": s.traffic,
            "traffic_monitor": s.traffic_monitor,
            "release": s.release,
            "gaps": s.gaps,
            "agreement": s.agreement,
            "min_labels": s.min_labels,
            "label_counts": s.label_counts,
            "excluded_verdicts": s.excluded_verdicts,
            "untiered_verdicts": s.untiered_verdicts,
            "notes": s.notes,
            "baseline_tier": s.baseline_tier,
            "baseline_reason": s.baseline_reason,
        }
    )


def write_report(summary: CalibrationSummary, output: Path, fmt: Format = "md") -> list[Path]:
    """Render `summary` as `fmt` at `output`; returns the files written (the report first)."""
    return write_blocks(blocks(summary), report_document(summary), output, fmt, title=blocks_title(summary))
