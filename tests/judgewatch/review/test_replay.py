"""Replaying real labels through the service layer: a JSONL file, and PandaLM's three human annotators."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import Engine, select

from judgewatch.review.queue import ReviewQueue
from judgewatch.review.replay import read_label_rows, replay_labels, replay_pandalm
from judgewatch.storage.db import session_scope
from judgewatch.storage.review import ReviewItem, ReviewLabel
from judgewatch.storage.verdicts import VerdictRecord

PANDALM = Path(__file__).resolve().parents[3] / "datasets" / "pandalm"
FULL = {"relevance": 4, "faithfulness": 4, "completeness": 4}


def _all(engine: Engine, model: type) -> list:
    with session_scope(engine) as session:
        return list(session.scalars(select(model)))


def test_a_labels_file_is_replayed_with_the_same_rules_as_the_app(engine, seed, tmp_path) -> None:
    seed(3, double=1.0)
    items = sorted(_all(engine, ReviewItem), key=lambda i: i.id)
    rows = [
        {"item_id": items[0].id, "reviewer": "ann", "scores": FULL, "comment": "fine"},
        {"interaction_id": items[0].interaction_id, "reviewer": "ben", "scores": {**FULL, "relevance": 1}},
        {"item_id": items[1].id, "reviewer": "ann", "skipped_reason": "unclear question"},
        {"item_id": items[2].id, "reviewer": "ann", "flagged": True, "comment": "legal advice"},
        {"item_id": items[0].id, "reviewer": "ann", "scores": FULL},  # twice: refused
        {"item_id": items[1].id, "reviewer": "ben", "scores": {"relevance": 9}},  # off the scale: refused
    ]
    path = tmp_path / "labels.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    report = replay_labels(ReviewQueue(engine), read_label_rows(path))
    assert report.rows == 6
    assert dict(report.outcomes) == {"submitted": 2, "skipped": 1, "flagged": 1, "refused": 2}
    assert report.problems[0].startswith("line 5:") and "outside 1-5" in report.problems[1]
    states = {i.id: i.state for i in _all(engine, ReviewItem)}
    assert [states[i.id] for i in items] == ["adjudication", "available", "flagged"]
    labels = _all(engine, ReviewLabel)
    assert {lb.via for lb in labels} == {"replay"} and len(labels) == 4


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_pandalm_annotators_are_replayed_as_three_reviewers(engine) -> None:
    queue = ReviewQueue(engine)
    report = replay_pandalm(queue, PANDALM, limit=40)
    assert dict(report.outcomes) == {"submitted": 120}
    tests = json.loads((PANDALM / "data" / "testset-v1.json").read_text())[:40]
    # codes 1 (response 1 better) and 2 (response 2 better) from two annotators are two points apart
    split = sum(1 for t in tests if {1, 2} <= {t["annotator1"], t["annotator2"], t["annotator3"]})
    items = _all(engine, ReviewItem)
    assert len(items) == 40 and all(i.labels_done == 3 and i.inclusion_probability == 1.0 for i in items)
    assert sum(i.state == "adjudication" for i in items) == split
    labels = _all(engine, ReviewLabel)
    assert {lb.reviewer for lb in labels} == {"pandalm-annotator1", "pandalm-annotator2", "pandalm-annotator3"}
    first = next(t for t in tests if t["idx"] == 0)
    assert first["annotator1"] == 2  # "response 2 better" is level 3 of the review rubric
    verdicts = _all(engine, VerdictRecord)
    assert {v.judge_name for v in verdicts} == {"gpt-3.5-turbo", "pandalm-7b"}
    again = replay_pandalm(queue, PANDALM, limit=40)
    assert dict(again.outcomes) == {"refused": 120} and len(_all(engine, ReviewLabel)) == 120
