"""A conversation with a tool call, in a real browser: the reviewer sees the last exchange open, expands the
earlier turns and so sees the conversation whole; the Items page shows it whole too. HTML in a turn is text. And
end to end: a conversation in a `judge --input` file is judged, stored with its turns, routed and shown whole."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Page, expect
from sqlmodel import select
from typer.testing import CliRunner

from judgewatch.cli import get_app
from judgewatch.review.accounts import add_reviewer
from judgewatch.review.routing import RoutingPolicy, route_verdicts
from judgewatch.settings import Settings
from judgewatch.storage.db import make_engine, session_scope
from judgewatch.storage.interactions import Interaction
from judgewatch.testing.conversations import weather_row
from judgewatch.testing.processes import free_port
from judgewatch.testing.simulator import run_simulator_in_thread
from review_ui.app import serve

from .conftest import PASSWORD
from .test_review_browser import TIMEOUT, log_in, take_next_item

pytestmark = pytest.mark.browser


def test_a_reviewer_sees_the_last_exchange_and_expands_the_earlier_turns(
    page: Page, served_conversation, credentials
) -> None:
    log_in(page, served_conversation.url, credentials)
    take_next_item(page)
    question = page.locator("#jw-question")
    expect(question).to_contain_text("Before answering, the assistant used tools")
    expect(question).to_contain_text('calls atlas_lookup with {"country": "France"}')
    expect(question).to_contain_text("Tool result (atlas_lookup)")
    expect(question).to_contain_text('{"capital": "Paris"}')
    expect(page.locator("#jw-answer")).to_contain_text("Paris, as the atlas says.")

    earlier = page.locator("#jw-earlier")
    expect(earlier).to_contain_text("Earlier in the conversation (3 turns", timeout=TIMEOUT)
    turns = page.locator("#jw-earlier-turns")
    expect(turns).to_be_hidden()  # collapsed until the reviewer asks
    earlier.get_by_text("Earlier in the conversation").click()
    expect(turns).to_be_visible(timeout=TIMEOUT)
    for text in ("System prompt", "I am revising European capitals", "Which country first?"):
        expect(turns).to_contain_text(text)
    expect(turns).to_contain_text("<b>Never</b> guess.")  # HTML shown as text
    assert turns.locator("b").count() == 0


def test_the_items_page_shows_the_conversation_whole(page: Page, served_conversation) -> None:
    page.goto(served_conversation.url + "?item=i1")
    page.get_by_label("username").fill("olga")
    page.get_by_label("password").fill(PASSWORD)
    page.get_by_role("button", name="Login").click()
    page.get_by_role("tab", name="Items").click()
    page.locator("#jw-item-id textarea, #jw-item-id input").first.fill("i1")
    page.locator("#jw-item-open").click()
    expect(page.locator("#jw-item-question textarea")).to_have_value("What is the capital of France?", timeout=TIMEOUT)
    tool_use = page.locator("#jw-item-tool-use textarea")
    expect(tool_use).to_have_value(
        '[Assistant]\ncalls atlas_lookup with {"country": "France"}\n\n'
        '[Tool result (atlas_lookup)]\n{"capital": "Paris"}'
    )
    page.get_by_text("Earlier in the conversation (3 turns").click()
    earlier = page.locator("#jw-item-earlier textarea")
    expect(earlier).to_be_visible(timeout=TIMEOUT)
    expect(earlier).to_have_value(
        "[System prompt]\nYou are a geography tutor. <b>Never</b> guess.\n\n"
        "[User]\nI am revising European capitals for an exam.\n\n[Assistant]\nHappy to help. Which country first?"
    )


def test_a_conversation_in_a_judge_input_file_is_judged_stored_routed_and_shown_whole(
    page: Page, tmp_path: Path
) -> None:
    path = tmp_path / "conversations.jsonl"
    path.write_text(json.dumps(weather_row("trip-1"), ensure_ascii=False) + "\n", encoding="utf-8")
    database = f"sqlite:///{tmp_path / 'store.db'}"
    with run_simulator_in_thread(latency_ms=1) as sim, ThreadPoolExecutor(1) as thread:
        # In a thread of its own: playwright's event loop runs in this one, and the command starts its own.
        result = thread.submit(CliRunner().invoke, get_app(), [
            "judge", "--rubric", "answer_quality", "--input", str(path), "--output", str(tmp_path / "v.jsonl"),
            "--judge", sim.base_url, "--model", "sim-judge", "--database-url", database,
        ]).result()  # fmt: skip
        assert result.exit_code == 0, result.output
        received = httpx.get(f"{sim.root_url}/sim/requests", timeout=10).json()
    prompt = received[-1]["messages"][-1]["content"]  # what the judge read: the whole conversation
    for text in ("I am flying to Paris on Friday.", "(calls the tool get_weather with", '"temp_c": 18'):
        assert text in prompt
    assert json.loads((tmp_path / "v.jsonl").read_text().splitlines()[0])["status"] == "scored"

    engine = make_engine(database)
    try:
        with session_scope(engine) as session:
            stored = session.exec(select(Interaction)).one()
            assert [m["role"] for m in stored.messages or []] == ["system", "user", "assistant", "user",
                                                                  "assistant", "tool"]  # fmt: skip
            route_verdicts(session=session, policy=RoutingPolicy(review_share=1.0))
            add_reviewer(session=session, name="rita", password=PASSWORD)
        port = free_port()
        app = serve(engine, Settings(data_dir=tmp_path), port=port, block=False, extra_tabs=[])
        try:
            page.goto(f"http://127.0.0.1:{port}/")
            page.get_by_label("username").fill("rita")
            page.get_by_label("password").fill(PASSWORD)
            page.get_by_role("button", name="Login").click()
            expect(page.locator("#jw-next")).to_be_visible(timeout=TIMEOUT)
            page.locator("#jw-next").click()
            question = page.locator("#jw-question")
            expect(question).to_contain_text("What is the weather in Paris right now?", timeout=TIMEOUT)
            expect(question).to_contain_text('calls get_weather with {"city": "Paris"}')
            expect(page.locator("#jw-answer")).to_contain_text("It is 18 °C in Paris right now.")
            page.locator("#jw-earlier").get_by_text("Earlier in the conversation").click()
            turns = page.locator("#jw-earlier-turns")
            expect(turns).to_contain_text("I am flying to Paris on Friday.", timeout=TIMEOUT)
            expect(turns).to_contain_text("Have a good trip!")
        finally:
            app.close()
    finally:
        engine.dispose()
