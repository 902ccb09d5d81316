"""Routing: a deterministic uniform share of scored verdicts, targeted picks with exact probabilities."""

from __future__ import annotations

from collections import Counter

import pytest
from sqlalchemy import Engine, select

from judgewatch.review.queue import ReviewQueue
from judgewatch.review.routing import RoutingPolicy, decide, route_verdicts
from judgewatch.review.rubrics import RubricResolver
from judgewatch.storage.db import session_scope
from judgewatch.storage.review import ReviewItem


def _items(engine: Engine) -> list[ReviewItem]:
    with session_scope(engine) as session:
        return list(session.scalars(select(ReviewItem)))


def _route(engine: Engine, policy: RoutingPolicy):
    with session_scope(engine) as session:
        return route_verdicts(session=session, policy=policy)


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_about_a_tenth_of_scored_verdicts_are_routed_and_rerunning_routes_the_same(engine, store_judged_items) -> None:
    store_judged_items(1000, unscored_every=5)
    first = _route(engine, RoutingPolicy())
    assert first.considered == 1000
    assert 55 <= first.routed <= 110 and first.created == first.routed
    assert first.by_reason == {"uniform": first.routed}
    ids = {i.id for i in _items(engine)}
    again = _route(engine, RoutingPolicy())
    assert (again.routed, again.created) == (first.routed, 0)
    assert {i.id for i in _items(engine)} == ids
    assert all(i.inclusion_probability == 0.1 and i.pick_reason == "uniform" for i in _items(engine))


def test_unscored_verdicts_are_never_uniform_picks_but_can_be_targeted(engine, store_judged_items) -> None:
    store_judged_items(200, unscored_every=1)
    assert _route(engine, RoutingPolicy(review_share=1.0)).routed == 0
    report = _route(engine, RoutingPolicy(review_share=1.0, unscored_share=0.5))
    assert set(report.by_reason) == {"unscored"} and 60 < report.routed < 140
    assert {i.inclusion_probability for i in _items(engine)} == {0.5}


def test_borderline_probability_combines_both_independent_picks() -> None:
    rubric = RubricResolver().get("answer_quality")  # no pass threshold: the line is the midpoint 3
    policy = RoutingPolicy(review_share=0.1, borderline_share=0.5)
    routes = [decide(f"v{i}", status="scored", overall=3.25, rubric=rubric, policy=policy) for i in range(4000)]
    picked = [r for r in routes if r is not None]
    assert all(r.inclusion_probability == pytest.approx(1 - 0.9 * 0.5) for r in picked)
    assert 0.5 < len(picked) / len(routes) < 0.6
    reasons = Counter(r.pick_reason.value for r in picked)
    assert reasons["uniform"] > 0 and reasons["borderline"] > reasons["uniform"]
    far = decide("v1", status="scored", overall=5.0, rubric=rubric, policy=RoutingPolicy(review_share=1.0))
    assert far is not None and far.inclusion_probability == 1.0 and far.pick_reason.value == "uniform"


def test_a_share_of_routed_items_needs_two_labels(engine, store_judged_items) -> None:
    store_judged_items(400)
    _route(engine, RoutingPolicy(review_share=1.0, double_label_share=0.25))
    counts = Counter(i.labels_needed for i in _items(engine))
    assert set(counts) == {1, 2} and 60 < counts[2] < 140


def test_routing_again_never_resets_an_item_in_progress(engine, store_judged_items, reviewers) -> None:
    store_judged_items(1)
    _route(engine, RoutingPolicy(review_share=1.0))
    (alice,) = reviewers("alice")
    queue = ReviewQueue(engine)
    item = queue.lease_next(alice)
    assert item is not None
    queue.submit(alice, item.item_id, {"relevance": 3, "faithfulness": 3, "completeness": 3}, rubric_version_shown="1")
    _route(engine, RoutingPolicy(review_share=1.0))
    (row,) = _items(engine)
    assert (row.state, row.labels_done) == ("done", 1)


def test_shares_outside_zero_to_one_are_refused() -> None:
    with pytest.raises(ValueError, match="review_share"):
        RoutingPolicy(review_share=1.5)
