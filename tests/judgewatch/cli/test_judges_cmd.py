"""`judgewatch judges validate|list`: measured, stored, listed; `judge` stays the judging command only."""

from __future__ import annotations

import json

import pytest
import typer
from typer.testing import CliRunner, Result

from judges.base import config_hash, plan, scored_verdict
from judges.pairwise import ReferencePairwiseJudge
from judgewatch.cli import judge_cmd, judges_cmd
from judgewatch.contract.items import JudgeItem
from judgewatch.contract.rubric import Rubric
from judgewatch.contract.verdicts import JudgeIdentity, Verdict
from judgewatch.testing.simulator import run_simulator_in_thread


def _app() -> typer.Typer:
    """The two registrations `judgewatch.cli.get_app` makes for these commands."""
    app = typer.Typer()
    app.command("judge")(judge_cmd.judge)
    app.add_typer(judges_cmd.app, name="judges")
    return app


def run(*args: str) -> Result:
    return CliRunner().invoke(_app(), list(args))


def validate(db: str, judge: str, *options: str) -> Result:
    """`judgewatch judges validate --judge JUDGE OPTIONS... --database-url DB`."""
    return run("judges", "validate", "--judge", judge, *options, "--database-url", db)


def test_validate_reference_judge_prints_figures_and_exits_0(db: str) -> None:
    sets = ("--dataset", "halueval_qa_mini", "--dataset", "halluqa_mini")
    result = validate(db, "reference", *sets, "--rubric", "answer_quality", "--rubric", "pairwise_preference")
    assert result.exit_code == 0, result.output
    # model 3.0.1, held out: no mini-set item is among the model's fit items (3.0.0, fit on them: 0.96
    # [0.90, 1.00], gap +2.38; 2.2.0: 0.95, gap +2.98; 2.1.0: the same AUROC, gap +2.90; 2.0.0: +2.83; 1.1.0: 0.96)
    assert "faithfulness  AUROC 0.95 [0.90, 0.99]  gap +2.35  unscored 0%" in result.output
    assert "in-sample" not in result.output
    assert "position consistency 100%" in result.output
    assert "rubric answer_quality 1.1.0: trustworthy" in result.output
    probes = ("verbosity", "confidence", "reference-sensitivity", "injection", "consistency")
    for probe in probes:  # one line per probe and set
        assert len([line for line in result.output.splitlines() if line.startswith(f"  probe {probe}: ")]) == 2
    assert "  probe consistency: judged again identical 20/20 (100% [84%, 100%])" in result.output
    assert "| bias probes | halluqa_mini@" in result.output and "[FAILED]" not in result.output


def test_validate_without_probes_records_not_probed_never_trustworthy(db: str) -> None:
    result = validate(db, "reference", "--dataset", "halluqa_mini", "--no-probes")
    assert result.exit_code == 0, result.output
    assert "  probe " not in result.output and "| bias probes |" not in result.output
    assert "trustworthy" not in result.output.replace("NOT TRUSTWORTHY", "")
    assert "WARNING: " in result.output and "NOT PROBED" in result.output
    listed = run("judges", "list", "--database-url", db)
    assert "not probed" in listed.output and " trusted " not in listed.output


