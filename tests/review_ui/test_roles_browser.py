"""In a real browser: each role sees its pages, and a disabled account's open page is logged out."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect
from sqlalchemy import Engine

from judgewatch.review.accounts import add_reviewer, set_active
from judgewatch.settings import Settings
from judgewatch.storage.db import make_engine, session_scope
from judgewatch.storage.migrations import migrate
from judgewatch.testing.clocks import ManualClock
from review_ui.app import serve

pytestmark = pytest.mark.browser
PASSWORD = "a long test password"
TIMEOUT = 60_000
AGGREGATE_TABS = ("Adjudication", "Items", "Compare", "Judges", "Tiers", "Calibration")


@pytest.fixture
def guard_clock() -> ManualClock:
    """The session guard's clock: a test advances it past the account recheck interval instead of waiting."""
    return ManualClock()


@pytest.fixture
def full_app(tmp_path: Path, guard_clock: ManualClock) -> Iterator[tuple[str, Engine]]:
    """The app with its default pages, a reviewer, an adjudicator and an owner."""
    engine = make_engine(f"sqlite:///{tmp_path / 'roles.db'}")
    migrate(engine)
    with session_scope(engine) as session:
        for name, role in (("rita", "reviewer"), ("adam", "adjudicator"), ("olga", "owner")):
            add_reviewer(session=session, name=name, password=PASSWORD, role=role)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    app = serve(engine, Settings(data_dir=tmp_path), port=port, block=False, clock=guard_clock)
    try:
        yield f"http://127.0.0.1:{port}/", engine
    finally:
        app.close()
        engine.dispose()


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
