"""Against the served app: login lockout per account and per address, disabled accounts lose their sessions,
uploads are refused, and each page's handlers check the caller's role."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import gradio as gr
import httpx
import pytest
from sqlalchemy import Engine

from judgewatch.review.accounts import set_active
from judgewatch.review.login_throttle import LoginThrottle, ThrottlePolicy
from judgewatch.storage.db import session_scope
from judgewatch.testing.clocks import ManualClock
from review_ui.judges_page import add_judges_tab

from .conftest import PASSWORD, serving, store_with_accounts


@pytest.fixture
def app_url(tmp_path: Path, guard_clock: ManualClock) -> Iterator[tuple[str, Engine]]:
    engine = store_with_accounts(tmp_path / "accounts.db", alice="reviewer", olga="owner")
    throttle = LoginThrottle(ThrottlePolicy(account_failures=5, address_failures=12, lockout_s=600))
    with serving(engine, tmp_path, extra_tabs=[], throttle=throttle, clock=guard_clock) as app:
        yield app.url, engine


def _login(client: httpx.Client, name: str, password: str) -> int:
    return client.post("/login", data={"username": name, "password": password}).status_code


def test_wrong_passwords_lock_the_account_even_for_the_right_one(app_url: tuple[str, Engine]) -> None:
    url, _ = app_url
    with httpx.Client(base_url=url, timeout=30) as client:
        assert all(_login(client, "alice", f"wrong {i}") >= 400 for i in range(5))
        assert _login(client, "alice", PASSWORD) >= 400  # locked: the right password no longer works
        assert client.get("/config").status_code == 401
        assert _login(client, "olga", PASSWORD) == 200  # another account from the same address still may


def test_an_address_spraying_names_gets_429(app_url: tuple[str, Engine]) -> None:
    url, _ = app_url
    with httpx.Client(base_url=url, timeout=30) as client:
        codes = [_login(client, f"user{i}", "wrong password") for i in range(13)]
        assert codes[-1] == 429 and all(400 <= c < 500 for c in codes)
        answer = client.post("/login", data={"username": "olga", "password": PASSWORD})
        assert answer.status_code == 429 and "Too many failed logins" in answer.text


def test_disabling_an_account_ends_its_open_session(app_url: tuple[str, Engine], guard_clock: ManualClock) -> None:
    url, engine = app_url
    with httpx.Client(base_url=url, timeout=30) as client:
        assert _login(client, "alice", PASSWORD) == 200
        assert client.get("/config").status_code == 200
        with session_scope(engine) as session:
            set_active(session=session, name="alice", active=False)
        guard_clock.advance(2.5)  # the guard re-reads an account's state after its recheck interval (2 s)
        assert client.get("/config").status_code == 401
        with session_scope(engine) as session:
            set_active(session=session, name="alice", active=True)
        guard_clock.advance(2.5)
        assert client.get("/config").status_code == 401  # the session stays ended: a new login is needed


def test_uploads_are_refused_even_for_a_logged_in_reviewer(app_url: tuple[str, Engine]) -> None:
    url, _ = app_url
    with httpx.Client(base_url=url, timeout=30) as client:
        assert _login(client, "alice", PASSWORD) == 200
        answer = client.post("/gradio_api/upload", files={"files": ("big.bin", b"x" * 100_000)})
        assert answer.status_code == 413


def test_the_judges_page_handler_checks_the_callers_role(tmp_path: Path) -> None:
    engine = store_with_accounts(tmp_path / "judges.db", rita="reviewer", olga="owner", gone="owner")
    with session_scope(engine) as session:
        set_active(session=session, name="gone", active=False)
    with gr.Blocks() as blocks:
        add_judges_tab(engine)
    (load,) = {dep.fn for dep in blocks.fns.values() if getattr(dep.fn, "__name__", "") == "load"}
    frame: Any = load(SimpleNamespace(username="olga"))
    assert frame.columns[0] == "judge"
    for who, message in (("rita", "for adjudicators and owners"), ("gone", "not active")):
        with pytest.raises(gr.Error, match=message):
            load(SimpleNamespace(username=who))
    engine.dispose()
