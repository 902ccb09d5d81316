"""The "Items" page: the items behind a number (`workbench.items.ItemFilter`, as `judgewatch export`), paged by the
server, and one item opened whole (`/?item=<interaction id>`). Text from the store never goes in as HTML."""

from __future__ import annotations

import json
from typing import Any

import gradio as gr
import pandas as pd
from pydantic import ValidationError
from sqlalchemy import Engine

from judgewatch.contract.verdicts import PromptTrim
from judgewatch.storage.db import session_scope
from judgewatch.storage.verdicts import VerdictRecord
from judgewatch.workbench.items import ItemDetail, ItemFilter, LabelStatus, find_items, item_detail, scores_text
from review_ui.common import require_viewer
from review_ui.conversation import as_text, earlier_update, split

TAB_ID = "items"
PAGE_SIZE = 25
LIST_COLUMNS = ("interaction", "release", "tier", "dataset / source", "rubric", "status", "overall", "scores",
                "labels", "question")  # fmt: skip
INTRO = """\
The items behind the numbers: current verdicts, filtered here and paged by the server. Click a row (or paste an
interaction id) to open it: content, every verdict, the people's labels and the adjudication, and the same item
in other releases. Link to an item with `?item=<interaction id>`.
"""


def _short(text: str, n: int = 90) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


def _status(v: VerdictRecord) -> str:
    return v.status if v.status == "scored" else f"unscored: {v.unscored_reason}"


def _overall(v: VerdictRecord) -> str:
    return "-" if v.overall is None else f"{v.overall:.2f}"


def item_link(interaction_id: str) -> str:
    """The deep link to an item, relative to the review app's root."""
    return f"/?item={interaction_id}"


def list_frame(engine: Engine, filt: ItemFilter, page: int) -> tuple[pd.DataFrame, str]:
    with session_scope(engine) as session:
        rows, total = find_items(session, filt, offset=page * PAGE_SIZE, limit=PAGE_SIZE)
    table = [
        [r.interaction.id, r.interaction.release or "-", r.interaction.tier or "-", r.dataset or r.interaction.source,
         r.verdict.rubric_name, _status(r.verdict), _overall(r.verdict), scores_text(r.verdict.scores), r.status.value,
         _short(r.interaction.question)]
        for r in rows
    ]  # fmt: skip
    first = page * PAGE_SIZE + 1
    if total is None:
        where = f"items {first}-{first + len(rows) - 1}" if rows else "no items"
    else:
        where = f"items {first}-{first + len(rows) - 1} of {total}" if rows else f"no items (of {total} matching)"
    return pd.DataFrame(table, columns=list(LIST_COLUMNS)), f"page {page + 1}: {where}"


def detail_parts(detail: ItemDetail) -> dict[str, Any]:
    """The opened item as plain strings and tables (never HTML)."""
    i = detail.interaction
    answer = ["reference answer: " + i.reference_answer] if i.reference_answer else []
    refs = [*answer, *i.reference_facts, *i.context]
    turns = split(i.messages)
    verdicts = pd.DataFrame(
        [
            [f"{v.judge_kind}:{v.judge_name}", v.judge_config_hash[:12], f"{v.rubric_name} {v.rubric_version}",
             _status(v), scores_text(v.scores), _overall(v), v.score_reading or "integer", v.reason,
             PromptTrim.model_validate(v.trimmed).note if v.trimmed else "",
             "current" if v.superseded_by is None else "superseded"]
            for v in detail.verdicts
        ],
        columns=["judge", "series", "rubric", "status", "scores", "overall", "score_reading", "reason", "fitted",
                 "state"],
    )  # fmt: skip
    labels = pd.DataFrame(
        [
            [lb.reviewer, lb.via, json.dumps(lb.scores, sort_keys=True), lb.comment, lb.submitted_at]
            for lb in detail.labels
        ]
        + (
            [[detail.adjudicated_by or "-", "adjudication", json.dumps(detail.final_scores), "", ""]]
            if detail.final_scores
            else []
        ),
        columns=["by", "via", "scores", "comment", "submitted"],
    )
    history = pd.DataFrame(
        [
            [o.release or "-", o.tier or "-", o.id, "-" if v is None else scores_text(v.scores), _short(o.answer)]
            for o, v in detail.history
        ],
        columns=["release", "tier", "interaction", "scores", "answer"],
    )
    header = (
        f"**{i.id}** · release {i.release or '-'} · tier {i.tier or '-'} · source `{i.source}` · item "
        f"`{i.source_id}` · link `{item_link(i.id)}`"
    )
    return {
        "header": header,
        "question": i.question,
        "earlier_box": earlier_update(turns.earlier),
        "conversation": as_text(turns.earlier),
        "tool_use": gr.update(value=as_text(turns.steps), visible=bool(turns.steps)),
        "references": "\n\n".join(refs),
        "answer": i.answer,
        "verdicts": verdicts,
        "labels": labels,
        "history": history,
    }


def _filter(*values: Any) -> ItemFilter:
    names = ("release", "tier", "dataset", "stratum", "criterion", "score_min", "score_max", "unscored_reason",
             "label_status", "judge_series", "text")  # fmt: skip
    given = {n: (v if v not in ("", None) else None) for n, v in zip(names, values, strict=True)}
    for n in ("score_min", "score_max"):
        if (value := given[n]) is not None:
            given[n] = int(value)
    try:
        return ItemFilter(**given)
    except ValidationError as exc:
        raise gr.Error(f"filter {exc.errors()[0]['loc'][0]}: {exc.errors()[0]['msg']}") from None


