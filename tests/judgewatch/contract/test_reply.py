"""The verdict schema is generated from the rubric; replies are validated, cut replies salvaged only when complete."""

from __future__ import annotations

import pytest

from judgewatch.contract.reply import (
    ReplyError,
    pair_response_format,
    parse_pair_reply,
    parse_reply,
    response_format,
    verdict_schema,
)
from judgewatch.contract.rubric import Rubric

ALL = ["relevance", "faithfulness", "completeness"]


def test_schema_puts_scores_before_a_bounded_reason(rubric) -> None:  # type: ignore[no-untyped-def]
    schema = verdict_schema(rubric, ["relevance", "faithfulness"])
    assert list(schema["properties"]) == ["relevance", "faithfulness", "reason"]
    assert schema["properties"]["relevance"] == {"type": "integer", "minimum": 1, "maximum": 5}
    assert schema["properties"]["reason"]["maxLength"] == rubric.reason_max_chars
    assert schema["additionalProperties"] is False


def test_response_format_is_a_json_schema_vllm_enforces(rubric) -> None:  # type: ignore[no-untyped-def]
    fmt = response_format(rubric, ALL)
    assert fmt["type"] == "json_schema"
    assert fmt["json_schema"]["schema"]["required"] == [*ALL, "reason"]


def test_valid_reply_parses(rubric) -> None:  # type: ignore[no-untyped-def]
    scores, reason = parse_reply(rubric, ALL, '{"relevance":5,"faithfulness":2,"completeness":3,"reason":"ok"}')
    assert scores == {"relevance": 5, "faithfulness": 2, "completeness": 3}
    assert reason == "ok"


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("not json", "not JSON"),
        ('{"relevance":6,"faithfulness":2,"completeness":3,"reason":""}', "relevance"),
        ('{"relevance":"5","faithfulness":2,"completeness":3,"reason":""}', "relevance"),
        ('{"relevance":5,"faithfulness":2,"reason":""}', "completeness"),
        ('{"relevance":5,"faithfulness":2,"completeness":3,"reason":"","extra":1}', "extra"),
    ],
)
def test_invalid_replies_are_rejected_with_the_field(rubric, text: str, fragment: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ReplyError, match=fragment) as err:
        parse_reply(rubric, ALL, text)
    assert not err.value.truncated


def test_cut_reply_with_every_score_is_kept(rubric) -> None:  # type: ignore[no-untyped-def]
    scores, reason = parse_reply(
        rubric, ALL, '{"relevance":4,"faithfulness":1,"completeness":2,"reason":"1.1.1.1.1', finish_reason="length"
    )
    assert scores == {"relevance": 4, "faithfulness": 1, "completeness": 2}
    assert reason.endswith("[truncated]")


def test_cut_reply_missing_a_score_is_truncated(rubric) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ReplyError, match="before the score of 'completeness'") as err:
        parse_reply(rubric, ALL, '{"relevance":4,"faithfulness":1,"compl', finish_reason="length")
    assert err.value.truncated


def test_pair_reply_parsing_keeps_a_winner_written_before_a_cut() -> None:
    assert parse_pair_reply('{"winner":"B","reason":"B cites the facts"}') == ("B", "B cites the facts")
    assert parse_pair_reply('{"winner":"tie","reason":"1.1.1.1.1', finish_reason="length")[0] == "tie"
    with pytest.raises(ReplyError) as cut:
        parse_pair_reply('{"win', finish_reason="length")
    assert cut.value.truncated
    with pytest.raises(ReplyError, match="winner"):
        parse_pair_reply('{"winner":"C","reason":""}')


def test_pointwise_and_pairwise_formats_share_the_vllm_json_schema_envelope(rubric: Rubric) -> None:
    pointwise, pairwise = response_format(rubric, ALL), pair_response_format(rubric)
    assert pointwise["type"] == pairwise["type"] == "json_schema"
    assert pointwise["json_schema"]["name"] == pairwise["json_schema"]["name"] == f"{rubric.name}_verdict"
    assert pairwise["json_schema"]["strict"] is True
    assert pairwise["json_schema"]["schema"]["required"] == ["winner", "reason"]
