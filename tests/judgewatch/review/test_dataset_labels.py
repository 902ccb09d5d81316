"""Labels derived from the golden sets' own annotations: faithfulness only, through the queue, never people's."""

from __future__ import annotations

from sqlalchemy import Engine, select

from flows.calibration import record_trust
from judgewatch.calibration.score_frame import load_labels
from judgewatch.calibration.summary import summarize
from judgewatch.contract.rubric import Rubric
from judgewatch.regression.golden import load_golden_set
from judgewatch.review.accounts import role_of
from judgewatch.review.dataset_labels import ACCOUNT, KNOWN_BAD, KNOWN_GOOD, known_quality, label_from_annotations
from judgewatch.review.routing import RoutingPolicy, route_verdicts
from judgewatch.storage.db import session_scope, table
from judgewatch.storage.interactions import Interaction
from judgewatch.storage.trust import TrustRecord
from judgewatch.testing.demo_labels import demo_answers, store_golden_tier

SET = "halueval_qa_mini"


async def test_routed_golden_answers_get_the_annotations_faithfulness_and_are_never_a_reviewers_label(
    engine: Engine, rubric: Rubric
) -> None:
    golden = load_golden_set(SET)
    await store_golden_tier(engine, rubric, golden, "full", demo_answers(golden, bad_share=0.1, salt="full"))
    quantized = demo_answers(golden, bad_share=0.6, salt="quantized")
    quantized[0] = (quantized[0][0], "An answer nobody annotated.")  # unknown quality: left for people
    await store_golden_tier(engine, rubric, golden, "quantized", quantized)
    with session_scope(engine, write=True) as session:
        route_verdicts(session=session, policy=RoutingPolicy(review_share=1.0, double_label_share=0.0))

    result = label_from_annotations(engine)
    assert (result.routed, result.unknown, result.labeled) == (80, 1, 79)
    assert result.known_bad > 20 and "label_via=dataset_annotation, not a reviewer's" in result.describe()

    labels = load_labels(engine, rubric_name="answer_quality")
    assert set(labels["via"]) == {"dataset_annotation"} and set(labels["reviewer"]) == {ACCOUNT}
    assert set(labels["criterion"]) == {"faithfulness"}  # the annotation says nothing of the other criteria
    i = table(Interaction).c
    with session_scope(engine) as session:
        answers = dict(session.execute(select(i.id, i.answer)).all())
        sources = dict(session.execute(select(i.id, i.source_id)).all())
        assert role_of(session=session, name=ACCOUNT) is None  # the account cannot log in
    items = {item.id: item for item in golden.items}
    for row in labels.itertuples():
        quality = known_quality(items[sources[row.interaction_id]], answers[row.interaction_id])
        assert row.human == (KNOWN_GOOD if quality == "good" else KNOWN_BAD)
    assert label_from_annotations(engine).labeled == 0  # every annotated item is labeled already

    summary = summarize(engine, categories=rubric.scale.levels, n_boot=100)
    assert any(note.startswith("DATASET ANNOTATION LABELS: 79 label(s)") for note in summary.notes)
    assert not any(note.startswith("SYNTHETIC") for note in summary.notes)
    assert sum(c.annotated_items for c in summary.label_counts) == 79
    assert all(c.synthetic_items == 0 for c in summary.label_counts)
    faith = {e.tier: e for e in summary.release if e.criterion == "faithfulness"}
    assert faith["full"].n_dataset_labels == 40 and faith["quantized"].estimate < faith["full"].estimate
    assert not summary.traffic  # golden items and their labels never enter the traffic estimand

    assert record_trust.fn(engine, summary, rubric) == 0  # never trust evidence
    with session_scope(engine) as session:
        assert session.execute(select(table(TrustRecord).c.evidence)).first() is None
