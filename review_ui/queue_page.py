"""The "Queue" tab: one leased item at a time, blind, scored from the keyboard, then the judge revealed. The review
service checks the account and the lease; judged content is shown escaped (`untrusted_md`, `literal`)."""

from __future__ import annotations

import html
import re
from typing import Any

import gradio as gr

from judgewatch.review.queue import ReviewQueue
from judgewatch.review.views import LeasedItem, Revealed, ReviewError
from review_ui.common import username
from review_ui.conversation import Turn, earlier_update, split

MAX_CRITERIA = 8  # criterion slots on the screen; rubrics have 1-5


# Markdown's punctuation (CommonMark lets a backslash escape any of it).
_MARKDOWN_PUNCTUATION = re.compile(r"([\\`*_{}\[\]()#+\-.!|~])")


def literal(text: str) -> str:
    """Text shown as typed: no Markdown, no HTML (punctuation backslash-escaped, then <, >, & escaped)."""
    return html.escape(_MARKDOWN_PUNCTUATION.sub(r"\\\1", text), quote=False).replace("\n", "<br>")


def untrusted_md(text: str) -> str:
    """Judged content as safe Markdown: any HTML in it shows as text (escaped), and images become text too, so
    nothing in an answer makes the reviewer's browser fetch from elsewhere. Emphasis, lists, code and links
    still render (a link is fetched only if the reviewer clicks it)."""
    return html.escape(text, quote=False).replace("![", "!\\[")


def turns_md(turns: list[Turn]) -> str:
    """Turns as Markdown: each heading in bold, its text escaped as judged content (HTML shows as text)."""
    return "\n\n".join(f"**{literal(t.heading)}**\n\n{untrusted_md(t.text) or '_(no text)_'}" for t in turns)


def question_md(item: LeasedItem, steps: list[Turn]) -> str:
    """The question, and the tools the assistant used before answering it (the last exchange stays open)."""
    shown = f"### Question\n\n{untrusted_md(item.question)}"
    if steps:
        shown += f"\n\n#### Before answering, the assistant used tools\n\n{turns_md(steps)}"
    return shown


def references_md(item: LeasedItem) -> str:
    parts = []
    if item.reference_answer:
        parts.append(f"**Reference answer**\n\n{untrusted_md(item.reference_answer)}")
    if item.reference_facts:
        facts = "\n".join(f"- {untrusted_md(fact)}" for fact in item.reference_facts)
        parts.append(f"**Reference facts**\n\n{facts}")
    if item.context:
        parts.append("**Context**\n\n" + "\n\n".join(f"> {untrusted_md(c)}" for c in item.context))
    return "\n\n".join(parts) or "_No reference material came with this item._"


def radio_updates(item: LeasedItem | None, *, interactive: bool = True) -> list[Any]:
    """One update per criterion slot: the rubric's criteria with their anchors, the rest hidden."""
    updates: list[Any] = []
    criteria = item.scored_criteria if item else []
    for slot in range(MAX_CRITERIA):
        if slot < len(criteria):
            c = criteria[slot]
            choices = [(f"{level} · {c.anchors[level]}", level) for level in range(item.scale_min, item.scale_max + 1)]  # type: ignore[union-attr]
            label = f"{slot + 1}. {c.name}"
            updates.append(gr.update(visible=True, choices=choices, value=None, label=label, info=c.description,
                                     interactive=interactive))  # fmt: skip
        else:
            updates.append(gr.update(visible=False, choices=[], value=None))
    return updates


def reveal_md(shown: Revealed) -> str:
    rows = ["| criterion | you | judge |", "|---|---|---|"]
    for name, mine in shown.your_scores.items():
        judge = shown.judge_scores.get(name)
        rows.append(f"| {name} | {mine} | {'–' if judge is None else judge} |")
    status = "scored" if shown.judge_status == "scored" else f"unscored ({literal(shown.judge_unscored_reason or '')})"
    overall = "–" if shown.judge_overall is None else f"{shown.judge_overall:.2f}"
    return (
        f"### Judge's verdict\n\n{chr(10).join(rows)}\n\n"
        f"Judge **{literal(shown.judge_name)}**: {status}, overall {overall}; tier **{literal(shown.tier or 'n/a')}**."
        f"\n\nJudge's reason: {literal(shown.judge_reason) or '–'}\n\n_Press Enter or N for the next item._"
    )


