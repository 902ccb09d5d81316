"""Validation reports both readings of a judge whose verdicts carry probability-weighted scores."""

from __future__ import annotations

import pytest

from judges.base import config_hash, plan, scored_verdict
from judges.config import EndpointConfig
from judges.openai_judge import OpenAIJudge
from judges.reference import ReferenceJudge
from judgewatch.contract.items import JudgeItem
from judgewatch.contract.rubric import Rubric
from judgewatch.contract.verdicts import JudgeIdentity, ScoreReading, Verdict
from judgewatch.regression.golden import GoldenSet
from judgewatch.testing.simulator import serve_simulator
from judgewatch.trust.validate import measure_judge


class FlatIntegersJudge:
    """Writes 3 for everything, but its floats follow the reference judge: all the signal is in the weighting."""

    kind = "fake"

    def __init__(self) -> None:
        self.reference = ReferenceJudge()

    def identity(self, rubric: Rubric) -> JudgeIdentity:
        return JudgeIdentity(kind=self.kind, name="flat-integers", config_hash=config_hash(rubric, fake="flat"))

    async def judge(self, item: JudgeItem, rubric: Rubric) -> Verdict:
        to_score, not_applicable = plan(rubric, item)
        shadow = self.reference.judge_sync(item, rubric).scores
        floats = {name: 2.5 + 0.2 * float(shadow[name] or 3) for name in to_score}
        verdict = scored_verdict(item, rubric, self.identity(rubric), dict.fromkeys(to_score, 3), not_applicable, "")
        return verdict.model_copy(update={"expected_scores": floats, "score_reading": ScoreReading.expected})

    async def aclose(self) -> None:
        return None


async def test_the_probability_weighted_reading_gets_its_own_auroc_and_the_policy_keeps_the_integers(
    answer_quality: Rubric, halueval_mini: GoldenSet
) -> None:
    record = await measure_judge(FlatIntegersJudge(), answer_quality, halueval_mini, resamples=200)
    faith = record.figures["criteria"]["faithfulness"]
    assert faith["auroc"] == 0.5  # the integers say nothing
    reference = record.figures["reference"]["criteria"]["faithfulness"]["auroc"]
    assert faith["expected"]["auroc"] == pytest.approx(reference, abs=1e-9) and reference > 0.9
    assert faith["expected"]["low"] <= faith["expected"]["auroc"] <= faith["expected"]["high"]
    assert record.figures["score_readings"] == {"expected": 80}
    assert record.trustworthy is False and "AUROC 0.50" in record.summary


async def test_a_judge_read_as_integers_reports_one_reading_only(
    constant_judge: object, answer_quality: Rubric, halueval_mini: GoldenSet
) -> None:
    record = await measure_judge(constant_judge, answer_quality, halueval_mini, resamples=200)  # type: ignore[arg-type]
    assert all("expected" not in fig for fig in record.figures["criteria"].values())
    assert record.figures["score_readings"] == {"integer": 80}


async def test_an_llm_judge_reading_logprobs_is_validated_on_both_readings_end_to_end(
    answer_quality: Rubric, halueval_mini: GoldenSet
) -> None:
    async with serve_simulator(latency_ms=1) as sim:
        judge = OpenAIJudge(EndpointConfig(sim.base_url, sim.state.model, logprobs=True, max_retries=0))
        try:
            record = await measure_judge(judge, answer_quality, halueval_mini, resamples=200, limit=20)
        finally:
            await judge.aclose()
    assert record.figures["score_readings"] == {"expected": 40}
    for fig in record.figures["criteria"].values():
        weighted = fig["expected"]
        assert weighted["n_good"] + weighted["n_bad"] == fig["n_good"] + fig["n_bad"] == 40
        assert weighted["auroc"] is not None and 0.0 <= weighted["auroc"] <= 1.0
