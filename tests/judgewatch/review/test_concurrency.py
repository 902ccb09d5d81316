"""Twenty reviewers at once, on SQLite and PostgreSQL: no double lease, no lost label, no foreign or late submit."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from datetime import timedelta
from itertools import pairwise

from sqlalchemy import Engine, select

from judgewatch.review.queue import ReviewQueue
from judgewatch.review.views import LeaseError
from judgewatch.storage.db import session_scope
from judgewatch.storage.review import ReviewItem, ReviewLabel
from judgewatch.storage.types import utcnow
from judgewatch.testing.threads import run_together

REVIEWERS = 20
FULL = {"relevance": 3, "faithfulness": 3, "completeness": 3}


def _labels_and_items(engine: Engine) -> tuple[list[ReviewLabel], list[ReviewItem]]:
    with session_scope(engine) as session:
        return list(session.scalars(select(ReviewLabel))), list(session.scalars(select(ReviewItem)))


def test_twenty_reviewers_pulling_and_submitting_at_once(engine: Engine, seed, reviewers) -> None:
    seed(40, double=0.5)
    names = reviewers(*(f"r{i:02d}" for i in range(REVIEWERS)))
    queue = ReviewQueue(engine, lease_seconds=600)
    holding: dict[str, str] = {}  # item id -> reviewer holding it, as the reviewers themselves see it
    guard = threading.Lock()
    accepted: list[tuple[str, str]] = []
    double_leases: list[str] = []
    stolen: list[str] = []

    def every_item_labelled() -> bool:
        _, items = _labels_and_items(engine)
        return all(i.labels_done >= i.labels_needed for i in items)

    def reviewer(name: str) -> Callable[[], None]:
        rng = random.Random(name)

        def work() -> None:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                item = queue.lease_next(name)
                if item is None:
                    # Nothing free for this reviewer now. An item another reviewer holds may still come back
                    # needing a second label this one can give: stop only when every item has its labels (on a
                    # busy machine the last ones would otherwise go unlabelled, and the test flake).
                    if every_item_labelled():
                        return
                    time.sleep(0.05)
                    continue
                with guard:
                    if item.item_id in holding:
                        double_leases.append(item.item_id)
                    holding[item.item_id] = name
                    others = [i for i, who in holding.items() if who != name]
                if others:  # try to submit someone else's item: must always be refused
                    try:
                        queue.submit(name, rng.choice(others), FULL, rubric_version_shown="1.0.0")
                        stolen.append(name)
                    except LeaseError:
                        pass
                scores = {c.name: rng.randint(1, 5) for c in item.scored_criteria}
                with guard:  # forget the hold before the lease ends, so a fair re-lease is never flagged
                    del holding[item.item_id]
                queue.submit(name, item.item_id, scores, rubric_version_shown=item.rubric_version)
                with guard:
                    accepted.append((item.item_id, name))

        return work

    errors = run_together([reviewer(n) for n in names])
    assert errors == [] and double_leases == [] and stolen == []
    labels, items = _labels_and_items(engine)
    assert sorted((lb.review_item_id, lb.reviewer) for lb in labels) == sorted(accepted)  # none lost, none extra
    assert sum(i.labels_needed for i in items) == len(labels) > 40
    assert all(i.state in ("done", "adjudication") and i.labels_done == i.labels_needed for i in items)
    by_item: dict[str, list[ReviewLabel]] = {}
    for label in labels:
        by_item.setdefault(label.review_item_id, []).append(label)
    for item_labels in by_item.values():  # the leases of one item never overlapped in time
        spans = sorted((lb.started_at, lb.submitted_at) for lb in item_labels)
        assert all(end <= next_start for (_, end), (next_start, _) in pairwise(spans))


def test_late_submits_after_expiry_are_refused_while_others_take_over(engine: Engine, seed, reviewers) -> None:
    seed(REVIEWERS)
    first = reviewers(*(f"a{i:02d}" for i in range(REVIEWERS)))
    second = reviewers(*(f"b{i:02d}" for i in range(REVIEWERS)))
    now_queue = ReviewQueue(engine, lease_seconds=600)
    later_queue = ReviewQueue(engine, lease_seconds=600, clock=lambda: utcnow() + timedelta(seconds=700))
    leased = {name: now_queue.lease_next(name) for name in first}
    assert len({item.item_id for item in leased.values() if item}) == REVIEWERS
    refused: list[str] = []
    guard = threading.Lock()

    def late(name: str) -> Callable[[], None]:
        def work() -> None:
            item = leased[name]
            assert item is not None
            try:
                later_queue.submit(name, item.item_id, FULL, rubric_version_shown="1.0.0")
            except LeaseError:
                with guard:
                    refused.append(name)

        return work

    def takeover(name: str) -> Callable[[], None]:
        def work() -> None:
            item = later_queue.lease_next(name)
            assert item is not None
            later_queue.submit(name, item.item_id, FULL, rubric_version_shown="1.0.0")

        return work

    errors = run_together([late(n) for n in first] + [takeover(n) for n in second])
    assert errors == [] and sorted(refused) == sorted(first)
    labels, items = _labels_and_items(engine)
    assert sorted(lb.reviewer for lb in labels) == sorted(second)
    assert all(i.state == "done" for i in items)
