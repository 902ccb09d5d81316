"""The review app in a real browser (Debian's chromium): log in, label with the keyboard only, see the judge."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect
from sqlalchemy import select

from judgewatch.storage.db import session_scope
from judgewatch.storage.review import ReviewLabel

from .conftest import BEACON_HOST

pytestmark = pytest.mark.browser
TIMEOUT = 30_000  # ms; a shared 2-core machine can be slow, nothing here is a timing assertion


def log_in(page: Page, url: str, credentials: tuple[str, str]) -> None:
    page.goto(url)
    page.get_by_label("username").fill(credentials[0])
    page.get_by_label("password").fill(credentials[1])
    page.get_by_role("button", name="Login").click()
    expect(page.locator("#jw-next")).to_be_visible(timeout=TIMEOUT)
    page.wait_for_function("window.__jwKeys === true", timeout=TIMEOUT)  # the shortcuts are installed


def take_next_item(page: Page) -> None:
    page.keyboard.press("n")
    expect(page.locator("#jw-question")).to_contain_text("capital of France", timeout=TIMEOUT)
    expect(page.locator("#jw-crit-0")).to_have_class(re.compile("jw-current"), timeout=TIMEOUT)
    page.wait_for_timeout(500)  # let Gradio finish applying the new item before typing, as a person would


def test_the_queue_is_not_shown_before_login(page: Page, served) -> None:
    page.goto(served.url)
    expect(page.get_by_role("button", name="Login")).to_be_visible(timeout=TIMEOUT)
    assert page.locator("#jw-next").count() == 0
    assert "capital of France" not in page.content()


def test_label_an_item_with_the_keyboard_only_then_see_the_judge(page: Page, served, credentials) -> None:
    log_in(page, served.url, credentials)
    take_next_item(page)
    body = page.locator("body")
    expect(page.locator("#jw-answer")).to_contain_text("Definitely.")
    expect(page.locator("#jw-references")).to_contain_text("Paris is the capital of France.")
    expect(page.locator("#jw-crit-0")).to_contain_text("Directly and fully addresses")  # the anchors are shown
    for text in ("quantized", "fake-judge", "mostly right"):  # blind until submitted
        expect(body).not_to_contain_text(text)

    for index, key in enumerate("453"):
        page.keyboard.press(key)
        radios = page.locator(f"#jw-crit-{index} input[type=radio]")
        expect(radios.nth(int(key) - 1)).to_be_checked(timeout=TIMEOUT)
    page.keyboard.press("Enter")

    reveal = page.locator("#jw-reveal")
    expect(reveal).to_contain_text("Judge's verdict", timeout=TIMEOUT)
    for text in ("quantized", "fake-judge", "mostly right"):
        expect(reveal).to_contain_text(text)
    expect(reveal.locator("tr", has_text="faithfulness")).to_contain_text("5")
    expect(page.locator("#jw-progress")).to_contain_text("done today: 1")
    with session_scope(served.engine) as session:
        (label,) = session.scalars(select(ReviewLabel)).all()
    assert (label.reviewer, label.via, label.rubric_version_shown) == ("alice", "ui", "1.1.0")
    assert label.scores == {"relevance": 4, "faithfulness": 5, "completeness": 3}
    assert label.duration_ms > 0


def test_an_answer_carrying_scripts_runs_nothing(page: Page, served_xss, credentials) -> None:
    log_in(page, served_xss.url, credentials)
    take_next_item(page)
    answer = page.locator("#jw-answer")
    expect(answer.locator("strong")).to_have_text("still markdown")  # markdown still renders
    page.wait_for_timeout(500)  # give an onerror handler time to fire, were it there
    assert page.evaluate("window.__pwned") is None
    assert answer.locator("script").count() == 0
    assert answer.locator("[onerror]").count() == 0
    assert answer.locator("a[href^='javascript']").count() == 0


def test_raw_html_in_an_answer_shows_as_text_and_fetches_nothing(page: Page, served_raw_html, credentials) -> None:
    requested: list[str] = []
    page.on("request", lambda request: requested.append(request.url))
    log_in(page, served_raw_html.url, credentials)
    take_next_item(page)
    answer = page.locator("#jw-answer")
    expect(answer.locator("strong")).to_have_text("still markdown")  # markdown still renders
    expect(answer).to_contain_text('<input type="password" name="password">')  # shown as text
    page.wait_for_timeout(1000)  # give the browser time to fetch an image or frame, were one there
    for selector in ("form", "input", "img", "svg", "iframe", "image"):
        assert answer.locator(selector).count() == 0, selector
    assert page.locator("input[type=password]").count() == 0  # not in the answer, not anywhere on the page
    assert [url for url in requested if BEACON_HOST in url] == []


def test_s_skips_with_a_typed_reason(page: Page, served, credentials) -> None:
    log_in(page, served.url, credentials)
    take_next_item(page)
    page.keyboard.press("s")
    expect(page.locator("#jw-skip-reason textarea, #jw-skip-reason input")).to_be_focused()
    page.keyboard.type("outside my expertise")
    page.keyboard.press("Enter")
    expect(page.locator("#jw-message")).to_contain_text("Skipped.", timeout=TIMEOUT)
    expect(page.locator("#jw-message")).to_contain_text("Nothing left in your queue")
    with session_scope(served.engine) as session:
        (label,) = session.scalars(select(ReviewLabel)).all()
    assert (label.reviewer, label.skipped_reason, label.scores) == ("alice", "outside my expertise", {})
