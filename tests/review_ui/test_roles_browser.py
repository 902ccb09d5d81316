"""In a real browser: each role sees its pages, and a disabled account's open page is logged out."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect
from sqlalchemy import Engine

from judgewatch.review.accounts import set_active
from judgewatch.storage.db import session_scope
from judgewatch.testing.clocks import ManualClock

from .conftest import PASSWORD, serving, store_with_accounts

pytestmark = pytest.mark.browser
TIMEOUT = 60_000
AGGREGATE_TABS = ("Adjudication", "Items", "Compare", "Judges", "Tiers", "Calibration")


@pytest.fixture
def full_app(tmp_path: Path, guard_clock: ManualClock) -> Iterator[tuple[str, Engine]]:
    """The app with its default pages, a reviewer, an adjudicator and an owner."""
    engine = store_with_accounts(tmp_path / "roles.db", rita="reviewer", adam="adjudicator", olga="owner")
    with serving(engine, tmp_path, clock=guard_clock) as app:
        yield app.url, engine


def log_in(page: Page, url: str, name: str) -> None:
    page.goto(url)
    page.get_by_label("username").fill(name)
    page.get_by_label("password").fill(PASSWORD)
    page.get_by_role("button", name="Login").click()
    expect(page.get_by_role("tab", name="Queue")).to_be_visible(timeout=TIMEOUT)


def test_a_reviewer_sees_only_the_queue(page: Page, full_app: tuple[str, Engine]) -> None:
    log_in(page, full_app[0], "rita")
    for name in AGGREGATE_TABS:
        expect(page.get_by_role("tab", name=name)).to_have_count(0, timeout=TIMEOUT)


def test_an_owner_sees_every_page(page: Page, full_app: tuple[str, Engine]) -> None:
    log_in(page, full_app[0], "olga")
    for name in AGGREGATE_TABS:
        expect(page.get_by_role("tab", name=name)).to_be_visible(timeout=TIMEOUT)


def test_a_disabled_reviewers_open_page_is_logged_out(
    page: Page, full_app: tuple[str, Engine], guard_clock: ManualClock
) -> None:
    url, engine = full_app
    log_in(page, url, "rita")
    with session_scope(engine) as session:
        set_active(session=session, name="rita", active=False)
    guard_clock.advance(2.5)  # the session guard re-reads an account after its recheck interval (2 s)
    page.reload()
    expect(page.get_by_label("username")).to_be_visible(timeout=TIMEOUT)
    expect(page.get_by_role("tab", name="Queue")).to_have_count(0)
