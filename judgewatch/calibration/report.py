"""The model owners' Tiers report: Markdown with PNG files beside it, or one self-contained HTML file.

Both are rendered from the same list of blocks (headings, paragraphs, tables, images) built from a
`CalibrationSummary`, so the two formats never disagree. Sections: the judge and its trust, tier scores
(raw, corrected, intervals), tier differences, judge-human agreement, trends, open drift alerts, the anchor
set, what each number rests on, and the method.
"""

from __future__ import annotations

import base64
import html
import logging
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from judgewatch.calibration import plots
from judgewatch.calibration.summary import CalibrationSummary
from judgewatch.stats import Estimate, PPIEstimate

logger = logging.getLogger(__name__)

Format = Literal["md", "html"]
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
    "Corrected means use prediction-powered inference (PPI++): the judge's mean over every scored verdict, "
    "corrected by its error measured on the human-labeled items, each weighted by 1 / its routing probability; "
    "intervals are 95% normal intervals. A tier difference is paired when both tiers answered the same items "
    "(golden runs) and enough of them were labeled on both tiers, unpaired otherwise. Agreement uses the "
    "uniformly routed labels. Drift: the latest window against the pooled earlier ones, one-sided "
    "two-proportion z-test (agreement fell) and Welch t-test (bias shifted), Bonferroni over both tests and "
    "every series tested in a run (family-wise alpha 0.05)."
)


@dataclass(frozen=True)
class Block:
    kind: Literal["h1", "h2", "p", "warn", "table", "image"]
    text: str = ""
    headers: tuple[str, ...] = ()
    rows: tuple[tuple[str, ...], ...] = ()
    image: bytes = b""
    name: str = ""


def fmt_num(value: float | None, spec: str = ".2f") -> str:
    return "n/a" if value is None or not math.isfinite(value) else format(value, spec)


def fmt_ci(est: Estimate | PPIEstimate, spec: str = ".2f") -> str:
    if not math.isfinite(est.estimate):
        return "n/a"
    if not (math.isfinite(est.low) and math.isfinite(est.high)):
        return f"{fmt_num(est.estimate, spec)} (no interval)"
    return f"{fmt_num(est.estimate, spec)} [{fmt_num(est.low, spec)}, {fmt_num(est.high, spec)}]"


def _table(headers: list[str], rows: list[list[str]]) -> Block:
    return Block("table", headers=tuple(headers), rows=tuple(tuple(r) for r in rows))


def blocks(summary: CalibrationSummary) -> list[Block]:
    """The report's content, format-free."""
    s = summary
    title = f"Tier comparison: {s.rubric_name}" + (f" {s.series.rubric.version}" if s.series else "")
    out = [Block("h1", title)]
    since = f"since {s.since:%Y-%m-%d %H:%M} UTC" if s.since else "all time"
    out.append(Block("p", f"Generated {s.generated_at:%Y-%m-%d %H:%M} UTC, {since}."))
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
    out.append(Block("h2", SECTIONS[1]))
    rows = [
        [
            e.tier,
            e.criterion,
            fmt_num(e.raw_mean),
            fmt_ci(e.ppi),
            fmt_ci(e.human_only),
            f"{e.n_labels} / {e.n_verdicts}",
            fmt_num(e.ppi.effective_n, ".0f"),
        ]
        for e in s.estimates
    ]
    headers = ["tier", "criterion", "judge raw mean", "corrected [95% CI]", "human only [95% CI]", "labels / verdicts"]
    out.append(_table([*headers, "effective labels"], rows) if rows else Block("p", "No scored verdicts."))
    out.append(
        Block(
            "image", "Per tier and criterion", image=plots.estimates_png(s.estimates, s.differences), name="estimates"
        )
    )
    out.append(Block("h2", SECTIONS[2]))
    rows = [
        [
            d.criterion,
            f"{d.tier} − {d.baseline}",
            fmt_ci(d.estimate),
            fmt_num(d.raw_diff, "+.2f"),
            d.method,
            str(d.n_labels),
            str(d.n_items),
        ]
        for d in s.differences
    ]
    headers = ["criterion", "difference", "corrected [95% CI]", "judge raw", "method", "labels", "items"]
    out.append(_table(headers, rows) if rows else Block("p", "Fewer than two tiers: no difference to show."))
    out.append(Block("h2", SECTIONS[3]))
    rows = [
        [
            a.tier,
            a.criterion,
            str(a.n),
            fmt_ci(a.weighted_kappa),
            fmt_ci(a.spearman),
            fmt_ci(a.bias, "+.2f"),
            fmt_ci(a.exact),
        ]
        for a in s.agreement
    ]
    headers = ["tier", "criterion", "labels", "weighted kappa", "Spearman", "bias (judge − human)", "exact agreement"]
    out.append(_table(headers, rows) if rows else Block("p", "No human labels yet."))
    out.append(Block("h2", SECTIONS[4]))
    out.append(Block("image", "Scores over time", image=plots.trend_png(s.daily, s.weekly), name="trend"))
    weekly = {(r.tier, r.criterion): r.points for r in (s.drift.results if s.drift else []) if r.window == "weekly"}
    out.append(
        Block("image", "Judge-human agreement and bias per week", image=plots.agreement_png(weekly), name="agreement")
    )
    out.append(Block("h2", SECTIONS[5]))
    rows = [
        [
            a.tier,
            a.criterion,
            a.window,
            f"{a.window_start:%Y-%m-%d}",
            a.kind,
            f"{fmt_num(a.agreement_ref)} → {fmt_num(a.agreement_cur)}",
            f"{fmt_num(a.bias_ref, '+.2f')} → {fmt_num(a.bias_cur, '+.2f')}",
            f"{a.n_ref} / {a.n_cur}",
            a.judge_config_hash[:12],
        ]
        for a in s.alerts
    ]
    headers = ["tier", "criterion", "window", "from", "kind", "agreement", "bias", "labels ref / cur", "judge"]
    out.append(_table(headers, rows) if rows else Block("p", "No open drift alerts."))
    out.append(Block("h2", SECTIONS[6]))
    out += anchor_blocks(s)
    out.append(Block("h2", SECTIONS[7]))
    rows = [[c.tier, str(c.verdicts), str(c.labeled_items), str(c.synthetic_items)] for c in s.label_counts]
    headers = ["tier", "scored verdicts", "labeled items", "of which synthetic"]
    out.append(_table(headers, rows) if rows else Block("p", "Nothing yet."))
    if s.excluded_verdicts:
        out.append(
            Block("p", f"Left out: {s.excluded_verdicts} verdicts of other judge configurations or rubric versions.")
        )
    out.append(Block("h2", SECTIONS[8]))
    out.append(Block("p", METHOD))
    return out


