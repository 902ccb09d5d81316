"""A comparison as report blocks (Markdown, HTML) or its JSON document, with `report tiers`' writers."""

from __future__ import annotations

import math
from pathlib import Path

from judgewatch.workbench.compare import Comparison, PairRow, word_diff

SHOWN = 50  # items listed per section in md/html; the JSON lists every one


def _num(x: float, spec: str = "+.2f") -> str:
    return format(x, spec) if math.isfinite(x) else "n/a"


def _scores(scores: dict[str, int | None]) -> str:
    return ", ".join(f"{c} {'-' if s is None else s}" for c, s in sorted(scores.items()))


def _pair_rows(pairs: list[PairRow]) -> list[list[str]]:
    return [
        [
            p.key,
            ", ".join(f"{c} {d:+d}" for c, d in sorted(p.delta.items()) if d) or "0",
            p.question,
            word_diff(p.answer_a, p.answer_b),
            _scores(p.scores_a),
            _scores(p.scores_b),
        ]
        for p in pairs[:SHOWN]
    ]


def write_comparison(comparison: Comparison, output: Path, fmt: str) -> list[Path]:
    from judgewatch.calibration.report_render import Block, write_blocks

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
        Block(
            "table",
            headers=("criterion", "pairs", "A mean", "B mean", "delta [95% CI]", "interval", "pairs unscored"),
            rows=tuple(
                (
                    d.criterion,
                    str(d.n),
                    _num(d.mean_a, ".2f"),
                    _num(d.mean_b, ".2f"),
                    f"{_num(d.estimate)} [{_num(d.low)}, {_num(d.high)}]",
                    d.method,
                    str(d.unscored),
                )
                for d in c.criteria
            ),
        ),
    ]
    headers = ("item", "delta", "question", "answer, A to B ([-A only-] {+B only+})", "A scores", "B scores")
    for name, pairs in (("Regressions", c.regressions), ("Improvements", c.improvements)):
        more = f" (first {SHOWN} of {len(pairs)}; the JSON lists all)" if len(pairs) > SHOWN else ""
        blocks.append(Block("h2", f"{name}: {len(pairs)} items{more}"))
        if pairs:
            blocks.append(Block("table", headers=headers, rows=tuple(tuple(r) for r in _pair_rows(pairs))))
    blocks.append(Block("p", f"Unchanged on every criterion: {c.unchanged} items."))
    blocks.append(Block("h2", f"Unscored on either side: {len(c.unscored)} items (not in the deltas above)"))
    if c.unscored:
        blocks.append(
            Block(
                "table",
                headers=("item", "A", "B", "question"),
                rows=tuple(
                    (p.key, p.unscored.get("a", "scored"), p.unscored.get("b", "scored"), p.question)
                    for p in c.unscored[:SHOWN]
                ),
            )
        )
    return write_blocks(blocks, c.to_json(), output, fmt, title=title)  # type: ignore[arg-type]
