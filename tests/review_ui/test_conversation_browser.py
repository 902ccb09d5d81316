"""A conversation with a tool call, in a real browser: the reviewer sees the last exchange open, expands the
earlier turns and so sees the conversation whole; the Items page shows it whole too. HTML in a turn is text."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

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
