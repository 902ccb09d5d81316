"""Adjudication: experts settle disagreements and flags, blind to the judge, never their own items."""

from __future__ import annotations

import pytest

from judgewatch.review.adjudication import Adjudication
from judgewatch.review.labels import disagreement
from judgewatch.review.queue import ReviewQueue
from judgewatch.review.views import LeaseError, NotAllowed
from judgewatch.storage.db import session_scope
from judgewatch.storage.review import ReviewItem

FULL = {"relevance": 4, "faithfulness": 4, "completeness": 4}


def test_disagreement_is_more_than_one_point_on_some_criterion() -> None:
    assert disagreement([{"a": 3, "b": 1}, {"a": 4, "b": 3}]) == {"b": [1, 3]}
    assert disagreement([{"a": 3}, {"a": 4}]) == {}
    assert disagreement([{"a": 1}, {"a": 2}, {"a": 3}]) == {"a": [1, 2, 3]}


def _split_item(queue: ReviewQueue, alice: str, bob: str) -> str:
    item = queue.lease_next(alice)
    assert item is not None
    queue.submit(alice, item.item_id, FULL, rubric_version_shown="1.0.0", comment="looks right")
    assert queue.lease_next(bob) is not None
    queue.submit(bob, item.item_id, {**FULL, "completeness": 1}, rubric_version_shown="1.0.0")
    return item.item_id


def test_an_expert_settles_a_disagreement_seeing_both_labels(queue: ReviewQueue, seed, reviewers, engine) -> None:
    seed(1, double=1.0)
    alice, bob = reviewers("alice", "bob")
    (expert,) = reviewers("expert", adjudicator=True)
    item_id = _split_item(queue, alice, bob)
    adjudication = Adjudication(queue)
    assert adjudication.pending() == 1
    case = adjudication.next_case(expert)
    assert case is not None and case.item.item_id == item_id and case.state == "adjudication"
    assert [lb.reviewer for lb in case.labels] == [alice, bob] and case.split == {"completeness": [1, 4]}
    assert "judge" not in case.model_dump_json()
    adjudication.resolve(expert, item_id, {**FULL, "completeness": 3}, note="partly complete")
    with session_scope(engine) as session:
        row = session.get(ReviewItem, item_id)
    assert row is not None and row.state == "done" and row.adjudicated_by == expert
    assert row.final_scores == {**FULL, "completeness": 3, "_note": "partly complete"}
    assert adjudication.pending() == 0 and adjudication.next_case(expert) is None


def test_only_adjudicators_who_did_not_label_the_item_may_settle_it(queue: ReviewQueue, seed, reviewers) -> None:
    seed(1, double=1.0)
    (alice,) = reviewers("alice")
    (bob,) = reviewers("bob", adjudicator=True)
    _split_item(queue, alice, bob)
    adjudication = Adjudication(queue)
    with pytest.raises(NotAllowed):
        adjudication.next_case(alice)
    assert adjudication.next_case(bob) is None  # bob labeled it himself


def test_one_case_is_held_by_one_expert_at_a_time(queue: ReviewQueue, seed, reviewers, clock) -> None:
    seed(1)
    (alice,) = reviewers("alice")
    first, second = reviewers("first", "second", adjudicator=True)
    item = queue.lease_next(alice)
    assert item is not None
    queue.flag(alice, item.item_id, "needs a doctor")
    adjudication = Adjudication(queue)
    case = adjudication.next_case(first)
    assert case is not None and case.state == "flagged" and case.labels[0].flagged
    assert adjudication.next_case(second) is None
    with pytest.raises(LeaseError):
        adjudication.resolve(second, item.item_id, FULL)
    clock.advance(601)
    assert adjudication.next_case(second) is not None
    with pytest.raises(LeaseError):
        adjudication.resolve(first, item.item_id, FULL)
    adjudication.resolve(second, item.item_id, FULL)
