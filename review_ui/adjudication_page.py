"""The "Adjudication" tab: an expert sees every reviewer's label of a disputed or flagged item and settles it;
the judge's verdict is not shown here either. Who may adjudicate which item is the service's decision."""

from __future__ import annotations

from typing import Any

import gradio as gr

from judgewatch.review.adjudication import Adjudication, AdjudicationCase
from judgewatch.review.views import ReviewError
from review_ui.common import username
from review_ui.queue_page import MAX_CRITERIA, literal, radio_updates, references_md, untrusted_md


def labels_md(case: AdjudicationCase) -> str:
    names = [c.name for c in case.item.scored_criteria]
    rows = ["| reviewer | " + " | ".join(names) + " | note |", "|---" * (len(names) + 2) + "|"]
    for label in case.labels:
        scores = " | ".join(str(label.scores.get(n, "–")) for n in names)
        note = "FLAGGED " if label.flagged else ""
        note += f"skipped: {label.skipped_reason}" if label.skipped_reason else label.comment
        rows.append(f"| {literal(label.reviewer)} | {scores} | {literal(note)} |")
    split = ", ".join(f"{k} {v}" for k, v in case.split.items()) or "none"
    why = "flagged for an expert" if case.state == "flagged" else "reviewers disagree by more than one point"
    return f"**Why here:** {why}. **Disagreement:** {split}.\n\n" + "\n".join(rows)


def add_adjudication_tab(adjudication: Adjudication) -> gr.Tab:
    with gr.Tab("Adjudication", id="adjudication") as tab:
        message = gr.Markdown(elem_id="jw-adj-message")
        next_btn = gr.Button("Next case", elem_id="jw-adj-next")
        item_id, names = gr.State(None), gr.State([])
        question = gr.Markdown()
        references = gr.Markdown()
        answer = gr.Markdown(container=True, padding=True)
        labels = gr.Markdown(elem_id="jw-adj-labels")
        radios = [gr.Radio(choices=[], visible=False, elem_id=f"jw-adj-crit-{i}") for i in range(MAX_CRITERIA)]
        note = gr.Textbox(label="Adjudication note", lines=2)
        settle_btn = gr.Button("Settle", variant="primary", elem_id="jw-adj-settle", visible=False)

    screen = [item_id, names, question, references, answer, labels, *radios, note, settle_btn, message]

    def show(request: gr.Request) -> list[Any]:
        expert = username(request)
        text = ""
        try:
            case = adjudication.next_case(expert)
        except ReviewError as exc:
            case, text = None, f"⚠ {literal(str(exc))}"
        item = case.item if case else None
        return [
            item.item_id if item else None,
            [c.name for c in item.scored_criteria] if item else [],
            f"### Question\n\n{untrusted_md(item.question)}" if item else "",
            references_md(item) if item else "",
            untrusted_md(item.answer) if item else "",
            labels_md(case) if case else "",
            *radio_updates(item),
            gr.update(value=""),
            gr.update(visible=item is not None),
            text or ("" if item else f"No case waiting for you ({adjudication.pending()} pending in total)."),
        ]

    def settle(form: dict[Any, Any], request: gr.Request) -> list[Any] | dict[Any, Any]:
        expert, item = username(request), form[item_id]
        if not item:
            return {message: "Take a case first."}
        values = (None if form[r] is None else int(form[r]) for r in radios)
        scores = dict(zip(form[names], values, strict=False))
        try:
            adjudication.resolve(expert, item, scores, note=form[note] or "")
        except ReviewError as exc:
            return {message: f"⚠ {literal(str(exc))}"}
        return show(request)

    private: dict[str, Any] = {"api_visibility": "private", "show_progress": "hidden"}
    next_btn.click(show, outputs=screen, **private)
    settle_btn.click(settle, inputs={item_id, names, note, *radios}, outputs=screen, **private)
    return tab