def anchor_blocks(s: CalibrationSummary) -> list[Block]:
    if not s.anchors:
        return [
            Block("p", "No anchor comparison yet: the anchors have been judged by one configuration only (or none).")
        ]
    out = []
    for comp in s.anchors:
        out.append(
            Block(
                "p",
                f"Anchor set {comp.anchor_set} ({comp.n_items} items): configuration {comp.new_config_hash[:12]} "
                f"against the previous {comp.old_config_hash[:12]}.",
            )
        )
        rows = [
            [
                a.criterion,
                str(a.n),
                fmt_num(a.mean_old),
                fmt_num(a.mean_new),
                fmt_ci(a.mean_shift, "+.2f"),
                fmt_ci(a.weighted_kappa),
                fmt_ci(a.exact),
            ]
            for a in comp.criteria
        ]
        headers = ["criterion", "anchors", "old mean", "new mean", "mean shift [95% CI]", "weighted kappa", "exact"]
        out.append(_table(headers, rows))
    return out


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(summary: CalibrationSummary, path: Path) -> list[Path]:
    """Write `path` (Markdown) and its PNG files beside it (`<stem>_<name>.png`); returns every file written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    written, lines = [], []
    for b in blocks(summary):
        if b.kind == "h1":
            lines += [f"# {b.text}", ""]
        elif b.kind == "h2":
            lines += [f"## {b.text}", ""]
        elif b.kind == "p":
            lines += [b.text, ""]
        elif b.kind == "warn":
            lines += [f"> **Warning:** {b.text}", ""]
        elif b.kind == "table":
            lines.append("| " + " | ".join(_md_cell(h) for h in b.headers) + " |")
            lines.append("|" + "---|" * len(b.headers))
            lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in b.rows]
            lines.append("")
        elif b.kind == "image":
            image = path.with_name(f"{path.stem}_{b.name}.png")
            image.write_bytes(b.image)
            written.append(image)
            lines += [f"![{b.text}]({image.name})", ""]
    path.write_text("\n".join(lines), encoding="utf-8")
    return [path, *written]


def render_html(summary: CalibrationSummary, path: Path) -> list[Path]:
    """Write one self-contained HTML file (images inline as base64 PNG)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    parts = []
    for b in blocks(summary):
        text = html.escape(b.text)
        if b.kind in ("h1", "h2"):
            parts.append(f"<{b.kind}>{text}</{b.kind}>")
        elif b.kind == "p":
            parts.append(f"<p>{text}</p>")
        elif b.kind == "warn":
            parts.append(f'<p class="warn"><strong>Warning:</strong> {text}</p>')
        elif b.kind == "table":
            head = "".join(f"<th>{html.escape(h)}</th>" for h in b.headers)
            body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in b.rows)
            parts.append(f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
        elif b.kind == "image":
            data = base64.b64encode(b.image).decode("ascii")
            parts.append(
                f'<figure><img alt="{text}" src="data:image/png;base64,{data}"><figcaption>{text}</figcaption></figure>'
            )
    style = (
        "body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}"
        "table{border-collapse:collapse;margin:.5em 0 1.5em}"
        "td,th{border:1px solid #ccc;padding:.3em .6em;text-align:left}"
        "th{background:#f3f3f3}.warn{background:#fff4e5;border-left:4px solid #f0a020;padding:.5em}img{max-width:100%}"
    )
    title = html.escape(blocks_title(summary))
    document = (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{title}</title><style>{style}</style>'
        f"</head><body>\n" + "\n".join(parts) + "\n</body></html>\n"
    )
    path.write_text(document, encoding="utf-8")
    return [path]


def blocks_title(summary: CalibrationSummary) -> str:
    return f"judgewatch tiers: {summary.rubric_name}"


def write_report(summary: CalibrationSummary, output: Path, fmt: Format = "md") -> list[Path]:
    """Render `summary` as `fmt` at `output`; returns the files written (the report first)."""
    if fmt == "md":
        return render_markdown(summary, output)
    if fmt == "html":
        return render_html(summary, output)
    raise ValueError(f"unknown report format {fmt!r}: use 'md' or 'html'")
