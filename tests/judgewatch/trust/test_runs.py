"""The demo's trust step and the judge identity a gate later looks its trust up by."""

from __future__ import annotations

from sqlalchemy import Engine

from judges.factory import chain, judge_links
from judgewatch.contract.rubric import Rubric
from judgewatch.settings import REPO_ROOT, Settings
from judgewatch.testing.simulator import run_simulator_in_thread
from judgewatch.trust.leaderboard import leaderboard
from judgewatch.trust.records import trust_for
from judgewatch.trust.runs import ademo_trust_step, judges_under_test


def _settings() -> Settings:
    return Settings(rubrics_dir=REPO_ROOT / "rubrics", datasets_dir=REPO_ROOT / "datasets")


def test_the_validated_judge_has_the_identity_of_the_judge_a_gate_builds(answer_quality: Rubric) -> None:
    settings = _settings()
    url = "http://127.0.0.1:9/v1"
    [under_test] = judges_under_test(url, settings, "smollm2-135m-instruct")
    gate_judge = chain(judge_links(url, settings, "smollm2-135m-instruct"))  # a chain with the reference judge last
    assert under_test.pointwise.identity(answer_quality) == gate_judge.identity(answer_quality)
    assert under_test.pairwise.identity(answer_quality).config_hash != gate_judge.identity(answer_quality).config_hash


async def test_demo_step_measures_both_judges_and_returns_the_endpoint_judges_verdict(
    engine: Engine, answer_quality: Rubric
) -> None:
    settings = _settings()
    with run_simulator_in_thread(latency_ms=1) as sim:  # schema-valid, arbitrary verdicts: a judge at chance
        verdict = await ademo_trust_step(engine, sim.base_url, "sim-judge", settings=settings, limit=20)
    assert verdict.trustworthy is False and verdict.judge_name == "openai:sim-judge"
    assert {e.dataset for e in verdict.evidence} == {"halueval_qa_mini", "halluqa_mini"}
    identity = chain(judge_links(sim.base_url, settings, "sim-judge")).identity(answer_quality)
    assert trust_for(engine, identity, answer_quality.identity).trustworthy is False
    rows = leaderboard(engine)
    assert {(r.judge, r.evidence) for r in rows} == {
        ("reference:reference-overlap", "known_answers"),
        ("reference:reference-overlap", "pairwise"),
        ("openai:sim-judge", "known_answers"),
        ("openai:sim-judge", "pairwise"),
    }
    assert all(r.trustworthy for r in rows if r.judge.startswith("reference"))


async def test_demo_step_prints_progress_and_its_plan_matches_the_calls_made(engine: Engine) -> None:
    settings, lines = _settings(), []
    with run_simulator_in_thread(latency_ms=1) as sim:
        verdict = await ademo_trust_step(
            engine, sim.base_url, "sim-judge", settings=settings, include_reference=False, echo=lines.append
        )
    planned = int(lines[0].split()[0])
    assert planned == 2 * 2 * 20 + 2 * 20  # two sets x 20 pairs x 2 answers, one set x 20 pairs x 2 orders
    assert f"{planned}/{planned} calls" in lines[-1] and "calls/s" in lines[-1] and "done in" in lines[-1]
    assert all(e.n_items == 20 for e in verdict.evidence)  # the record states n (and its interval)
    assert "AUROC" in verdict.summary and "n=20" in verdict.summary
    assert {r.judge for r in leaderboard(engine)} == {"openai:sim-judge"}  # the reference judge was not re-measured


async def test_demo_step_with_an_unreachable_judge_leaves_it_unmeasured(engine: Engine) -> None:
    verdict = await ademo_trust_step(engine, "http://127.0.0.1:9/v1", "nobody", settings=_settings(), limit=20)
    assert verdict.trustworthy is None and "UNMEASURED" in verdict.summary