def add_items_tab(engine: Engine, *, label: str = "Items") -> gr.Tab:
    """Add the Items tab to the `gr.Blocks` being built. `tab.open_item` is (fn, outputs) for the app's load
    event: it opens the item a `?item=` link names."""

    def search(page: int, request: gr.Request, *values: Any) -> tuple[pd.DataFrame, str, int]:
        require_viewer(engine, request)
        frame, where = list_frame(engine, _filter(*values), max(0, int(page)))
        return frame, where, max(0, int(page))

    def open_item(interaction_id: str, request: gr.Request) -> list[Any]:
        require_viewer(engine, request)
        interaction_id = (interaction_id or "").strip()
        with session_scope(engine) as session:
            detail = item_detail(session, interaction_id) if interaction_id else None
        if detail is None:
            empty = pd.DataFrame()
            shown = "no item with that id" if interaction_id else "no item open"
            hidden = gr.update(value="", visible=False)
            return [shown, gr.update(visible=False), "", "", hidden, "", "", empty, empty, empty]
        parts = detail_parts(detail)
        return [parts[k] for k in ("header", "earlier_box", "conversation", "question", "tool_use", "references",
                                   "answer", "verdicts", "labels", "history")]  # fmt: skip

    with gr.Tab(label, id=TAB_ID) as tab:
        gr.Markdown(INTRO)
        with gr.Row():
            release = gr.Textbox(label="Release", scale=1)
            tier = gr.Textbox(label="Tier", scale=1)
            dataset = gr.Textbox(label="Golden set", scale=1)
            stratum = gr.Textbox(label="Traffic route", scale=1)
            series = gr.Textbox(label="Judge series (hash prefix)", scale=1)
        with gr.Row():
            criterion = gr.Textbox(label="Criterion", scale=1)
            score_min = gr.Number(label="Score at least", precision=0, scale=1)
            score_max = gr.Number(label="Score at most", precision=0, scale=1)
            unscored = gr.Textbox(label="Unscored reason", scale=1)
            status = gr.Dropdown(["", *[s.value for s in LabelStatus]], value="", label="Label status", scale=1)
        with gr.Row():
            text = gr.Textbox(label="Search question, answer, reason", scale=4)
            go = gr.Button("Search", variant="primary", scale=1, elem_id="jw-items-search")
            prev = gr.Button("◀ Previous", size="sm", scale=1)
            nxt = gr.Button("Next ▶", size="sm", scale=1)
        page = gr.State(0)
        where = gr.Markdown("Search to list items.", elem_id="jw-items-where")
        listing = gr.Dataframe(headers=list(LIST_COLUMNS), interactive=False, wrap=True, elem_id="jw-items-list")
        gr.Markdown("### Item")
        with gr.Row():
            item_id = gr.Textbox(label="Interaction id", scale=4, elem_id="jw-item-id")
            open_button = gr.Button("Open", scale=1, elem_id="jw-item-open")
        header = gr.Markdown("no item open", elem_id="jw-item-header")
        with gr.Accordion("Earlier in the conversation", open=False, visible=False) as earlier_box:
            conversation = gr.Textbox(show_label=False, interactive=False, lines=6, elem_id="jw-item-earlier")
        question = gr.Textbox(label="Question", interactive=False, lines=2, elem_id="jw-item-question")
        tool_use = gr.Textbox(label="Before answering, the assistant used tools", interactive=False, lines=4,
                              visible=False, elem_id="jw-item-tool-use")  # fmt: skip
        references = gr.Textbox(label="References", interactive=False, lines=4)
        answer = gr.Textbox(label="Answer", interactive=False, lines=3, elem_id="jw-item-answer")
        verdicts = gr.Dataframe(interactive=False, wrap=True, label="Verdicts", elem_id="jw-item-verdicts")
        labels = gr.Dataframe(interactive=False, wrap=True, label="Labels and adjudication")
        history = gr.Dataframe(interactive=False, wrap=True, label="This item in other releases and tiers")

        filters = [release, tier, dataset, stratum, criterion, score_min, score_max, unscored, status, series, text]
        detail_outputs = [header, earlier_box, conversation, question, tool_use, references, answer, verdicts]
        detail_outputs += [labels, history]

        def first_page(request: gr.Request, *values: Any) -> tuple[pd.DataFrame, str, int]:
            return search(0, request, *values)

        def step(delta: int) -> Any:
            def handler(current: int, request: gr.Request, *values: Any) -> tuple[pd.DataFrame, str, int]:
                return search(max(0, current + delta), request, *values)

            return handler

        go.click(first_page, inputs=filters, outputs=[listing, where, page], api_visibility="private")
        prev.click(step(-1), inputs=[page, *filters], outputs=[listing, where, page], api_visibility="private")
        nxt.click(step(1), inputs=[page, *filters], outputs=[listing, where, page], api_visibility="private")
        open_button.click(open_item, inputs=item_id, outputs=detail_outputs, api_visibility="private")

        def pick(frame: pd.DataFrame, evt: gr.SelectData, request: gr.Request) -> list[Any]:
            row = evt.index[0] if isinstance(evt.index, (list, tuple)) else evt.index
            chosen = str(frame.iloc[int(row)]["interaction"])
            return [chosen, *open_item(chosen, request)]

        listing.select(pick, inputs=listing, outputs=[item_id, *detail_outputs], api_visibility="private")

        def from_link(request: gr.Request) -> list[Any]:
            wanted = (dict(request.query_params) if request is not None else {}).get("item", "")
            if not wanted:
                return [gr.update(), gr.update(), *[gr.update()] * len(detail_outputs)]
            return [gr.update(selected=TAB_ID), wanted, *open_item(wanted, request)]

        tab.open_item = (from_link, [item_id, *detail_outputs])
    return tab
