"""The review queue's service layer: leases, blind items, labels, skips, flags and progress."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import Engine, select

from judgewatch.review.accounts import set_active
from judgewatch.review.queue import ReviewQueue
from judgewatch.review.views import InvalidLabel, LeaseError, NotAllowed
from judgewatch.storage.db import session_scope
from judgewatch.storage.review import ReviewItem, ReviewLabel

FULL = {"relevance": 4, "faithfulness": 4, "completeness": 4}


def test_leased_item_is_blind_and_held_on_the_server(queue: ReviewQueue, seed, reviewers, engine: Engine) -> None:
    seed(3)
    (alice,) = reviewers("alice")
    item = queue.lease_next(alice)
    assert item is not None
    dumped = item.model_dump()
    assert not {"tier", "judge_scores", "overall", "verdict_id", "reason"} & dumped.keys()
    assert [c.name for c in item.scored_criteria] == ["relevance", "faithfulness", "completeness"]
    assert item.criteria[0].anchors[5].startswith("Directly and fully")
    with session_scope(engine) as session:
        row = session.get(ReviewItem, item.item_id)
        assert row is not None and row.state == "leased" and row.lease_owner == alice


def test_pressing_next_again_returns_the_item_already_held(queue: ReviewQueue, seed, reviewers) -> None:
    seed(3)
    (alice,) = reviewers("alice")
    first = queue.lease_next(alice)
    again = queue.lease_next(alice)
    assert first is not None and again is not None and again.item_id == first.item_id


def test_two_reviewers_never_get_the_same_item(queue: ReviewQueue, seed, reviewers) -> None:
    seed(2)
    alice, bob, carol = reviewers("alice", "bob", "carol")
    a, b = queue.lease_next(alice), queue.lease_next(bob)
    assert a is not None and b is not None and a.item_id != b.item_id
    assert queue.lease_next(carol) is None


def test_an_expired_lease_returns_the_item_and_refuses_the_late_submit(queue: ReviewQueue, seed, reviewers, clock):
    seed(1)
    alice, bob = reviewers("alice", "bob")
    item = queue.lease_next(alice)
    assert item is not None and queue.lease_next(bob) is None
    clock.advance(601)
    taken = queue.lease_next(bob)
    assert taken is not None and taken.item_id == item.item_id
    with pytest.raises(LeaseError):
        queue.submit(alice, item.item_id, FULL, rubric_version_shown="1.0.0")
    queue.submit(bob, item.item_id, FULL, rubric_version_shown="1.0.0")


def test_a_lapsed_lease_nobody_took_still_refuses_the_submit(queue: ReviewQueue, seed, reviewers, clock) -> None:
    seed(1)
    (alice,) = reviewers("alice")
    item = queue.lease_next(alice)
    assert item is not None
    clock.advance(600)
    with pytest.raises(LeaseError, match="expired"):
        queue.submit(alice, item.item_id, FULL, rubric_version_shown="1.0.0")


def test_a_label_is_guarded_by_the_lease_the_store_holds_not_the_one_remembered(
    queue: ReviewQueue, engine: Engine, seed, reviewers, clock
) -> None:
    """The lease lapsed and another app process leased the item again to the same reviewer: the label is stored
    with the lease the store holds now (its start), not the one this process remembers from "lease next"."""
    seed(1)
    (alice,) = reviewers("alice")
    item = queue.lease_next(alice)
    assert item is not None
    clock.advance(601)
    again = ReviewQueue(engine, lease_seconds=600, clock=clock).lease_next(alice)
    assert again is not None and again.item_id == item.item_id
    clock.advance(5)
    queue.submit(alice, item.item_id, FULL, rubric_version_shown="1.0.0")
    with session_scope(engine) as session:
        (label,) = session.scalars(select(ReviewLabel)).all()
    assert label.started_at == clock.now - timedelta(seconds=5) and label.duration_ms == 5000


def test_submit_for_an_item_leased_to_someone_else_is_refused(queue: ReviewQueue, seed, reviewers) -> None:
    seed(1)
    alice, mallory = reviewers("alice", "mallory")
    item = queue.lease_next(alice)
    assert item is not None
    for action in (
        lambda: queue.submit(mallory, item.item_id, FULL, rubric_version_shown="1.0.0"),
        lambda: queue.skip(mallory, item.item_id, "boring"),
        lambda: queue.flag(mallory, item.item_id, "look"),
    ):
        with pytest.raises(LeaseError):
            action()


def test_submit_reveals_the_judge_verdict_and_records_the_label(queue: ReviewQueue, seed, reviewers, engine, clock):
    seed(1)
    (alice,) = reviewers("alice")
    item = queue.lease_next(alice)
    assert item is not None
    clock.advance(42.5)
    shown = queue.submit(alice, item.item_id, FULL, rubric_version_shown="1.0.0", comment=" ok ")
    assert shown.judge_scores == {"relevance": 5, "faithfulness": 4, "completeness": 3}
    assert shown.your_scores == FULL and shown.item_state == "done"
    with session_scope(engine) as session:
        (label,) = session.scalars(select(ReviewLabel)).all()
    assert (label.reviewer, label.scores, label.comment, label.rubric_version_shown) == (alice, FULL, "ok", "1.0.0")
    assert label.duration_ms == 42_500 and label.submitted_at == clock.now
    with pytest.raises(LeaseError):  # a second submit of the same item
        queue.submit(alice, item.item_id, FULL, rubric_version_shown="1.0.0")
    assert queue.lease_next(alice) is None


@pytest.mark.parametrize(
    ("scores", "message"),
    [
        ({"relevance": 4, "faithfulness": 4}, "missing completeness"),
        ({**FULL, "relevance": 6}, "outside 1-5"),
        ({**FULL, "tone": 3}, "not scored"),
    ],
)
def test_invalid_scores_are_refused_and_keep_the_lease(queue: ReviewQueue, seed, reviewers, scores, message) -> None:
    seed(1)
    (alice,) = reviewers("alice")
    item = queue.lease_next(alice)
    assert item is not None
    with pytest.raises(InvalidLabel, match=message):
        queue.submit(alice, item.item_id, scores, rubric_version_shown="1.0.0")
    queue.submit(alice, item.item_id, FULL, rubric_version_shown="1.0.0")


@pytest.mark.usefixtures("engine")
def test_double_labeled_item_goes_to_a_second_different_reviewer(queue: ReviewQueue, seed, reviewers):
    seed(1, double=1.0)
    alice, bob = reviewers("alice", "bob")
    item = queue.lease_next(alice)
    assert item is not None
    assert queue.submit(alice, item.item_id, FULL, rubric_version_shown="1.0.0").item_state == "available"
    assert queue.lease_next(alice) is None  # never the same reviewer twice
    second = queue.lease_next(bob)
    assert second is not None and second.item_id == item.item_id
    assert queue.submit(bob, item.item_id, {**FULL, "relevance": 5}, rubric_version_shown="1.0.0").item_state == "done"


def test_two_labels_more_than_one_point_apart_go_to_adjudication(queue: ReviewQueue, seed, reviewers) -> None:
    seed(1, double=1.0)
    alice, bob = reviewers("alice", "bob")
    item = queue.lease_next(alice)
    assert item is not None
    queue.submit(alice, item.item_id, FULL, rubric_version_shown="1.0.0")
    assert queue.lease_next(bob) is not None
    shown = queue.submit(bob, item.item_id, {**FULL, "faithfulness": 2}, rubric_version_shown="1.0.0")
    assert shown.item_state == "adjudication"


def test_skip_needs_a_reason_and_hands_the_item_to_someone_else(queue: ReviewQueue, seed, reviewers, engine) -> None:
    seed(1)
    alice, bob = reviewers("alice", "bob")
    item = queue.lease_next(alice)
    assert item is not None
    with pytest.raises(LeaseError, match="why"):
        queue.skip(alice, item.item_id, "  ")
    queue.skip(alice, item.item_id, "not my language")
    assert queue.lease_next(alice) is None
    other = queue.lease_next(bob)
    assert other is not None and other.item_id == item.item_id
    with session_scope(engine) as session:
        (label,) = session.scalars(select(ReviewLabel)).all()
    assert label.skipped_reason == "not my language" and label.scores == {}


def test_flag_sends_the_item_to_an_expert_with_partial_scores(queue: ReviewQueue, seed, reviewers, engine) -> None:
    seed(1)
    alice, bob = reviewers("alice", "bob")
    item = queue.lease_next(alice)
    assert item is not None
    queue.flag(alice, item.item_id, "medical claim, need an expert", scores={"relevance": 3})
    assert queue.lease_next(bob) is None
    with session_scope(engine) as session:
        row = session.get(ReviewItem, item.item_id)
        (label,) = session.scalars(select(ReviewLabel)).all()
    assert row is not None and row.state == "flagged"
    assert label.flagged and label.scores == {"relevance": 3}


def test_a_disabled_reviewer_can_do_nothing(queue: ReviewQueue, seed, reviewers, engine) -> None:
    seed(2)
    (alice,) = reviewers("alice")
    item = queue.lease_next(alice)
    assert item is not None
    with session_scope(engine) as session:
        set_active(session=session, name=alice, active=False)
    with pytest.raises(NotAllowed):
        queue.lease_next(alice)
    with pytest.raises(NotAllowed):
        queue.submit(alice, item.item_id, FULL, rubric_version_shown="1.0.0")
    with pytest.raises(NotAllowed):
        queue.lease_next("nobody")


def test_progress_counts_done_today_and_what_is_left(queue: ReviewQueue, seed, reviewers) -> None:
    seed(3)
    alice, bob = reviewers("alice", "bob")
    assert queue.progress(alice).left_in_queue == 3
    item = queue.lease_next(alice)
    assert item is not None
    assert queue.progress(bob).left_in_queue == 2
    queue.submit(alice, item.item_id, FULL, rubric_version_shown="1.0.0")
    mine = queue.progress(alice)
    assert (mine.done_today, mine.left_in_queue, mine.holding) == (1, 2, None)
    capped = queue.progress(bob, cap=1)
    assert (capped.left_in_queue, capped.more_left) == (1, True)


def test_lease_item_takes_a_given_free_item_only(queue: ReviewQueue, seed, reviewers) -> None:
    seed(2)
    alice, bob = reviewers("alice", "bob")
    item = queue.lease_next(alice)
    assert item is not None
    with pytest.raises(LeaseError):
        queue.lease_item(bob, item.item_id)
