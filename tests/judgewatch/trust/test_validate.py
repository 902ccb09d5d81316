"""Validation on known answers: the reference judge separates them, deliberately bad judges are found out."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import Engine

from judges.base import content_key
from judges.reference import ReferenceJudge
from judgewatch.contract.rubric import Rubric
from judgewatch.regression.golden import GoldenSet
from judgewatch.storage.db import session_scope
from judgewatch.storage.trust import TrustEvidence, get_trust_records
from judgewatch.storage.verdicts import count_by_status
from judgewatch.trust.policy import TrustPolicy
from judgewatch.trust.probes import probe_judge
from judgewatch.trust.records import trust_for
from judgewatch.trust.validate import known_pairs, measure_judge


def test_known_pairs_never_judge_the_good_answer_against_itself(
    halueval_mini: GoldenSet, halluqa_mini: GoldenSet
) -> None:
    for golden in (halueval_mini, halluqa_mini):
        pairs = known_pairs(golden)
        assert len(pairs.good) == len(pairs.bad) == 40
        for good, bad in zip(pairs.good, pairs.bad, strict=True):
            assert good.id.endswith(":good") and bad.id.endswith(":bad")
            assert good.answer != good.reference_answer and good.answer not in good.reference_facts
            refs = ("reference_answer", "reference_facts", "context")
            assert {k: getattr(good, k) for k in refs} == {k: getattr(bad, k) for k in refs}
            assert good.has_references


def test_a_limited_run_is_stored_as_its_own_revision(halueval_mini: GoldenSet) -> None:
    assert known_pairs(halueval_mini, limit=5).revision == f"{halueval_mini.revision}[:5]"
    assert known_pairs(halueval_mini).revision == halueval_mini.revision


@pytest.mark.parametrize(
    ("dataset", "low", "high"),
    # Measured 2026-11-29: faithfulness AUROC 0.9625 [0.91, 1.00] and 0.9359 [0.85, 1.00];
    # reference judge 2.2.0 (2026-12-03): halluqa 0.9437.
    [("halueval_mini", 0.90, 1.0), ("halluqa_mini", 0.88, 0.99)],
)
async def test_reference_judge_separates_good_from_bad_answers(
    dataset: str, low: float, high: float, answer_quality: Rubric, request: pytest.FixtureRequest
) -> None:
    golden: GoldenSet = request.getfixturevalue(dataset)
    record = await measure_judge(ReferenceJudge(), answer_quality, golden)
    faith = record.figures["criteria"]["faithfulness"]
    assert low <= faith["auroc"] <= high
    assert faith["low"] > 0.8 and faith["gap"] > 1.5 and faith["unscored_rate"] == 0.0
    assert record.trustworthy is True and record.n_items == 40
    assert record.evidence == TrustEvidence.known_answers and record.dataset_revision == golden.revision


async def test_constant_judge_is_at_chance_and_untrustworthy(
    constant_judge: Any, answer_quality: Rubric, halueval_mini: GoldenSet
) -> None:
    record = await measure_judge(constant_judge, answer_quality, halueval_mini)
    for figures in record.figures["criteria"].values():
        assert figures["auroc"] == 0.5 and figures["gap"] == 0.0 and figures["unscored_rate"] == 0.0
    assert record.trustworthy is False
    assert "AUROC 0.50 < 0.70" in record.summary and "not above chance" in record.summary
    # The same answers through the reference judge, for comparison on the same items.
    reference = record.figures["reference"]
    assert reference["criteria"]["faithfulness"]["auroc"] > 0.9
    assert reference["agreement"]["faithfulness"]["n"] == 80


async def test_unscored_answers_are_counted_not_dropped(
    mostly_unscored_judge: Any, answer_quality: Rubric, halluqa_mini: GoldenSet
) -> None:
    record = await measure_judge(mostly_unscored_judge, answer_quality, halluqa_mini)
    faith = record.figures["criteria"]["faithfulness"]
    assert faith["judged"] == 80 and faith["unscored"] == 60 and faith["unscored_rate"] == 0.75
    assert faith["n_good"] + faith["n_bad"] == 20  # AUROC rests on the scored answers only
    assert record.figures["unscored_reasons"] == {"parse_error": 60}
    assert record.trustworthy is False and "unscored 75% > 20%" in record.summary


async def test_validation_stores_verdicts_run_and_record_and_the_gate_verdict_reads_them(
    engine: Engine, constant_judge: Any, answer_quality: Rubric, halueval_mini: GoldenSet, halluqa_mini: GoldenSet
) -> None:
    identity = constant_judge.identity(answer_quality)
    before = trust_for(engine, identity, answer_quality.identity)
    assert before.trustworthy is None and "UNMEASURED" in before.summary

    for golden in (halueval_mini, halluqa_mini):
        await measure_judge(constant_judge, answer_quality, golden, engine=engine)
    await measure_judge(constant_judge, answer_quality, halueval_mini, engine=engine)  # re-measuring replaces

    with session_scope(engine) as session:
        records = get_trust_records(session=session, judge_config_hash=identity.config_hash)
        assert sorted(str(r.dataset) for r in records) == ["halluqa_mini", "halueval_qa_mini"]
        assert count_by_status(session=session) == {"scored": 160}
    verdict = trust_for(engine, identity, answer_quality.identity)
    assert verdict.trustworthy is False
    assert {e.dataset for e in verdict.evidence} == {"halluqa_mini", "halueval_qa_mini"}
    assert all(e.n_items == 40 and e.evidence == "known_answers" for e in verdict.evidence)
    assert "NOT TRUSTWORTHY" in verdict.summary and "fake:constant" in verdict.summary


async def test_a_changed_policy_judges_the_stored_figures_again(
    engine: Engine, answer_quality: Rubric, halluqa_mini: GoldenSet
) -> None:
    judge = ReferenceJudge()
    await measure_judge(judge, answer_quality, halluqa_mini, engine=engine)
    identity = judge.identity(answer_quality)
    assert trust_for(engine, identity, answer_quality.identity).trustworthy is None  # known answers alone: not probed
    await probe_judge(judge, answer_quality, known_pairs(halluqa_mini, limit=20), engine=engine, policy=TrustPolicy())
    assert trust_for(engine, identity, answer_quality.identity).trustworthy is True
    strict = TrustPolicy(min_auroc=0.99)
    assert trust_for(engine, identity, answer_quality.identity, policy=strict).trustworthy is False
    too_few = TrustPolicy(min_items=100)
    assert trust_for(engine, identity, answer_quality.identity, policy=too_few).trustworthy is None


async def test_validation_notes_how_many_items_needed_trimming_to_fit_the_judges_window(
    answer_quality: Rubric, halueval_mini: GoldenSet
) -> None:
    from judges.config import EndpointConfig
    from judges.openai_judge import OpenAIJudge
    from judgewatch.testing.simulator import serve_simulator

    # A 700-token window less 160 for the reply: the longer HaluEval items (simulator tokens 475-591) must be cut.
    async with serve_simulator(latency_ms=1, max_model_len=700) as sim:
        judge = OpenAIJudge(EndpointConfig(sim.base_url, sim.state.model, max_tokens=160, max_retries=0))
        try:
            record = await measure_judge(judge, answer_quality, halueval_mini, resamples=200)
        finally:
            await judge.aclose()
    window = record.figures["context_window"]
    assert 0 < window["items_trimmed"] < 40
    # An answer whose rubric, question and answer leave no room for even one sentence of reference is too_long.
    assert window["answers_too_long"] == record.figures["unscored_reasons"].get("too_long", 0)
    assert window["items_trimmed"] <= window["answers_trimmed"] <= 2 * window["items_trimmed"]
    assert window["whole"]["items"] + window["trimmed"]["items"] == 40
    assert set(window["trimmed"]["criteria"]) <= set(record.figures["criteria"])


async def test_a_judge_whose_window_never_bites_reports_no_trimming(
    answer_quality: Rubric, halueval_mini: GoldenSet
) -> None:
    record = await measure_judge(ReferenceJudge(), answer_quality, halueval_mini, resamples=200)
    assert record.figures["context_window"] == {"answers_trimmed": 0, "items_trimmed": 0, "answers_too_long": 0}


class FittedOn(ReferenceJudge):
    """The reference judge, declaring it was fit on the given golden items (ids or question content keys)."""

    def __init__(self, keys: frozenset[str]) -> None:
        super().__init__()
        self.keys = keys

    def fit_item_ids(self) -> frozenset[str]:
        return self.keys


async def test_items_the_judge_was_fit_on_are_in_sample_and_never_trust_evidence(
    engine: Engine, answer_quality: Rubric, halluqa_mini: GoldenSet
) -> None:
    items = halluqa_mini.items
    fitted = frozenset({i.id for i in items[:10]} | {content_key(items[10].question)})
    record = await measure_judge(FittedOn(fitted), answer_quality, halluqa_mini, engine=engine)
    assert record.figures["in_sample_items"] == 11 and record.n_items == len(items) - 11
    assert "11 in-sample items the judge was fit on left out" in record.summary
    with session_scope(engine) as session:  # none of the in-sample items was even judged
        assert count_by_status(session=session) == {"scored": 2 * (len(items) - 11)}
    everything = frozenset(i.id for i in items)
    with pytest.raises(ValueError, match="all 40 items with known answers are in-sample"):
        await measure_judge(FittedOn(everything), answer_quality, halluqa_mini, engine=engine)