def add_queue_tab(queue: ReviewQueue) -> gr.Tab:
    """Build the Queue tab inside the open Blocks."""
    with gr.Tab("Queue", id="queue") as tab:
        progress = gr.Markdown(elem_id="jw-progress")
        message = gr.Markdown(elem_id="jw-message")
        next_btn = gr.Button("Next item (N)", elem_id="jw-next", variant="secondary")
        item_id, version, names = gr.State(None), gr.State(""), gr.State([])
        with gr.Accordion(
            "Earlier in the conversation", open=False, visible=False, elem_id="jw-earlier"
        ) as earlier_box:
            earlier = gr.Markdown(elem_id="jw-earlier-turns")
        question = gr.Markdown(elem_id="jw-question")
        with gr.Accordion("Reference material", open=True):
            references = gr.Markdown(elem_id="jw-references")
        gr.Markdown("**Answer to grade**")
        answer = gr.Markdown(elem_id="jw-answer", container=True, padding=True)
        radios = [
            gr.Radio(choices=[], visible=False, elem_id=f"jw-crit-{i}", elem_classes=["jw-criterion"])
            for i in range(MAX_CRITERIA)
        ]
        comment = gr.Textbox(label="Comment (optional)", lines=2, elem_id="jw-comment")
        with gr.Row():
            submit_btn = gr.Button("Submit (Enter)", variant="primary", elem_id="jw-submit", visible=False)
            flag_btn = gr.Button("Flag for an expert (F)", elem_id="jw-flag", visible=False)
        with gr.Row(visible=False) as skip_row:  # S focuses the reason box
            skip_reason = gr.Textbox(label="Skip: why? (Enter to skip)", elem_id="jw-skip-reason", scale=4)
            skip_btn = gr.Button("Skip", elem_id="jw-skip", scale=1)
        reveal = gr.Markdown(elem_id="jw-reveal")
        gr.Markdown("_Keys: 1-9 score the highlighted criterion · Enter submits · S skips · F flags · N next._")

    screen = [item_id, version, names, earlier_box, earlier, question, references, answer, *radios, comment]
    screen += [submit_btn, flag_btn, skip_row, skip_reason, reveal, message, progress]

    def progress_md(reviewer: str) -> str:
        p = queue.progress(reviewer)
        left = f"{p.left_in_queue}+" if p.more_left else str(p.left_in_queue)
        return f"**{literal(reviewer)}** · done today: **{p.done_today}** · left in my queue: **{left}**"

    def show(reviewer: str, note: str = "") -> list[Any]:
        try:
            item = queue.lease_next(reviewer)
        except ReviewError as exc:
            item, note = None, f"⚠ {literal(str(exc))}"
        shown = item is not None
        turns = split(item.messages if item else None)
        return [
            item.item_id if item else None,
            item.rubric_version if item else "",
            [c.name for c in item.scored_criteria] if item else [],
            earlier_update(turns.earlier),
            turns_md(turns.earlier),
            question_md(item, turns.steps) if item else "",
            references_md(item) if item else "",
            untrusted_md(item.answer) if item else "",
            *radio_updates(item),
            gr.update(value="", interactive=shown),
            gr.update(visible=shown),
            gr.update(visible=shown),
            gr.update(visible=shown),
            gr.update(value=""),
            "",
            " ".join(filter(None, [note, "" if shown else "Nothing left in your queue. Thank you!"])),
            progress_md(reviewer),
        ]

    def next_item(request: gr.Request) -> list[Any]:
        return show(username(request))

    def scores_of(form: dict[Any, Any]) -> dict[str, int | None]:
        values = [form[r] for r in radios]
        return dict(zip(form[names], (None if v is None else int(v) for v in values), strict=False))

    def submit(form: dict[Any, Any], request: gr.Request) -> dict[Any, Any]:
        reviewer, item = username(request), form[item_id]
        if not item:
            return {message: "Take an item first (N)."}
        try:
            result = queue.submit(
                reviewer, item, scores_of(form), rubric_version_shown=form[version], comment=form[comment] or ""
            )
        except ReviewError as exc:
            return {message: f"⚠ {literal(str(exc))}"}
        locked = [gr.update(interactive=False) for _ in radios]
        return {
            item_id: None,
            reveal: reveal_md(result),
            message: "Saved.",
            progress: progress_md(reviewer),
            submit_btn: gr.update(visible=False),
            flag_btn: gr.update(visible=False),
            skip_row: gr.update(visible=False),
            comment: gr.update(interactive=False),
            **dict(zip(radios, locked, strict=True)),
        }

    def skip(item: str | None, shown_version: str, reason: str, request: gr.Request) -> list[Any] | dict[Any, Any]:
        reviewer = username(request)
        if not item:
            return {message: "Take an item first (N)."}
        try:
            queue.skip(reviewer, item, reason or "", rubric_version_shown=shown_version)
        except ReviewError as exc:
            return {message: f"⚠ {literal(str(exc))}"}
        return show(reviewer, "Skipped.")

    def flag(form: dict[Any, Any], request: gr.Request) -> list[Any] | dict[Any, Any]:
        reviewer, item = username(request), form[item_id]
        if not item:
            return {message: "Take an item first (N)."}
        try:
            queue.flag(reviewer, item, form[comment] or "", scores=scores_of(form), rubric_version_shown=form[version])
        except ReviewError as exc:
            return {message: f"⚠ {literal(str(exc))}"}
        return show(reviewer, "Flagged for an expert.")

    private: dict[str, Any] = {"api_visibility": "private", "show_progress": "hidden"}
    next_btn.click(next_item, outputs=screen, **private)
    form: set[Any] = {item_id, version, names, comment, *radios}  # a set: the handler gets {component: value}
    submit_btn.click(submit, inputs=form, outputs=screen, **private)
    flag_btn.click(flag, inputs=form, outputs=screen, **private)
    skip_btn.click(skip, inputs=[item_id, version, skip_reason], outputs=screen, **private)
    skip_reason.submit(skip, inputs=[item_id, version, skip_reason], outputs=screen, **private)
    return tab
