"""The review counts the triggers keep equal a recount from the tables after every kind of write: routing,
leases (which change no count), submits, skips, flags, releases, a split and its adjudication, bulk and direct
inserts and deletes, concurrent reviewers; and m016 backfills a store that had items and labels before it."""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import Engine, delete, insert, text

from judgewatch.review.adjudication import Adjudication
from judgewatch.review.queue import ReviewQueue
from judgewatch.storage.db import session_scope, table
from judgewatch.storage.migrations import MIGRATIONS, migrate
from judgewatch.storage.review import ReviewItem, ReviewLabel
from judgewatch.storage.review_counts import CountKey, recount, stored_counts
from judgewatch.storage.types import utcnow
from judgewatch.testing.threads import run_together

FULL = {"relevance": 4, "faithfulness": 4, "completeness": 4}
TRIGGERS = {
    "review_label_counted": "review_label",
    "review_item_added": "review_item",
    "review_item_removed": "review_item",
    "review_item_moved": "review_item",
}


def assert_kept_equals_recount(engine: Engine) -> dict[CountKey, int]:
    with session_scope(engine) as session:
        kept, fresh = stored_counts(session=session), recount(session=session)
    assert kept == fresh
    return kept


def test_queue_actions_keep_the_counts_equal_to_a_recount(queue: ReviewQueue, seed, reviewers, engine, clock):
    seed(12, double=0.25)  # some items need two labels: a disagreement goes to adjudication
    alice, bob, carol = reviewers("alice", "bob", "carol")
    (expert,) = reviewers("expert", adjudicator=True)
    assert assert_kept_equals_recount(engine) == {("queue", "open"): 12}
    held = queue.lease_next(alice)
    assert held is not None
    assert assert_kept_equals_recount(engine) == {("queue", "open"): 12}  # a lease moves no count
    queue.submit(alice, held.item_id, FULL, rubric_version_shown="1.0.0")
    assert_kept_equals_recount(engine)
    for reviewer, action in ((bob, "skip"), (carol, "flag"), (alice, "release"), (bob, "submit"), (carol, "split")):
        item = queue.lease_next(reviewer)
        assert item is not None
        if action == "skip":
            queue.skip(reviewer, item.item_id, "unsure")
        elif action == "flag":
            queue.flag(reviewer, item.item_id, "needs an expert")
        elif action == "release":
            queue.release(reviewer, item.item_id)
        else:
            scores = {**FULL, "completeness": 1} if action == "split" else FULL
            queue.submit(reviewer, item.item_id, scores, rubric_version_shown="1.0.0")
        assert_kept_equals_recount(engine)
    lapsed = queue.lease_next(alice)
    assert lapsed is not None
    clock.advance(601)  # the lease runs out; another reviewer takes the item again
    assert queue.lease_next(bob) is not None
    adjudication = Adjudication(queue)
    while (case := adjudication.next_case(expert)) is not None:
        adjudication.resolve(expert, case.item.item_id, FULL)
        assert_kept_equals_recount(engine)
    counts = assert_kept_equals_recount(engine)
    assert counts[("queue", "done")] >= 2 and counts[("label", "none")] >= 2
    assert ("queue", "flagged") not in counts and ("queue", "adjudication") not in counts


def test_direct_and_bulk_writes_and_deletes_are_counted(seed, reviewers, engine: Engine) -> None:
    seed(30)
    (loader,) = reviewers("loader")
    now = utcnow()
    items = table(ReviewItem)
    with engine.begin() as conn:  # past the queue: a bulk state change, labels inserted directly, deletes
        conn.execute(items.update().where(items.c.id.in_(conn.execute(items.select().limit(10)).scalars()))
                     .values(state="done"))  # fmt: skip
        done = list(conn.execute(items.select().where(items.c.state == "done")).scalars())
        conn.execute(
            insert(table(ReviewLabel)),
            [{"review_item_id": item_id, "reviewer": loader, "scores": {}, "skipped_reason": skip, "flagged": flag,
              "comment": "", "started_at": now, "submitted_at": now, "duration_ms": 1, "rubric_version_shown": "1",
              "via": "synthetic"}
             for item_id, skip, flag in zip(done, (None, "x", None, None), (False, False, True, False), strict=False)],
        )  # fmt: skip
    assert assert_kept_equals_recount(engine) == {("queue", "open"): 20, ("queue", "done"): 10, ("label", "none"): 2}
    with engine.begin() as conn:
        conn.execute(delete(table(ReviewLabel)))
        conn.execute(delete(items).where(items.c.state == "available"))
    # labels are a counter: deleting them subtracts nothing; items are a gauge: deleted ones leave
    with session_scope(engine) as session:
        assert stored_counts(session=session) == {("queue", "done"): 10, ("label", "none"): 2}


def test_concurrent_reviewers_are_each_counted_once(seed, reviewers, engine: Engine) -> None:
    seed(24)
    names = reviewers("r0", "r1", "r2")

    def work(reviewer: str) -> Callable[[], None]:
        def run() -> None:
            queue = ReviewQueue(engine, lease_seconds=600)
            for _ in range(6):
                item = queue.lease_next(reviewer)
                if item is None:
                    return
                queue.submit(reviewer, item.item_id, FULL, rubric_version_shown="1.0.0")

        return run

    assert run_together([work(name) for name in names], timeout_s=120) == []
    assert assert_kept_equals_recount(engine) == {("queue", "open"): 6, ("queue", "done"): 18, ("label", "none"): 18}


def test_m016_backfills_the_counts_of_an_existing_store(seed, reviewers, queue: ReviewQueue, engine: Engine) -> None:
    seed(5)
    (alice,) = reviewers("alice")
    item = queue.lease_next(alice)
    assert item is not None
    queue.submit(alice, item.item_id, FULL, rubric_version_shown="1.0.0")
    with engine.begin() as conn:  # back to a store as m014 left it: no count table, no triggers
        for name, on in TRIGGERS.items():
            on_table = f" ON {on}" if conn.dialect.name != "sqlite" else ""
            conn.execute(text(f"DROP TRIGGER IF EXISTS {name}{on_table}"))
        conn.execute(text("DROP TABLE review_count"))
        conn.execute(text("DELETE FROM _migrations WHERE name = 'm016_review_counts'"))
    assert migrate(engine, MIGRATIONS) == ["m016_review_counts"]
    assert assert_kept_equals_recount(engine) == {("queue", "open"): 4, ("queue", "done"): 1, ("label", "none"): 1}
