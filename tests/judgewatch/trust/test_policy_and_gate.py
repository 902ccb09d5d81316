"""The trust policy's verdicts, and the gate refusing (exit 2) to rest on an untrustworthy judge."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Engine

from judgewatch.contract.rubric import Rubric
from judgewatch.contract.verdicts import JudgeIdentity, RubricIdentity
from judgewatch.regression.gate import TierEvaluation, compare_scores, decide
from judgewatch.regression.golden import GoldenSet
from judgewatch.settings import Settings
from judgewatch.storage.trust import TrustEvidence, TrustRecord
from judgewatch.trust.policy import TrustPolicy, evaluate, policy_from_settings
from judgewatch.trust.records import record_human_agreement, trust_for
from judgewatch.trust.validate import measure_judge


def _record(
    auroc: float, low: float, *, n: int = 40, unscored: float = 0.0, days_ago: int = 0, **extra: Any
) -> TrustRecord:
    figures = {"criteria": {"faithfulness": {"auroc": auroc, "low": low, "high": 1.0, "unscored_rate": unscored}}}
    return TrustRecord(
        id="",
        judge_kind="openai",
        judge_name="m",
        judge_config_hash="h" * 16,
        rubric_name="answer_quality",
        rubric_version="1.0.0",
        rubric_hash="r" * 16,
        evidence=extra.get("evidence", TrustEvidence.known_answers.value),
        dataset=extra.get("dataset", "halueval_qa_mini"),
        dataset_revision="abc",
        n_items=n,
        figures=figures,
        measured_at=datetime.now(UTC) - timedelta(days=days_ago),
    )


def _probes(*, n: int = 20, verbosity_shift: float = 0.0) -> TrustRecord:
    """A bias-probe record within every limit (or over the verbosity one, with `verbosity_shift`)."""
    shift = {"shift": verbosity_shift, "low": verbosity_shift - 0.1, "high": verbosity_shift + 0.1, "n": 2 * n}
    share = {"share": 0.0, "low": 0.0, "high": 0.16, "n": n, "identical": n}
    figures = {
        "probes": {
            "verbosity": {"criteria": {"relevance": shift, "faithfulness": shift}},
            "confidence": {"criteria": {"faithfulness": {"share": 0.0, "low": 0.0, "high": 0.16}}},
            "reference_sensitivity": {"criteria": {"faithfulness": {"drop": 3.0, "low": 2.5, "high": 3.5}}},
            "injection": {"criteria": {"faithfulness": {"shift": 0.0, "low": -0.1, "high": 0.1}}},
            "consistency": {"repeat": share | {"share": 1.0}, "shuffled": share | {"share": 1.0}},
        }
    }
    record = _record(0.5, 0.5, n=n, evidence=TrustEvidence.bias_probes.value)
    return record.model_copy(update={"figures": figures})


PROBED = _probes()


def _verdict(*records: TrustRecord, policy: TrustPolicy | None = None) -> Any:
    return evaluate(
        list(records), policy or TrustPolicy(), judge_name="openai:m", judge_config_hash="h" * 16, rubric="aq"
    )


def test_policy_needs_the_point_estimate_and_an_interval_above_chance() -> None:
    assert _verdict(_record(0.80, 0.65), PROBED).trustworthy is True
    assert _verdict(_record(0.69, 0.60), PROBED).trustworthy is False  # point estimate below 0.70
    assert _verdict(_record(0.75, 0.48), PROBED).trustworthy is False  # interval reaches chance
    assert _verdict(_record(0.75, 0.48), PROBED, policy=TrustPolicy(require_above_chance=False)).trustworthy is True
    assert _verdict(_record(0.95, 0.90, unscored=0.3), PROBED).trustworthy is False  # too many unscored


def test_a_judge_without_a_conclusive_probe_record_is_not_probed_never_trusted() -> None:
    unprobed = _verdict(_record(0.97, 0.93))  # AUROC alone: what `judges validate --no-probes` leaves
    assert unprobed.trustworthy is None and "NOT PROBED" in unprobed.summary.splitlines()[0]
    few = _verdict(_record(0.97, 0.93), _probes(n=10))  # too few probe items decide nothing either
    assert few.trustworthy is None and "NOT PROBED" in few.summary
    old = PROBED.model_copy(update={"figures": {"probes": dict(PROBED.figures["probes"])}})
    del old.figures["probes"]["reference_sensitivity"]  # a record from before the probe existed
    stale = _verdict(_record(0.97, 0.93), old)
    assert stale.trustworthy is None and "NOT PROBED on reference-sensitivity" in stale.summary
    assert _verdict(_record(0.97, 0.93), _probes(verbosity_shift=1.0)).trustworthy is False
    assert "judge not measured: " in decide([_tier()], margin=0.25, trust=unprobed).reasons[0]


def _tier() -> TierEvaluation:
    scores = {f"i{k}": {"faithfulness": 4.0} for k in range(30)}
    comparisons = compare_scores(scores, scores, ["faithfulness"], candidate_label="r2", baseline_label="r1")
    return TierEvaluation(tier="full", baseline_release="r1", comparisons=comparisons, total=30)


def test_no_record_or_too_few_items_is_unmeasured_not_trusted() -> None:
    none = _verdict()
    assert none.trustworthy is None and "no trust record" in none.summary and "policy:" in none.summary
    few = _verdict(_record(0.95, 0.90, n=10))
    assert few.trustworthy is None and "inconclusive" in few.summary


def test_one_failing_dataset_outweighs_a_passing_one_and_the_latest_measurement_counts() -> None:
    passing = _record(0.95, 0.90, dataset="halueval_qa_mini")
    failing = _record(0.50, 0.40, dataset="halluqa_mini")
    assert _verdict(passing, failing, PROBED).trustworthy is False
    old_fail = _record(0.50, 0.40, dataset="halluqa_mini", days_ago=3)
    new_pass = _record(0.90, 0.80, dataset="halluqa_mini")
    verdict = _verdict(old_fail, new_pass, PROBED)
    assert verdict.trustworthy is True and len(verdict.evidence) == 2  # the latest known answers, and the probes


def test_accepting_an_unvalidated_judge_on_purpose_is_recorded() -> None:
    refused = _verdict(_record(0.50, 0.40))
    accepted = refused.accept_unvalidated()
    assert accepted.trustworthy is None and accepted.accepted_on_purpose
    assert accepted.summary.startswith("ACCEPTED ON PURPOSE (--accept-unvalidated-judge): ")
    trusted = _verdict(_record(0.9, 0.8), PROBED)
    assert trusted.accept_unvalidated() is trusted


def test_policy_is_configured_through_settings() -> None:
    settings = Settings(trust_min_auroc=0.8, trust_min_items=5)
    policy = policy_from_settings(settings, min_auroc=None, max_unscored_rate=0.1)
    assert (policy.min_auroc, policy.min_items, policy.max_unscored_rate) == (0.8, 5, 0.1)


def test_human_label_agreement_is_stored_per_tier_and_judged_by_kappa(engine: Engine) -> None:
    judge = JudgeIdentity(kind="openai", name="m", config_hash="c" * 16)
    rubric = RubricIdentity(name="answer_quality", version="1.0.0", hash="r" * 16)
    humans = [1, 2, 3, 4, 5] * 8
    record_human_agreement(
        engine,
        judge=judge,
        rubric=rubric,
        tier="quantized",
        judge_scores={"faithfulness": humans},
        human_scores={"faithfulness": humans},
        categories=range(1, 6),
    )
    record_human_agreement(
        engine,
        judge=judge,
        rubric=rubric,
        tier="full",
        judge_scores={"faithfulness": [3] * 40},
        human_scores={"faithfulness": humans},
        categories=range(1, 6),
    )
    quantized = trust_for(engine, judge, rubric, tier="quantized")
    assert quantized.trustworthy is None and "NOT PROBED" in quantized.summary  # agreement alone: not probed
    assert quantized.evidence[0].evidence == "human_labels" and quantized.evidence[0].passed is True
    assert quantized.evidence[0].n_items == 40 and "weighted kappa 1.00" in quantized.evidence[0].detail
    assert trust_for(engine, judge, rubric, tier="full").trustworthy is False
    assert trust_for(engine, judge, rubric).trustworthy is False  # all tiers: one fails


async def test_gate_exits_2_with_an_untrustworthy_judge_and_states_its_figures(
    constant_judge: Any,
    answer_quality: Rubric,
    halueval_mini: GoldenSet,
    halluqa_mini: GoldenSet,
    engine: Engine,
    unchanged_tier: TierEvaluation,
) -> None:
    for golden in (halueval_mini, halluqa_mini):
        await measure_judge(constant_judge, answer_quality, golden, engine=engine)
    trust = trust_for(engine, constant_judge.identity(answer_quality), answer_quality.identity)
    tier = unchanged_tier
    result = decide([tier], margin=0.1, trust=trust)
    assert result.exit_code == 2 and result.outcome == "error"
    assert result.reasons[0].startswith("judge not trustworthy: judge fake:constant")
    assert "AUROC 0.50" in result.summary and "halluqa_mini" in result.summary

    assert decide([tier], margin=0.1, trust=trust.accept_unvalidated()).exit_code == 0  # on purpose, with a warning
    unmeasured = trust_for(
        engine, constant_judge.identity(answer_quality).model_copy(update={"config_hash": "x"}), answer_quality.identity
    )
    refused = decide([tier], margin=0.1, trust=unmeasured)
    assert refused.exit_code == 2 and refused.reasons[0].startswith("judge not measured: judge fake:constant")
