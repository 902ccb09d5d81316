"""Deterministic check criteria: each kind's pass / fail / not applicable, bad specs as one-line errors, the check
judge (kind `check`) with no endpoint, and checks merged into a judged verdict of a mixed rubric."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from sqlalchemy import select
from typer.testing import CliRunner

from judges.base import plan
from judges.checks import CheckJudge
from judges.config import EndpointConfig
from judges.factory import judge_links
from judges.openai_judge import OpenAIJudge
from judges.reference import ReferenceJudge
from judgewatch.cli import get_app
from judgewatch.contract.items import JudgeItem
from judgewatch.contract.rubric import RubricError, load_rubric
from judgewatch.contract.verdicts import UnscoredReason, VerdictStatus
from judgewatch.settings import Settings
from judgewatch.storage.db import make_engine, table
from judgewatch.storage.verdicts import VerdictRecord
from judgewatch.testing.simulator import SimulatorHandle

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = (
    "{% block system %}Grade.{% endblock %}"
    "{% block user %}Criteria to score: {{ to_score | join(', ') }}.\n{{ answer }}{% endblock %}\n"
)
DOWN = "http://127.0.0.1:9/v1"  # the discard port: nothing answers there


def write_rubric(folder: Path, name: str, criteria: list[dict[str, Any]], **extra: Any) -> Path:
    (folder / "t.en.j2").write_text(TEMPLATE, encoding="utf-8")
    doc = {"name": name, "version": "1", "templates": {"en": "t.en.j2"}, "criteria": criteria, **extra}
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(doc, allow_unicode=True), encoding="utf-8")
    return path


def check_rubric(folder: Path, check: dict[str, Any]) -> Path:
    return write_rubric(folder, "one_check", [{"name": "c", "description": "a check", "check": check}])


def item(answer: str, reference: str | None = None, language: str | None = "en") -> JudgeItem:
    return JudgeItem(id="i1", question="What is asked?", answer=answer, reference_answer=reference, language=language)  # type: ignore[arg-type]


async def outcome(tmp_path: Path, check: dict[str, Any], it: JudgeItem) -> tuple[int | None, str, VerdictStatus]:
    rubric = load_rubric(check_rubric(tmp_path, check))
    verdict = await CheckJudge().judge(it, rubric)
    assert verdict.judge.kind == "check"
    return verdict.scores["c"], verdict.reason or verdict.detail or "", verdict.status


SCHEMA = {"type": "object", "required": ["answer"], "properties": {"answer": {"type": "string"}}}
CASES: list[tuple[dict[str, Any], JudgeItem, int | None, str]] = [
    ({"kind": "regex", "pattern": r"\d{4}"}, item("It opened in 1889."), 5, "matched '1889'"),
    ({"kind": "regex", "pattern": r"\d{4}"}, item("It opened long ago."), 1, "not found"),
    ({"kind": "regex", "pattern": "(?i)lorem", "absent": True}, item("Lorem ipsum"), 1, "found 'Lorem'"),
    ({"kind": "regex", "pattern": "lorem", "absent": True}, item("A real answer"), 5, "absent"),
    ({"kind": "json"}, item('{"a": 1}'), 5, "valid JSON"),
    ({"kind": "json"}, item("{a: 1}"), 1, "not valid JSON"),
    ({"kind": "json", "schema": SCHEMA}, item('{"answer": "Paris"}'), 5, "valid against the schema"),
    ({"kind": "json", "schema": SCHEMA}, item('{"answer": 3}'), 1, "schema violated at answer: 3 is not of type"),
    ({"kind": "json", "schema": SCHEMA}, item("{}"), 1, "'answer' is a required property"),
    ({"kind": "reference_match"}, item("  paris ", "Paris"), 5, "equals 'Paris'"),
    ({"kind": "reference_match", "normalize": False}, item("paris", "Paris"), 1, "does not equal"),
    ({"kind": "reference_match", "mode": "contains"}, item("It is Paris.", "paris"), 5, "contains"),
    ({"kind": "reference_match", "mode": "contains"}, item("It is Lyon.", "Paris"), 1, "does not contain"),
    ({"kind": "length", "max_words": 3}, item("one two three"), 5, "within bounds"),
    ({"kind": "length", "max_words": 3}, item("one two three four"), 1, "4 words, more than max_words 3"),
    ({"kind": "length", "min_chars": 10}, item("short"), 1, "5 chars, fewer than min_chars 10"),
    ({"kind": "refusal"}, item("I\u2019m sorry, but I can\u2019t help with that."), 1, "a refusal"),
    ({"kind": "refusal"}, item("Paris is the capital."), 5, "no en refusal phrase"),
    ({"kind": "refusal"}, item("抱歉，我无法回答这个问题。", language="zh"), 1, "'我无法回答'"),
    ({"kind": "refusal", "expect": True}, item("I cannot help with that."), 5, "expected"),
    ({"kind": "refusal", "phrases": {"en": ["Not my department"]}}, item("That is not my department."), 1, "not my"),
]


@pytest.mark.parametrize(("check", "it", "score", "reason"), CASES)
async def test_each_check_kind_passes_or_fails_with_its_reason(
    tmp_path: Path, check: dict[str, Any], it: JudgeItem, score: int, reason: str
) -> None:
    got, why, status = await outcome(tmp_path, check, it)
    assert status == VerdictStatus.scored
    assert got == score, why
    assert reason in why and why.startswith(f"checks: c {'pass' if score == 5 else 'fail'}: ")


async def test_a_check_that_cannot_apply_is_not_applicable_never_a_pass(tmp_path: Path) -> None:
    got, why, status = await outcome(tmp_path, {"kind": "reference_match"}, item("Paris"))
    assert (got, status) == (None, VerdictStatus.unscored)
    assert "no reference answer to match" in why
    rubric = load_rubric(check_rubric(tmp_path, {"kind": "reference_match"}))
    verdict = await CheckJudge().judge(item("Paris"), rubric)
    assert verdict.unscored_reason == UnscoredReason.not_applicable and verdict.not_applicable == ["c"]


async def test_na_check_beside_a_scored_one_is_listed_and_left_out_of_the_overall(tmp_path: Path) -> None:
    criteria = [
        {"name": "exact", "description": "d", "check": {"kind": "reference_match"}},
        {"name": "short", "description": "d", "check": {"kind": "length", "max_chars": 100}},
    ]
    rubric = load_rubric(write_rubric(tmp_path, "two", criteria))
    verdict = await CheckJudge().judge(item("Paris"), rubric)
    assert verdict.status == VerdictStatus.scored
    assert verdict.scores == {"exact": None, "short": 5} and verdict.not_applicable == ["exact"]
    assert verdict.overall == 5.0 and "exact not_applicable: the item has no reference answer" in verdict.reason


BAD_SPECS = [
    ({"kind": "regex", "pattern": "a(b"}, "field 'criteria.0.check.regex.pattern'", "not a valid regular expression"),
    ({"kind": "json", "schema": {"type": "objekt"}}, "field 'criteria.0.check.json.schema'", "not a valid JSON Schema"),
    ({"kind": "regx", "pattern": "a"}, "field 'criteria.0.check'", "'regx'"),
    ({"kind": "length"}, "field 'criteria.0.check.length'", "give at least one of"),
    ({"kind": "length", "min_chars": 5, "max_chars": 2}, "criteria.0.check.length", "min_chars (5) is greater"),
    ({"kind": "reference_match", "mode": "fuzzy"}, "criteria.0.check.reference_match.mode", "'exact' or 'contains'"),
    ({"kind": "json", "shema": {}}, "criteria.0.check.json.shema", "unknown key"),
]


@pytest.mark.parametrize(("check", "field", "problem"), BAD_SPECS)
def test_a_bad_check_spec_is_a_one_line_error_naming_file_and_field(
    tmp_path: Path, check: dict[str, Any], field: str, problem: str
) -> None:
    path = check_rubric(tmp_path, check)
    with pytest.raises(RubricError) as raised:
        load_rubric(path)
    message = str(raised.value)
    assert "\n" not in message and message.startswith(f"{path}: ") and field in message and problem in message


def test_rubric_check_cli_rejects_a_bad_regex_with_one_line(tmp_path: Path) -> None:
    path = check_rubric(tmp_path, {"kind": "regex", "pattern": "[unclosed"})
    result = CliRunner().invoke(get_app(), ["rubric", "check", str(path)])
    assert result.exit_code == 1
    assert f"error: {path}: field 'criteria.0.check.regex.pattern'" in result.output
    assert "not a valid regular expression" in result.output


def test_checks_need_a_pointwise_rubric(tmp_path: Path) -> None:
    criteria = [{"name": "c", "description": "d", "check": {"kind": "json"}}]
    with pytest.raises(RubricError, match="checks need a pointwise rubric"):
        load_rubric(write_rubric(tmp_path, "pair", criteria, kind="pairwise"))


def test_the_config_hash_covers_the_rubric_content(tmp_path: Path) -> None:
    first = CheckJudge().identity(load_rubric(check_rubric(tmp_path, {"kind": "length", "max_words": 3})))
    second = CheckJudge().identity(load_rubric(check_rubric(tmp_path, {"kind": "length", "max_words": 4})))
    assert first.kind == second.kind == "check" and first.config_hash != second.config_hash
    assert CheckJudge.deterministic is True


def test_an_all_check_rubric_gets_the_check_judge_whatever_judge_says(caplog: pytest.LogCaptureFixture) -> None:
    rubric = load_rubric("json_answer", ROOT / "rubrics")
    with caplog.at_level("INFO", logger="judges.factory"):
        links = judge_links(DOWN, Settings(), rubric=rubric)
    assert [type(link) for link in links] == [CheckJudge]
    assert "only check criteria: judged by the check judge" in caplog.text
    with pytest.raises(ValueError, match="--judge"):
        judge_links("not-a-url", Settings(), rubric=rubric)  # a malformed --judge is still an error
    mixed = load_rubric("answer_quality", ROOT / "rubrics")
    assert CheckJudge not in [type(link) for link in judge_links(DOWN, Settings(), rubric=mixed)]


async def test_a_mixed_rubric_asks_the_judge_only_its_criteria_and_merges_the_checks(tmp_path: Path) -> None:
    criteria = [
        {"name": "relevance", "description": "On topic?", "anchors": {n: f"level {n}" for n in range(1, 6)}},
        {"name": "no_refusal", "description": "Answers", "check": {"kind": "refusal"}},
        {"name": "short", "description": "Brief", "check": {"kind": "length", "max_words": 3}},
    ]
    rubric = load_rubric(write_rubric(tmp_path, "mixed", criteria))
    it = JudgeItem(id="m1", question="What is the capital of France?", answer="The capital of France is Paris.")
    assert plan(rubric, it) == (["relevance"], [])  # the judge is not asked the checks
    verdict = await ReferenceJudge().judge(it, rubric)
    assert verdict.status == VerdictStatus.scored and verdict.judge.kind == "reference"
    assert verdict.scores["no_refusal"] == 5 and verdict.scores["short"] == 1
    assert verdict.scores["relevance"] is not None
    assert "checks: no_refusal pass" in verdict.reason and "short fail: 6 words" in verdict.reason
    assert verdict.overall == rubric.overall(verdict.scores)


def test_judge_cli_stores_check_verdicts_with_no_endpoint(tmp_path: Path, db_url: str) -> None:
    rows = [
        {"id": "ok", "question": "Capital of France?", "answer": json.dumps({"answer": "Paris", "confidence": 0.9})},
        {"id": "bad", "question": "Capital of France?", "answer": '{"answer": "Paris", "confidence": 3}'},
        {"id": "prose", "question": "Capital of France?", "answer": "Paris."},
    ]
    items = tmp_path / "items.jsonl"
    items.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    out = tmp_path / "verdicts.jsonl"
    args = ["judge", "--rubric", "json_answer", "--input", str(items), "--output", str(out), "--judge", DOWN]
    result = CliRunner().invoke(get_app(), [*args, "--no-fallback-reference", "--database-url", db_url])
    assert result.exit_code == 0, result.output
    written = {row["id"]: row for row in map(json.loads, out.read_text(encoding="utf-8").splitlines())}
    assert written["ok"]["scores"] == {"json_schema": 5, "not_refused": 5}
    assert written["bad"]["scores"]["json_schema"] == 1 and "confidence: 3 is greater" in written["bad"]["reason"]
    assert written["prose"]["scores"]["json_schema"] == 1 and "not valid JSON" in written["prose"]["reason"]
    engine = make_engine(db_url)
    try:
        with engine.connect() as conn:
            stored = conn.execute(select(table(VerdictRecord).c.judge_kind, table(VerdictRecord).c.status)).all()
    finally:
        engine.dispose()
    assert sorted(stored) == [("check", "scored")] * 3


async def test_the_endpoint_judge_is_not_asked_the_checks_and_its_verdict_carries_them(
    tmp_path: Path, sim: SimulatorHandle
) -> None:
    criteria = [
        {"name": "relevance", "description": "On topic?", "anchors": {n: f"level {n}" for n in range(1, 6)}},
        {"name": "valid_json", "description": "JSON", "check": {"kind": "json"}},
    ]
    rubric = load_rubric(write_rubric(tmp_path, "mixed", criteria))
    judge = OpenAIJudge(EndpointConfig(sim.base_url, "sim-judge", backoff_s=0.01))
    try:
        verdict = await judge.judge(JudgeItem(id="m1", question="Capital of France?", answer='{"a": "Paris"}'), rubric)
    finally:
        await judge.aclose()
    (body,) = sim.state.captured
    schema = body["response_format"]["json_schema"]["schema"]
    assert "valid_json" not in json.dumps(schema) and "relevance" in json.dumps(schema)
    assert "Criteria to score: relevance." in body["messages"][-1]["content"]
    assert verdict.status == VerdictStatus.scored and verdict.judge.kind == "openai"
    assert verdict.scores["valid_json"] == 5 and verdict.scores["relevance"] is not None
    assert verdict.reason.endswith("| checks: valid_json pass: valid JSON")
