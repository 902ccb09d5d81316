"""A comparison as report blocks (Markdown, HTML) or its JSON document, and the tables the Compare page shows."""

from __future__ import annotations

from pathlib import Path

from judgewatch.calibration.report_render import Block, fmt_num, write_blocks
from judgewatch.workbench.compare import Comparison, PairRow, word_diff
from judgewatch.workbench.items import scores_text

SHOWN = 50  # items listed per section in md/html; the JSON lists every one
CRITERIA_HEADERS = ("criterion", "pairs", "A mean", "B mean", "delta [95% CI]", "interval", "pairs unscored")
UNSCORED_HEADERS = ("item", "A", "B", "question")


def criteria_rows(c: Comparison) -> list[tuple[str, ...]]:
    """Per criterion: pairs, both means, the delta B - A with its interval and method, pairs unscored."""
    return [
        (d.criterion, str(d.n), fmt_num(d.mean_a), fmt_num(d.mean_b),
         f"{fmt_num(d.estimate, '+.2f')} [{fmt_num(d.low, '+.2f')}, {fmt_num(d.high, '+.2f')}]", d.method,
         str(d.unscored))
        for d in c.criteria
    ]  # fmt: skip


def delta_text(p: PairRow) -> str:
    """The criteria whose score moved, `faithfulness -2, relevance +1` ("0" when none did)."""
    return ", ".join(f"{c} {d:+d}" for c, d in sorted(p.delta.items()) if d) or "0"


def unscored_rows(pairs: list[PairRow]) -> list[tuple[str, ...]]:
    return [(p.key, p.unscored.get("a", "scored"), p.unscored.get("b", "scored"), p.question) for p in pairs]


def write_comparison(comparison: Comparison, output: Path, fmt: str) -> list[Path]:
    c = comparison
    title = f"judgewatch compare: {c.a} (A) against {c.b} (B)"
    blocks = [
        Block("h1", title),
        Block(
            "p",
            f"Items both answered, under rubric {c.rubric} and judge series {c.judge_series[:12]} on both sides; "
            f"{c.only_a} items only in A and {c.only_b} only in B are left out. Delta = B - A; interval: paired "
            "bootstrap, 95%.",
        ),
        Block("table", headers=CRITERIA_HEADERS, rows=tuple(criteria_rows(c))),
    ]
    headers = ("item", "delta", "question", "answer, A to B ([-A only-] {+B only+})", "A scores", "B scores")
    for name, pairs in (("Regressions", c.regressions), ("Improvements", c.improvements)):
        more = f" (first {SHOWN} of {len(pairs)}; the JSON lists all)" if len(pairs) > SHOWN else ""
        blocks.append(Block("h2", f"{name}: {len(pairs)} items{more}"))
        rows = [(p.key, delta_text(p), p.question, word_diff(p.answer_a, p.answer_b), scores_text(p.scores_a),
                 scores_text(p.scores_b)) for p in pairs[:SHOWN]]  # fmt: skip
        if pairs:
            blocks.append(Block("table", headers=headers, rows=tuple(rows)))
    blocks.append(Block("p", f"Unchanged on every criterion: {c.unchanged} items."))
    blocks.append(Block("h2", f"Unscored on either side: {len(c.unscored)} items (not in the deltas above)"))
    if c.unscored:
        blocks.append(Block("table", headers=UNSCORED_HEADERS, rows=tuple(unscored_rows(c.unscored[:SHOWN]))))
    return write_blocks(blocks, c.to_json(), output, fmt, title=title)  # type: ignore[arg-type]
