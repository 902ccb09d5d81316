"""The real SmolLM2-135M judge, measured on known answers: found at chance and refused; "A" every time in pairs."""

from __future__ import annotations

import pytest
from sqlalchemy import Engine

from judgewatch.contract.rubric import load_rubric
from judgewatch.regression.gate import decide
from judgewatch.regression.golden import load_golden_set
from judgewatch.settings import REPO_ROOT, Settings
from judgewatch.trust.policy import TrustPolicy
from judgewatch.trust.records import trust_for
from judgewatch.trust.runs import judges_under_test, validate

pytestmark = [pytest.mark.vllm, pytest.mark.slow]

MODEL = "smollm2-135m-instruct"


async def test_smollm2_is_measured_at_chance_and_the_gate_refuses_it(vllm_url: str, sqlite_engine: Engine) -> None:
    settings = Settings(judge_concurrency=8)
    rubrics = [load_rubric(name, REPO_ROOT / "rubrics") for name in ("answer_quality", "pairwise_preference")]
    golden = load_golden_set("halueval_qa_mini", datasets_dir=REPO_ROOT / "datasets")
    [under_test] = judges_under_test(vllm_url, settings, MODEL)
    try:
        report = await validate(under_test, rubrics, [golden], engine=sqlite_engine, policy=_policy(), limit=20)
    finally:
        await under_test.aclose()
    pointwise, pairwise = report.records
    faith = pointwise.figures["criteria"]["faithfulness"]
    assert pointwise.judge_kind == "openai" and pointwise.judge_name == MODEL and pointwise.n_items == 20
    assert faith["judged"] == 40 and faith["auroc"] is not None and faith["auroc"] < 0.7
    assert pointwise.trustworthy is False
    pair = pairwise.figures["criteria"]["faithfulness"]
    assert pair["a_rate"] > 0.8 and pair["position_consistency"] < 0.5 and pairwise.trustworthy is False

    trust = trust_for(sqlite_engine, under_test.pointwise.identity(rubrics[0]), rubrics[0].identity, policy=_policy())
    gate = decide([], margin=0.1, trust=trust)
    assert gate.exit_code == 2 and gate.reasons[0].startswith(f"judge not trustworthy: judge openai:{MODEL}")


def _policy() -> TrustPolicy:
    return TrustPolicy(min_items=20)


async def test_smollm2_bias_probes_run_through_vllm_and_are_stored(vllm_url: str, sqlite_engine: Engine) -> None:
    from judgewatch.storage.db import session_scope
    from judgewatch.storage.verdicts import count_by_status
    from judgewatch.trust.probes import probe_judge
    from judgewatch.trust.validate import known_pairs

    rubric = load_rubric("answer_quality", REPO_ROOT / "rubrics")
    golden = load_golden_set("halueval_qa_mini", datasets_dir=REPO_ROOT / "datasets")
    [under_test] = judges_under_test(vllm_url, Settings(judge_concurrency=4), MODEL)
    try:  # 3 items x 12 calls: enough to prove the path, too few to decide (n < 20 is inconclusive)
        record = await probe_judge(
            under_test.pointwise, rubric, known_pairs(golden, limit=3), engine=sqlite_engine, policy=_policy()
        )
    finally:
        await under_test.aclose()
    assert record.judge_name == MODEL and record.n_items == 3 and record.trustworthy is None
    assert record.figures["cost"]["calls"] == 36
    probes = record.figures["probes"]
    assert probes["consistency"]["repeat"]["n"] + probes["consistency"]["shuffled"]["n"] > 0
    assert set(probes) == {"verbosity", "confidence", "reference_sensitivity", "injection", "consistency"}
    assert probes["injection"]["answers"] == 9  # each of the 3 bad answers with each of the 3 instructions
    with session_scope(sqlite_engine) as session:
        assert sum(count_by_status(session=session).values()) == 36
