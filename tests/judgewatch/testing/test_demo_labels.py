"""Demo labels: synthesized from the golden sets' known-good and known-bad answers, and said to be so."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import Engine

from judgewatch.calibration.score_frame import load_labels
from judgewatch.calibration.summary import summarize
from judgewatch.contract.rubric import Rubric
from judgewatch.regression.golden import load_golden_set
from judgewatch.regression.serving import load_recorded_answers
from judgewatch.testing.demo_labels import (
    DEMO_REVIEWER,
    demo_answers,
    store_golden_tier,
    synthesize_golden_labels,
    write_demo_answers,
)

SET = "halueval_qa_mini"


async def test_demo_labels_come_from_known_answers_and_say_they_are_synthetic(engine: Engine, rubric: Rubric) -> None:
    golden = load_golden_set(SET)
    full = demo_answers(golden, bad_share=0.1, salt="full")
    quantized = demo_answers(golden, bad_share=0.6, salt="quantized")
    quantized[0] = (quantized[0][0], "An answer nobody wrote down in advance.")  # unknown quality: never labeled
    await store_golden_tier(engine, rubric, golden, "full", full)
    await store_golden_tier(engine, rubric, golden, "quantized", quantized)

    result = synthesize_golden_labels(engine, rubric=rubric, datasets=[SET], review_share=0.5)
    assert result.kind == "synthesized-from-golden-known-answers"
    assert (result.known_good + result.known_bad, result.unknown) == (79, 1)
    assert result.known_bad > 20 and 20 < result.labeled < 60
    assert result.describe().startswith("SYNTHESIZED labels, not human labels")

    labels = load_labels(engine, rubric_name="answer_quality")
    assert set(labels["via"]) == {"synthetic"} and set(labels["reviewer"]) == {DEMO_REVIEWER}
    assert set(labels.groupby("review_item_id")["human"].apply(lambda s: tuple(sorted(s)))) <= {(5, 5, 5), (1, 1, 4)}
    again = synthesize_golden_labels(engine, rubric=rubric, datasets=[SET], review_share=0.5)
    assert again.labeled == 0  # every routed known item is labeled already

    summary = summarize(engine, categories=rubric.scale.levels, n_boot=200)
    assert any(note.startswith("SYNTHETIC LABELS") for note in summary.notes)
    assert all(c.synthetic_items == c.labeled_items > 0 for c in summary.label_counts)
    faith = {e.tier: e for e in summary.estimates if e.criterion == "faithfulness"}
    assert faith["quantized"].ppi.estimate < faith["full"].ppi.estimate


def test_demo_answer_files_are_recorded_answers_of_known_quality(tmp_path: Path) -> None:
    golden = load_golden_set(SET)
    path = tmp_path / "quantized.jsonl"
    assert write_demo_answers(golden, path, bad_share=0.5, salt="q") == len(golden)
    answers = load_recorded_answers(path, {item.id for item in golden.items})
    bad = sum(answers[item.id] in item.bad_answers for item in golden.items)
    good = sum(answers[item.id] in item.good_answers for item in golden.items)
    assert bad + good == len(golden) and 10 < bad < 30
