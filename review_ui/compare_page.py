"""The "Compare" page: two releases, or two tiers of one release, on the items both answered (`judgewatch compare`).

For owners and adjudicators. Per criterion the mean of B - A with its paired interval, then the items that regressed
(largest drop first) and improved, each answer pair with the words that differ marked, and apart from them the
pairs where either side is unscored. Text from the store is shown in tables, never as HTML.
"""

from __future__ import annotations

import math

import gradio as gr
import pandas as pd
from sqlalchemy import Engine

from judgewatch.storage.db import session_scope
from judgewatch.workbench.compare import CompareError, Comparison, PairRow, Side, compare, word_diff
from review_ui.common import require_viewer

SHOWN = 200
INTRO = """\
Compare two releases (`r2`, `r3`) or two tiers of one release (`r3/full`, `r3/quantized`) on the items both
answered, under one judge series. Delta = B - A. Answers: `[-only in A-]`, `{+only in B+}`.
"""


def _num(x: float, spec: str = "+.2f") -> str:
    return format(x, spec) if math.isfinite(x) else "n/a"


def _pairs(pairs: list[PairRow]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            [
                p.key,
                ", ".join(f"{c} {d:+d}" for c, d in sorted(p.delta.items()) if d) or "0",
                p.question,
                word_diff(p.answer_a, p.answer_b),
                p.interaction_b,
            ]
            for p in pairs[:SHOWN]
        ],
        columns=["item", "delta", "question", "answer A to B", "B interaction"],
    )


def comparison_frames(c: Comparison) -> tuple[str, pd.DataFrame, pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    summary = (
        f"**{c.a} (A) against {c.b} (B)**, judge series `{c.judge_series[:12]}`, rubric {c.rubric}: "
        f"{len(c.regressions)} regressed, {len(c.improvements)} improved, {c.unchanged} unchanged, "
        f"{len(c.unscored)} unscored on a side; {c.only_a} items only in A, {c.only_b} only in B (left out)."
    )
    criteria = pd.DataFrame(
        [
            [
                d.criterion,
                d.n,
                _num(d.mean_a, ".2f"),
                _num(d.mean_b, ".2f"),
                f"{_num(d.estimate)} [{_num(d.low)}, {_num(d.high)}]",
                d.method,
                d.unscored,
            ]
            for d in c.criteria
        ],
        columns=["criterion", "pairs", "A mean", "B mean", "delta [95% CI]", "interval", "pairs unscored"],
    )
    unscored = pd.DataFrame(
        [[p.key, p.unscored.get("a", "scored"), p.unscored.get("b", "scored"), p.question] for p in c.unscored],
        columns=["item", "A", "B", "question"],
    )
    return summary, criteria, _pairs(c.regressions), _pairs(c.improvements), unscored


def add_compare_tab(engine: Engine, *, label: str = "Compare") -> gr.Tab:
    """Add the Compare tab to the `gr.Blocks` being built."""

    def run(a: str, b: str, rubric: str, series: str, request: gr.Request) -> tuple[object, ...]:
        require_viewer(engine, request)
        try:
            with session_scope(engine) as session:
                result = compare(
                    session, Side.parse(a.strip()), Side.parse(b.strip()), rubric=rubric.strip() or "answer_quality",
                    judge_series=series.strip() or None,
                )  # fmt: skip
        except CompareError as exc:
            raise gr.Error(str(exc)) from None
        return comparison_frames(result)

    with gr.Tab(label, id="compare") as tab:
        gr.Markdown(INTRO)
        with gr.Row():
            side_a = gr.Textbox(label="A (release or release/tier)", elem_id="jw-compare-a")
            side_b = gr.Textbox(label="B (release or release/tier)", elem_id="jw-compare-b")
            rubric = gr.Textbox(value="answer_quality", label="Rubric")
            series = gr.Textbox(label="Judge series (default: most pairs)")
            go = gr.Button("Compare", variant="primary", elem_id="jw-compare-go")
        summary = gr.Markdown(elem_id="jw-compare-summary")
        criteria = gr.Dataframe(interactive=False, label="Per criterion", elem_id="jw-compare-criteria")
        regressions = gr.Dataframe(interactive=False, wrap=True, label="Regressions (largest drop first)")
        improvements = gr.Dataframe(interactive=False, wrap=True, label="Improvements")
        unscored = gr.Dataframe(interactive=False, wrap=True, label="Unscored on either side (not in the deltas)")
        go.click(
            run,
            inputs=[side_a, side_b, rubric, series],
            outputs=[summary, criteria, regressions, improvements, unscored],
            api_visibility="private",
        )
    return tab
