"""The gate's decision in the release pipeline's own formats: JUnit XML (read back with junitparser, the parser
EnricoMi/publish-unit-test-result-action uses) and the pull-request summary, both from the report's one record.

Plain functions (no store, no Prefect): `tests/flows/test_regression.py` runs `regress --junit --summary-md`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

import pytest
from junitparser import Error, Failure, JUnitXml, Skipped, TestSuite

from judgewatch.contract.verdicts import JudgeIdentity
from judgewatch.regression.gate import Comparison, TierEvaluation, decide
from judgewatch.regression.junit import render_junit
from judgewatch.regression.pr_summary import render_summary
from judgewatch.regression.report import RegressionReport, TierSection, WorstItem
from judgewatch.stats.paired import PairedDiff
from judgewatch.stats.power import detectable_drop

TRUSTED = "judge reference:reference (config abc), rubric answer_quality 3: trustworthy (known answers: AUROC 0.93)"
REVIEW = "https://review.example.org/"


@dataclass
class Trust:
    trustworthy: bool | None
    summary: str
    accepted_on_purpose: bool = False


def comparison(criterion: str, estimate: float, low: float, high: float, n: int = 40) -> Comparison:
    return Comparison(criterion, "r2", "r1", 4.0 + estimate, 4.0, PairedDiff(estimate, low, high, n, 0, "BCa"))


def section(tier: str, *comparisons: Comparison, baseline: str | None = "r1", **kwargs: object) -> TierSection:
    evaluation = TierEvaluation(tier, baseline, comparisons=list(comparisons), total=40)
    for key, value in kwargs.items():
        setattr(evaluation, key, value)
    return TierSection(tier, f"recorded:{tier}.jsonl", evaluation)


def report_of(
    *tiers: TierSection,
    trust: Trust | None = None,
    problems: tuple[str, ...] = (),
    down: tuple[TierEvaluation, ...] = (),
    gaps: tuple[Comparison, ...] = (),
    gap_margin: float | None = None,
) -> RegressionReport:
    trust = trust or Trust(True, TRUSTED)
    evaluations = [*down, *(s.evaluation for s in tiers)]
    gate = decide(evaluations, margin=0.25, trust=trust, gaps=gaps, gap_margin=gap_margin, problems=problems)
    return RegressionReport(
        "r2",
        datetime(2026, 12, 1, 9, 30, tzinfo=UTC),
        {"halueval_qa_mini": "abc123"},
        gate,
        0.25,
        0.2,
        judge=JudgeIdentity(kind="reference", name="reference", config_hash="abc" * 10),
        trust_summary=trust.summary,
        trustworthy=trust.trustworthy,
        tiers=list(tiers),
        gaps=list(gaps),
        baseline_tier="full",
        gap_margin=gap_margin,
        cost={"text": "$0.0000 (the offline reference judge costs nothing)"},
        review_url=REVIEW,
    )


def read_junit(report: RegressionReport, tmp_path: Path) -> TestSuite:
    path = tmp_path / "junit.xml"
    path.write_text(render_junit(report), encoding="utf-8")
    xml = JUnitXml.fromfile(str(path))
    [suite] = list(xml)
    assert (xml.tests, xml.failures, xml.errors, xml.skipped) == (suite.tests, suite.failures, suite.errors,
                                                                  suite.skipped)  # fmt: skip
    return suite


def outcomes(suite: TestSuite) -> dict[tuple[str, str], str]:
    """(classname, criterion) -> failure | error | skipped | passed, as a CI system reads each case."""
    found = {}
    for case in suite:
        kinds = {Failure: "failure", Error: "error", Skipped: "skipped"}
        result = [kinds[type(r)] for r in case.result if type(r) in kinds]
        found[(case.classname, case.name.partition(":")[0])] = result[0] if result else "passed"
    return found


def regressed_quantized() -> RegressionReport:
    return report_of(
        section("full", comparison("faithfulness", 0.0, -0.1, 0.1), comparison("completeness", 0.1, -0.1, 0.3)),
        section("quantized", comparison("faithfulness", -1.2, -1.5, -0.9), comparison("completeness", 0, -0.2, 0.2)),
    )


def test_a_case_per_tier_and_criterion_fails_exactly_where_the_gate_regressed(tmp_path: Path) -> None:
    report = regressed_quantized()
    assert report.gate.exit_code == 1
    suite = read_junit(report, tmp_path)
    assert (suite.tests, suite.failures, suite.errors, suite.skipped) == (4, 1, 0, 0)
    assert outcomes(suite) == {
        ("judgewatch.regress.full", "faithfulness"): "passed",
        ("judgewatch.regress.full", "completeness"): "passed",
        ("judgewatch.regress.quantized", "faithfulness"): "failure",
        ("judgewatch.regress.quantized", "completeness"): "passed",
    }
    failed = next(c for c in suite if c.classname.endswith("quantized") and c.name.startswith("faithfulness"))
    assert failed.name == "faithfulness: r2 - r1 on halueval_qa_mini"
    assert "interval lies below -0.25" in failed.result[0].message
    assert (
        failed.result[0].text == "candidate - baseline: faithfulness -1.200 [-1.500, -0.900] (r2 2.80 vs r1 4.00, n=40)"
    )


def test_the_suite_properties_name_the_release_judge_trust_and_baselines(tmp_path: Path) -> None:
    suite = read_junit(regressed_quantized(), tmp_path)
    props = {p.name: p.value for p in suite.properties()}
    assert props["release"] == "r2" and props["golden_sets"] == "halueval_qa_mini@abc123"
    assert props["judge"] == f"reference:reference (config {'abc' * 10})"
    assert props["judge.trustworthy"] == "true" and props["judge.trust"] == f"trustworthy: {TRUSTED}"
    assert props["baseline.tier"] == "full" and props["baseline.release.quantized"] == "r1"
    assert props["gate.exit_code"] == "1" and props["gate.summary"].startswith("REGRESSION (exit 1")


def test_an_untrustworthy_judge_is_an_errored_case_never_an_empty_green_suite(tmp_path: Path) -> None:
    untrusted = Trust(False, "judge x: NOT TRUSTWORTHY (known answers: AUROC 0.51)")
    report = report_of(trust=untrusted)
    assert report.gate.exit_code == 2
    suite = read_junit(report, tmp_path)
    assert (suite.tests, suite.failures, suite.errors) == (1, 0, 1)
    [case] = list(suite)
    assert case.result[0].message == "judge not trustworthy: judge x: NOT TRUSTWORTHY (known answers: AUROC 0.51)"
    props = {p.name: p.value for p in suite.properties()}
    assert props["judge.trustworthy"] == "false"


def test_a_tier_the_gate_could_not_evaluate_errors_its_cases_and_a_down_tier_has_its_own(tmp_path: Path) -> None:
    flaky = section(
        "quantized", comparison("faithfulness", 0.0, -0.1, 0.1), unscored=20, unscored_reasons={"parse_error": 20}
    )
    down = TierEvaluation("fp8", None, endpoint_ok=False, endpoint_detail="http://127.0.0.1:9/v1 did not answer")
    report = report_of(section("full", comparison("faithfulness", 0.0, -0.1, 0.1)), flaky, down=(down,))
    assert report.gate.exit_code == 2 and len(report.gate.reasons) == 2
    suite = read_junit(report, tmp_path)
    assert (suite.tests, suite.failures, suite.errors) == (3, 0, 2)
    found = outcomes(suite)
    assert found[("judgewatch.regress.quantized", "faithfulness")] == "error"
    assert found[("judgewatch.regress.full", "faithfulness")] == "passed"
    [fp8] = [c for c in suite if c.classname == "judgewatch.regress.fp8"]
    assert fp8.result[0].message == "tier fp8: endpoint unreachable: http://127.0.0.1:9/v1 did not answer"


def test_a_first_release_and_an_ungated_tier_gap_are_skipped_a_gated_one_decides(tmp_path: Path) -> None:
    trailing = Comparison("faithfulness", "quantized", "full", 3.0, 4.0, PairedDiff(-1.0, -1.3, -0.7, 40, 0, "BCa"))
    first = section("full", baseline=None), section("quantized", baseline=None)
    ungated = read_junit(report_of(*first, gaps=(trailing,)), tmp_path)
    assert (ungated.tests, ungated.failures, ungated.errors, ungated.skipped) == (3, 0, 0, 3)
    gated_report = report_of(*first, gaps=(trailing,), gap_margin=0.5)
    assert gated_report.gate.exit_code == 1
    gated = read_junit(gated_report, tmp_path)
    assert outcomes(gated)[("judgewatch.regress.quantized-vs-full", "faithfulness")] == "failure"


def test_characters_xml_cannot_carry_are_replaced_not_written(tmp_path: Path) -> None:
    report = report_of(problems=("answers.jsonl:3: id bad\x01id: unknown id",))
    suite = read_junit(report, tmp_path)
    assert suite.errors == 1 and "bad\ufffdid" in next(iter(suite)).result[0].message


@pytest.mark.parametrize(
    "report",
    [
        regressed_quantized(),
        report_of(section("full", comparison("faithfulness", 0.0, -0.1, 0.1))),
        report_of(trust=Trust(None, "judge x: UNMEASURED (no trust record)")),
        report_of(section("full", comparison("faithfulness", 0.0, 0.0, 0.0, n=1)), problems=("dataset x invalid",)),
    ],
    ids=["regression", "pass", "unmeasured", "problem"],
)
def test_the_junit_file_is_green_exactly_when_the_gate_passed(report: RegressionReport, tmp_path: Path) -> None:
    suite = read_junit(report, tmp_path)
    assert suite.failures == len(report.gate.regressions)
    assert (suite.errors > 0) == (report.gate.exit_code == 2)
    assert (suite.failures + suite.errors == 0) == (report.gate.exit_code == 0)


def test_the_summary_states_the_verdict_the_table_the_judge_the_cost_and_links_the_worst_items() -> None:
    report = regressed_quantized()
    report.tiers[1].worst = [
        WorstItem("halueval_qa_mini/q7", "Who wrote | it?", "A", "B", 1.0, "A", 5.0, interaction_id="i-7"),
    ]
    text = render_summary(report)
    lines = text.splitlines()
    assert lines[0] == "### Release gate: r2: REGRESSION (exit 1)"
    assert lines[2] == report.gate.summary
    header = (
        "| tier | criterion | candidate − baseline | estimate [95% CI] | margin | verdict | detectable drop (80%) |"
    )
    assert header in lines
    assert "| quantized | faithfulness | r2 − r1 | -1.200 [-1.500, -0.900] | 0.25 | REGRESSED | n/a |" in lines
    assert "| full | completeness | r2 − r1 | +0.100 [-0.100, +0.300] | 0.25 | ok | n/a |" in lines
    # the gate's power where the paired differences' spread is known: the same figure the report states
    spread = comparison("relevance", 0.0, -0.1, 0.1)
    spread = replace(spread, diff=replace(spread.diff, sd=1.0))
    power = f"{detectable_drop(1.0, 40, 0.25):.2f}"
    assert (
        f"| full | relevance | r2 − r1 | +0.000 [-0.100, +0.100] | 0.25 | ok | {power} |"
        in render_summary(report_of(section("full", spread))).splitlines()
    )
    assert f"- judge trust: trustworthy: {TRUSTED}" in lines
    assert "- judge cost of this release so far: $0.0000 (the offline reference judge costs nothing)" in lines
    link = "[halueval_qa_mini/q7](https://review.example.org/?item=i-7)"
    assert f"- quantized: {link} (Δ -4.00, now 1.00): Who wrote \\| it?" in lines


def test_a_summary_that_could_not_evaluate_lists_why_and_an_accepted_judge_comes_first() -> None:
    failed = render_summary(report_of(problems=("tier quantized: answers.jsonl: answers no item",)))
    assert failed.startswith("### Release gate: r2: COULD NOT EVALUATE (exit 2)\n")
    assert "- could not evaluate: tier quantized: answers.jsonl: answers no item" in failed
    accepted = Trust(None, "ACCEPTED ON PURPOSE (--accept-unvalidated-judge): judge x: UNMEASURED", True)
    report = report_of(section("full", comparison("faithfulness", 0.0, -0.1, 0.1)), trust=accepted)
    assert report.gate.exit_code == 0
    assert render_summary(report).startswith(f"**WARNING: {report.gate.accepted_unvalidated}**\n")