class LengthJudge:
    """Scores every applicable criterion by the answer's length alone: one level per 8 characters."""

    kind = "fake"
    name = "length"

    def identity(self, rubric: Rubric) -> JudgeIdentity:
        return JudgeIdentity(kind=self.kind, name=self.name, config_hash=config_hash(rubric, fake=self.name))

    async def judge(self, item: JudgeItem, rubric: Rubric) -> Verdict:
        to_score, not_applicable = plan(rubric, item)
        level = max(rubric.scale.min, min(rubric.scale.max, 1 + len(item.answer) // 8))
        return scored_verdict(
            item, rubric, self.identity(rubric), dict.fromkeys(to_score, level), not_applicable, "longer is better"
        )

    async def aclose(self) -> None:
        return None


def test_a_length_only_judge_run_without_probes_is_not_trusted(db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A judge that scores by answer length alone separates HalluQA's answers (the right ones are the longer):
    AUROC 0.97, which once printed "trustworthy" with `--no-probes`. Now it is not probed, and probed it fails."""
    import judgewatch.trust.runs as runs

    def length_judge(*_args: object) -> list[runs.JudgeUnderTest]:
        return [runs.JudgeUnderTest("length", LengthJudge(), ReferencePairwiseJudge())]

    monkeypatch.setattr(runs, "judges_under_test", length_judge)
    unprobed = validate(db, "length", "--dataset", "halluqa_mini", "--no-probes")
    assert unprobed.exit_code == 0, unprobed.output
    assert "faithfulness  AUROC 0.9" in unprobed.output  # AUROC alone is fooled
    assert "NOT PROBED" in unprobed.output and ": trustworthy" not in unprobed.output
    probed = validate(db, "length", "--dataset", "halluqa_mini")
    assert probed.exit_code == 1, probed.output
    assert "NOT TRUSTWORTHY" in probed.output and "FAILED verbosity" in probed.output


def test_a_random_judge_is_measured_untrustworthy_and_exits_1(db: str) -> None:
    with run_simulator_in_thread(latency_ms=1) as sim:  # answers schema-valid but arbitrary scores
        result = validate(db, sim.base_url, "--model", "sim-judge", "--dataset", "halluqa_mini")
    assert result.exit_code == 1, result.output
    assert "openai:sim-judge | answer_quality 1.1.0 | known answers | halluqa_mini@" in result.output
    assert "| reference judge AUROC 0.94" in result.output
    assert "NOT TRUSTWORTHY" in result.output

    listed = run("judges", "list", "--database-url", db)
    assert listed.exit_code == 0 and "openai:sim-judge" in listed.output and "NOT TRUSTED" in listed.output
    rows = json.loads(run("judges", "list", "--json", "--database-url", db).output)
    assert [(r["judge"], r["trustworthy"], r["reference_auroc"]) for r in rows] == [
        ("openai:sim-judge", False, 0.9437)
    ]  # 2.2.0 (2.1.0: 0.9359)


def test_an_unreachable_judge_is_not_measured(db: str, closed_port_url: str) -> None:
    result = validate(db, closed_port_url, "--dataset", "halluqa_mini")
    assert result.exit_code == 2 and "not reachable" in result.output
    assert f"no judge has been measured in {db} yet" in run("judges", "list", "--database-url", db).output


def test_unknown_dataset_or_rubric_exits_2(db: str) -> None:
    result = validate(db, "reference", "--dataset", "nope")
    assert result.exit_code == 2 and "no golden set of that name" in result.output
    result = validate(db, "reference", "--dataset", "halluqa_mini", "--rubric", "nope")
    assert result.exit_code == 2 and "unknown rubric 'nope'" in result.output


def test_plain_judge_command_still_takes_its_options() -> None:
    result = run("judge", "--help")
    assert result.exit_code == 0 and "--input" in result.output


def test_judge_validate_is_not_a_second_spelling_of_judges_validate(db: str) -> None:
    result = run("judge", "validate", "--judge", "reference", "--dataset", "halluqa_mini", "--database-url", db)
    assert result.exit_code == 2 and "Usage:" in result.output  # a usage error: one command, one name
    assert f"no judge has been measured in {db} yet" in run("judges", "list", "--database-url", db).output


def test_validate_with_logprobs_prints_the_probability_weighted_reading_under_the_integer_one(db: str) -> None:
    with run_simulator_in_thread(latency_ms=1) as sim:
        options = ("--model", "sim-judge", "--dataset", "halluqa_mini", "--limit", "10", "--no-probes")
        result = validate(db, sim.base_url, *options, "--logprobs")
        plain = validate(db, sim.base_url, *options)
    lines = result.output.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("  faithfulness  AUROC"))
    assert lines[at + 1].strip().startswith("AUROC ") and "probability-weighted" in lines[at + 1], result.output
    assert "without a float 0%" in lines[at + 1]
    assert "probability-weighted" not in plain.output
