"""The review app served on 127.0.0.1 (a free port, in this process) over a seeded SQLite store, and Debian's
chromium for pytest-playwright (never a playwright browser download; see UI_TESTING.md).

Without chromium the browser tests skip on a developer's machine but FAIL when `CI` is set: a skipped browser
test in CI would hide a missing part.
"""

from __future__ import annotations

import os
import shutil
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine

from judgewatch.contract.verdicts import JudgeIdentity, RubricIdentity, Verdict, VerdictStatus
from judgewatch.review.accounts import add_reviewer
from judgewatch.review.routing import RoutingPolicy, route_verdicts
from judgewatch.settings import Settings
from judgewatch.storage.db import make_engine, session_scope
from judgewatch.storage.interactions import Interaction, upsert_interactions
from judgewatch.storage.migrations import migrate
from judgewatch.storage.verdicts import upsert_verdicts
from judgewatch.testing.clocks import ManualClock
from review_ui.app import serve
from review_ui.items_page import add_items_tab
from review_ui.tiers_page import add_tiers_tab

PASSWORD = "a long test password"
# Would set window.__pwned if any of it ran.
XSS = (
    'Sure. <script>window.__pwned = "script"</script>'
    '<img src="x" onerror="window.__pwned = \'img\'">'
    "<a href=\"javascript:window.__pwned='link'\">click</a> **still markdown**"
)

# Raw HTML and Markdown images that must neither render as elements nor make the browser fetch anything.
BEACON_HOST = "beacon.invalid"
RAW_HTML = (
    "Here you go. "
    '<form action="http://beacon.invalid/steal" method="post">Session expired, log in again: '
    '<input type="password" name="password"><button>Log in</button></form>'
    '<img src="http://beacon.invalid/img.png" width="1" height="1">'
    '<svg width="10" height="10"><image href="http://beacon.invalid/svg.png"/><circle r="4"/></svg>'
    '<iframe src="http://beacon.invalid/frame"></iframe>'
    " ![pixel](http://beacon.invalid/md.png) **still markdown**"
)


def chromium_required() -> bool:
    """True in CI (any non-empty `CI` but "false"/"0", as CI services set it): a missing browser is a failure."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args: dict) -> dict:
    chromium = shutil.which("chromium")
    if chromium is None:
        missing = "Debian's chromium is not installed (apt-get install -y chromium; `make test` does it)"
        if chromium_required():
            pytest.fail(f"{missing}, and CI is set: browser tests may not be skipped in CI", pytrace=False)
        pytest.skip(missing)
    return {
        **browser_type_launch_args,
        "executable_path": chromium,
        "headless": True,
        "args": [
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
        ],
    }


@dataclass
class ServedApp:
    url: str
    engine: Engine


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def seed(engine: Engine, answer: str, messages: list[dict[str, Any]] | None = None) -> None:
    """One interaction (tier "quantized") with references, its judge verdict, routed to review; `messages`: the
    conversation it ended (its last user turn must be the question)."""
    judge = JudgeIdentity(kind="fake", name="fake-judge", config_hash="cfg")
    rubric = RubricIdentity(name="answer_quality", version="1.0.0", hash="rh")
    interaction = Interaction(
        id="i1",
        source="test",
        source_id="1",
        question="What is the capital of France?",
        answer=answer,
        messages=messages,
        reference_answer="Paris",
        reference_facts=["Paris is the capital of France."],
        tier="quantized",
        language="en",
    )
    verdict = Verdict(
        item_id="1",
        status=VerdictStatus.scored,
        scores={"relevance": 5, "faithfulness": 2, "completeness": 4},
        overall=3.67,
        reason="mostly right",
        judge=judge,
        rubric=rubric,
    )
    with session_scope(engine) as session:
        upsert_interactions(session=session, interactions=[interaction])
        upsert_verdicts(session=session, run_id=None, verdicts=[("i1", verdict)])
        route_verdicts(session=session, policy=RoutingPolicy(review_share=1.0))
        add_reviewer(session=session, name="alice", password=PASSWORD)


@contextmanager
def serving(engine: Engine, data_dir: Path, **options: Any) -> Iterator[ServedApp]:
    """The app over `engine` (`options` passed to `serve`) on a free loopback port until the block exits; the engine
    is disposed then."""
    port = _free_port()
    app = serve(engine, Settings(data_dir=data_dir), port=port, block=False, **options)
    try:
        yield ServedApp(url=f"http://127.0.0.1:{port}/", engine=engine)
    finally:
        app.close()
        engine.dispose()


def store_with_accounts(path: Path, **roles: str) -> Engine:
    """A migrated SQLite store at `path` with an account per name, in its role, each with PASSWORD."""
    engine = make_engine(f"sqlite:///{path}")
    migrate(engine)
    with session_scope(engine) as session:
        for name, role in roles.items():
            add_reviewer(session=session, name=name, password=PASSWORD, role=role)
    return engine


@pytest.fixture
def guard_clock() -> ManualClock:
    """The session guard's clock: a test advances it past the account recheck interval instead of waiting."""
    return ManualClock()


