"""Review-test fixtures: stored verdicts, review items routed from them, reviewer accounts, a settable clock."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import Engine

from judgewatch.contract.items import JudgeItem
from judgewatch.contract.verdicts import JudgeIdentity, RubricIdentity, UnscoredReason, Verdict, VerdictStatus
from judgewatch.review.accounts import hash_password
from judgewatch.review.queue import ReviewQueue
from judgewatch.review.routing import RoutingPolicy, route_verdicts
from judgewatch.storage.db import session_scope
from judgewatch.storage.review import Reviewer
from judgewatch.storage.verdicts import store_judged

JUDGE = JudgeIdentity(kind="fake", name="fake-judge", config_hash="cfg1")
RUBRIC = RubricIdentity(name="answer_quality", version="1.0.0", hash="rubrichash")
PASSWORD = "correct horse battery"


def judged(
    n: int, *, prefix: str = "q", unscored_every: int = 0, overall: float = 4.0
) -> list[tuple[JudgeItem, Verdict]]:
    pairs = []
    for i in range(n):
        item = JudgeItem(
            id=f"{prefix}{i}",
            question=f"What is {i} + {i}?",
            answer=f"It is {2 * i}.",
            reference_answer=str(2 * i),
            reference_facts=[f"{i} + {i} = {2 * i}"],
            language="en",
        )
        if unscored_every and i % unscored_every == 0:
            verdict = Verdict.unscored(item.id, UnscoredReason.timeout, judge=JUDGE, rubric=RUBRIC)
        else:
            verdict = Verdict(
                item_id=item.id,
                status=VerdictStatus.scored,
                scores={"relevance": 5, "faithfulness": 4, "completeness": 3},
                overall=overall,
                reason="fine",
                judge=JUDGE,
                rubric=RUBRIC,
            )
        pairs.append((item, verdict))
    return pairs


def store(engine: Engine, pairs: list[tuple[JudgeItem, Verdict]], *, source: str = "test") -> None:
    with session_scope(engine) as session:
        store_judged(session=session, source=source, run_id=None, judged=pairs)


def route_all(engine: Engine, *, double_label_share: float = 0.0) -> int:
    """Route every stored verdict (share 1.0); returns the number of review items created."""
    policy = RoutingPolicy(review_share=1.0, double_label_share=double_label_share)
    with session_scope(engine) as session:
        return route_verdicts(session=session, policy=policy).created


@pytest.fixture
def store_judged_items(engine: Engine) -> Callable[..., None]:
    """store_judged_items(n, **judged_kwargs): store n judged items and their verdicts, routing none."""

    def make(n: int, **kwargs: object) -> None:
        store(engine, judged(n, **kwargs))  # type: ignore[arg-type]

    return make


@pytest.fixture
def seed(engine: Engine) -> Callable[..., int]:
    """seed(n, double=0.0, **judged_kwargs): store n judged items and route all of them; returns items made."""

    def make(n: int, *, double: float = 0.0, **kwargs: object) -> int:
        store(engine, judged(n, **kwargs))  # type: ignore[arg-type]
        return route_all(engine, double_label_share=double)

    return make


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture(scope="session")
def password_hash() -> str:
    return hash_password(PASSWORD)  # scrypt is slow on purpose: hash once, share between accounts


@pytest.fixture
def reviewers(engine: Engine, password_hash: str) -> Callable[..., list[str]]:
    """reviewers("alice", "bob", adjudicator=False): active accounts with PASSWORD; returns the names."""

    def make(*names: str, adjudicator: bool = False) -> list[str]:
        with session_scope(engine) as session:
            for name in names:
                session.add(Reviewer(name=name, password_hash=password_hash, can_adjudicate=adjudicator))
        return list(names)

    return make


@pytest.fixture
def queue(engine: Engine, clock: Clock) -> ReviewQueue:
    return ReviewQueue(engine, lease_seconds=600, clock=clock)
