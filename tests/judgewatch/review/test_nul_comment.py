"""A reviewer's comment with a NUL in it keeps the label (PostgreSQL refuses NUL: it is dropped on the way in)."""

from __future__ import annotations

from sqlalchemy import Engine, text


def test_a_reviewer_comment_with_nul_keeps_the_label(engine: Engine, queue, seed, reviewers) -> None:
    seed(1)
    (alice,) = reviewers("alice")
    item = queue.lease_next(alice)
    assert item is not None
    scores = {"relevance": 4, "faithfulness": 4, "completeness": 4}
    queue.submit(alice, item.item_id, scores, rubric_version_shown="1.0.0", comment="fine\x00 really")
    with engine.connect() as conn:
        assert conn.execute(text("SELECT comment FROM review_label")).scalar_one() == "fine really"
