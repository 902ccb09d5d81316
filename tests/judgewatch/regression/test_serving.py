"""Tier specifications (`full=URL#MODEL`, `--answers TIER=FILE`) and recorded answers files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from judgewatch.regression.answer_prompt import answer_messages
from judgewatch.regression.serving import (
    TierError,
    answer_coverage,
    load_recorded_answers,
    parse_answers,
    parse_tier,
    parse_tiers,
    write_recorded_answers,
)


def test_live_tier_splits_name_url_and_model_at_the_first_hash() -> None:
    spec = parse_tier("full=http://127.0.0.1:8000/v1/#org/model#v2")
    assert (spec.name, spec.kind, spec.base_url) == ("full", "live", "http://127.0.0.1:8000/v1")
    assert spec.model == "org/model#v2"
    assert spec.source == "live:http://127.0.0.1:8000/v1#org/model#v2"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("full", "expected NAME=URL#MODEL"),
        ("=http://h/v1#m", "expected NAME=URL#MODEL"),
        ("full=http://127.0.0.1:8000/v1", "missing '#MODEL'"),
        ("full=http://127.0.0.1:8000/v1#", "missing '#MODEL'"),
        ("full=127.0.0.1:8000#m", "is not an http(s) URL"),
        ("fu ll=http://h/v1#m", "tier name"),
    ],
)
def test_malformed_tier_is_rejected_with_the_reason(text: str, expected: str) -> None:
    with pytest.raises(TierError, match=expected.replace("(", r"\(").replace(")", r"\)")):
        parse_tier(text)


def test_recorded_tier_keeps_its_file_as_the_answer_source(tmp_path: Path) -> None:
    spec = parse_answers(f"quantized={tmp_path / 'a.jsonl'}")
    assert spec.kind == "recorded" and spec.answers_path == tmp_path / "a.jsonl"
    assert spec.source == f"recorded:{tmp_path / 'a.jsonl'}"


def test_a_tier_name_given_twice_is_an_error() -> None:
    with pytest.raises(TierError, match="'full' is given more than once"):
        parse_tiers(["full=http://h/v1#m"], ["full=answers.jsonl"])


def test_no_tier_at_all_is_an_error_naming_the_options_and_the_flow_parameters() -> None:
    with pytest.raises(TierError, match="no tier given") as error:
        parse_tiers([], [])
    assert "--answers NAME=FILE" in str(error.value) and "flow parameters: tiers_file" in str(error.value)


def _write(path: Path, *lines: str) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_recorded_answers_load_by_id_and_accept_integer_ids(tmp_path: Path) -> None:
    path = _write(tmp_path / "a.jsonl", '{"id": "q1", "answer": "Paris"}', "", '{"id": 2, "answer": ""}')
    assert load_recorded_answers(path, expected_ids={"q1", "2"}) == {"q1": "Paris", "2": ""}


@pytest.mark.parametrize(
    ("second_line", "expected_ids", "message"),
    [
        ('{"id": "q2", "answer": ', None, "not valid JSON"),
        ('{"id": "q2"}', None, "id q2: 'answer' must be a string, got missing"),
        ('{"id": "q1", "answer": "y"}', None, "id q1: duplicate of line 1"),
        ('{"id": "q9", "answer": "y"}', {"q1", "q2"}, "id q9: unknown id"),
    ],
    ids=["invalid-json", "missing-answer", "duplicate-id", "unknown-id"],
)
def test_a_bad_second_line_is_an_error_naming_file_line_and_id(
    tmp_path: Path, second_line: str, expected_ids: set[str] | None, message: str
) -> None:
    path = _write(tmp_path / "a.jsonl", '{"id": "q1", "answer": "x"}', second_line)
    with pytest.raises(TierError, match=rf"{path}:2: {message}"):
        load_recorded_answers(path, expected_ids=expected_ids)


def test_a_file_answering_some_golden_items_loads_and_names_the_ones_it_lacks(tmp_path: Path) -> None:
    path = _write(tmp_path / "a.jsonl", '{"id": "q1", "answer": "x"}', '{"id": "p2", "answer": "y"}')
    answers = load_recorded_answers(path, expected_ids={"q1", "q2", "q3", "p1", "p2"})
    assert answers == {"q1": "x", "p2": "y"}
    golden = {"qa": ["q1", "q2", "q3"], "other": ["p1", "p2"], "full": ["q1"]}
    assert answer_coverage(path, answers, golden) == {"qa": ["q2", "q3"], "other": ["p1"]}


def test_a_file_answering_no_item_of_a_golden_set_is_an_error_naming_file_and_set(tmp_path: Path) -> None:
    path = _write(tmp_path / "a.jsonl", '{"id": "q1", "answer": "x"}')
    with pytest.raises(TierError, match=rf"^{path}: answers no item of golden set other \(2 items\)$"):
        answer_coverage(path, {"q1": "x"}, {"qa": ["q1", "q2"], "other": ["p1", "p2"]})


def test_an_unreadable_or_empty_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(TierError, match="cannot read the answers file"):
        load_recorded_answers(tmp_path / "missing.jsonl")
    with pytest.raises(TierError, match="no answers"):
        load_recorded_answers(_write(tmp_path / "empty.jsonl", ""))


def test_written_answers_read_back_unchanged(tmp_path: Path) -> None:
    pairs = [("a", "第一"), ("b", 'say "hi"\nthen go')]
    path = tmp_path / "sub" / "answers.jsonl"
    assert write_recorded_answers(path, pairs) == 2
    assert load_recorded_answers(path) == dict(pairs)
    assert json.loads(path.read_text(encoding="utf-8").splitlines()[0]) == {"id": "a", "answer": "第一"}


def test_answer_prompt_gives_the_facts_as_context_in_the_item_language() -> None:
    en = answer_messages("Who?", ["Fact one.", "Fact two."], "en")
    assert en[0]["role"] == "system" and "only the context" in en[0]["content"]
    assert en[1]["content"] == "Context:\n- Fact one.\n- Fact two.\n\nQuestion: Who?"
    zh = answer_messages("谁？", ["事实。"], "zh")
    assert "资料" in zh[0]["content"] and zh[1]["content"].endswith("问题：谁？")
