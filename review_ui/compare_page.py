"""The "Compare" page, for owners and adjudicators: `judgewatch compare`'s tables (two releases, or two tiers of
one release, on the items both answered). Text from the store is shown in tables, never as HTML."""

from __future__ import annotations

import gradio as gr
import pandas as pd
from sqlalchemy import Engine

from judgewatch.storage.db import session_scope
from judgewatch.workbench.compare import CompareError, Comparison, PairRow, Side, compare, word_diff
from judgewatch.workbench.compare_report import (
    CRITERIA_HEADERS,
    UNSCORED_HEADERS,
    criteria_rows,
    delta_text,
    unscored_rows,
)
from review_ui.common import require_viewer

SHOWN = 200
INTRO = """\
Compare two releases (`r2`, `r3`) or two tiers of one release (`r3/full`, `r3/quantized`) on the items both
answered, under one judge series. Delta = B - A. Answers: `[-only in A-]`, `{+only in B+}`.
"""


def comparison_frames(c: Comparison) -> tuple[str, pd.DataFrame, pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    summary = (
        f"**{c.a} (A) against {c.b} (B)**, judge series `{c.judge_series[:12]}`, rubric {c.rubric}: "
        f"{len(c.regressions)} regressed, {len(c.improvements)} improved, {c.unchanged} unchanged, "
        f"{len(c.unscored)} unscored on a side; {c.only_a} items only in A, {c.only_b} only in B (left out)."
    )

    def pairs(found: list[PairRow]) -> pd.DataFrame:
        rows = [[p.key, delta_text(p), p.question, word_diff(p.answer_a, p.answer_b), p.interaction_b]
                for p in found[:SHOWN]]  # fmt: skip
        return pd.DataFrame(rows, columns=["item", "delta", "question", "answer A to B", "B interaction"])

    criteria = pd.DataFrame(criteria_rows(c), columns=list(CRITERIA_HEADERS))
    unscored = pd.DataFrame(unscored_rows(c.unscored), columns=list(UNSCORED_HEADERS))
    return summary, criteria, pairs(c.regressions), pairs(c.improvements), unscored


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