def _serve(
    tmp_path: Path, answer: str, messages: list[dict[str, Any]] | None = None, tabs: list[Any] | None = None
) -> Iterator[ServedApp]:
    engine = make_engine(f"sqlite:///{tmp_path / 'review.db'}")
    migrate(engine)
    seed(engine, answer, messages)
    with serving(engine, tmp_path, extra_tabs=tabs or []) as app:
        yield app


@pytest.fixture
def served(tmp_path: Path) -> Iterator[ServedApp]:
    yield from _serve(tmp_path, "Paris is the capital of France. **Definitely.**")


@pytest.fixture
def served_xss(tmp_path: Path) -> Iterator[ServedApp]:
    yield from _serve(tmp_path, XSS)


@pytest.fixture
def served_raw_html(tmp_path: Path) -> Iterator[ServedApp]:
    yield from _serve(tmp_path, RAW_HTML)


# A conversation ending in the seeded question, with a tool call between it and the answer; its earliest turn
# carries HTML that must show as text.
CONVERSATION = [
    {"role": "system", "content": "You are a geography tutor. <b>Never</b> guess."},
    {"role": "user", "content": "I am revising European capitals for an exam."},
    {"role": "assistant", "content": "Happy to help. Which country first?"},
    {"role": "user", "content": "What is the capital of France?"},
    {"role": "assistant", "content": "", "tool_calls": [{"id": "call_7", "name": "atlas_lookup",
                                                          "arguments": '{"country": "France"}'}]},
    {"role": "tool", "content": '{"capital": "Paris"}', "tool_call_id": "call_7"},
]  # fmt: skip


@pytest.fixture
def served_conversation(tmp_path: Path) -> Iterator[ServedApp]:
    """A conversation routed to review, with an owner account (`olga`) who may open the Items page."""
    items = [add_items_tab]
    for app in _serve(tmp_path, "Paris, as the atlas says.", CONVERSATION, tabs=items):
        with session_scope(app.engine) as session:
            add_reviewer(session=session, name="olga", password=PASSWORD, role="owner")
        yield app


@pytest.fixture
def credentials() -> tuple[str, str]:
    return "alice", PASSWORD


@contextmanager
def tiers_tab_open(page: Any, engine: Engine, data_dir: Path, name: str, password: str) -> Iterator[None]:
    """Serve the app with the Tiers tab on a free port, log `name` in through the browser and open the tab."""
    with serving(engine, data_dir, extra_tabs=[add_tiers_tab]) as app:
        page.goto(app.url)
        page.get_by_label("username").fill(name)
        page.get_by_label("password").fill(password)
        page.get_by_role("button", name="Login").click()
        page.get_by_role("tab", name="Tiers").click()
        yield
