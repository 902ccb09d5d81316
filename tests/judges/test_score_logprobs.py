"""Probability-weighted verdicts: the request asks for logprobs, the reply's score tokens give each float."""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Callable

import pytest

from judges.config import EndpointConfig
from judges.openai_judge import OpenAIJudge
from judges.score_logprobs import MASKED_LOGPROB, expected_scores, score_positions
from judgewatch.contract.items import JudgeItem
from judgewatch.contract.prompt import render_messages
from judgewatch.contract.rubric import Rubric, Scale
from judgewatch.contract.verdicts import ScoreReading, VerdictStatus
from judgewatch.testing.sim_logprobs import score_distributions
from judgewatch.testing.simulator import SimulatorHandle, prompt_key

ALL = ["relevance", "faithfulness", "completeness"]
MakeItem = Callable[..., JudgeItem]


def _judge(sim: SimulatorHandle, **kw: object) -> OpenAIJudge:
    return OpenAIJudge(EndpointConfig(sim.base_url, "sim-judge", backoff_s=0.01, **kw))  # type: ignore[arg-type]


def _token(text: str, logprob: float, alternatives: list[tuple[str, float]]) -> dict[str, object]:
    return {"token": text, "logprob": logprob, "top_logprobs": [{"token": t, "logprob": v} for t, v in alternatives]}


async def test_a_judge_set_to_read_logprobs_asks_for_them_and_stores_each_scores_expected_value(
    sim: SimulatorHandle, rubric: Rubric, make_item: MakeItem
) -> None:
    item = make_item("p")
    judge = _judge(sim, logprobs=True, top_logprobs=7)
    verdict = await judge.judge(item, rubric)
    await judge.aclose()

    (body,) = sim.state.captured
    assert body["logprobs"] is True and body["top_logprobs"] == 7
    assert verdict.status is VerdictStatus.scored and verdict.score_reading is ScoreReading.expected
    key = prompt_key(render_messages(rubric, item, ALL))
    truth = score_distributions(json.dumps({name: verdict.scores[name] for name in ALL}), key)
    assert set(verdict.expected_scores) == set(ALL)
    for name in ALL:
        mean = sum(level * p for level, p in truth[name].items())
        assert verdict.expected_scores[name] == pytest.approx(mean, abs=1e-3)
        assert abs(verdict.expected_scores[name] - float(verdict.scores[name] or 0)) < 0.5  # the integer is the mode
    assert verdict.output_row()["expected_scores"] == verdict.expected_scores


async def test_without_the_setting_no_logprobs_are_asked_and_the_verdict_reads_integers(
    sim: SimulatorHandle, rubric: Rubric, make_item: MakeItem
) -> None:
    judge = _judge(sim)
    verdict = await judge.judge(make_item("i"), rubric)
    await judge.aclose()

    (body,) = sim.state.captured
    assert "logprobs" not in body and "top_logprobs" not in body
    assert verdict.score_reading is ScoreReading.integer and verdict.expected_scores == {}


async def test_a_reply_without_logprobs_keeps_the_integers_and_warns_once_per_run(
    sim: SimulatorHandle, rubric: Rubric, make_item: MakeItem, caplog: pytest.LogCaptureFixture
) -> None:
    judge = _judge(sim, logprobs=True)
    with caplog.at_level(logging.WARNING, logger="judges.openai_judge"):
        verdicts = [await judge.judge(make_item(f"n{k}", "[[sim:no_logprobs]]"), rubric) for k in range(3)]
    await judge.aclose()

    assert all(v.status is VerdictStatus.scored for v in verdicts)
    assert all(v.score_reading is ScoreReading.no_logprobs and v.expected_scores == {} for v in verdicts)
    warnings = [r for r in caplog.records if "probability-weighted" in r.getMessage()]
    assert len(warnings) == 1 and "no log-probabilities in the reply" in warnings[0].getMessage()


def test_logprobs_are_part_of_the_configuration_hash_only_when_read(rubric: Rubric) -> None:
    plain = OpenAIJudge(EndpointConfig("http://a/v1", "m")).identity(rubric).config_hash
    off = OpenAIJudge(EndpointConfig("http://a/v1", "m", top_logprobs=5)).identity(rubric).config_hash
    on = OpenAIJudge(EndpointConfig("http://a/v1", "m", logprobs=True)).identity(rubric).config_hash
    fewer = OpenAIJudge(EndpointConfig("http://a/v1", "m", logprobs=True, top_logprobs=5)).identity(rubric).config_hash
    assert plain == off and len({plain, on, fewer}) == 3


def test_the_score_token_is_found_when_it_carries_the_text_before_the_digit(rubric: Rubric) -> None:
    # vLLM with disable_any_whitespace writes compact JSON; a BPE tokenizer may fuse '":' with the digit.
    entries = [
        _token('{"', -0.01, []),
        _token("relevance", -0.01, []),
        _token('":', -0.01, []),
        _token("4", math.log(0.6), [("4", math.log(0.6)), ("5", math.log(0.3)), ("3", math.log(0.1))]),
        _token(',"faithfulness', -0.01, []),
        _token('":2', math.log(0.5), [('":2', math.log(0.5)), ('":1', math.log(0.25)), ('":3', math.log(0.25))]),
        _token(',"reason":"ok"}', -0.01, []),
    ]
    assert score_positions(entries, ["relevance", "faithfulness"]) == {"relevance": (3, 0), "faithfulness": (5, 2)}
    read = expected_scores(rubric, {"relevance": 4, "faithfulness": 2}, entries)
    assert read is not None
    assert read["relevance"].expected == pytest.approx(4 * 0.6 + 5 * 0.3 + 3 * 0.1)
    assert read["faithfulness"].expected == pytest.approx(2 * 0.5 + 1 * 0.25 + 3 * 0.25)


def test_masked_and_off_scale_alternatives_are_left_out_and_the_mass_reported(rubric: Rubric) -> None:
    alternatives = [
        ("3", math.log(0.2)),
        ("4", math.log(0.2)),
        ("9", math.log(0.5)),
        ("x", -0.1),
        ("1", MASKED_LOGPROB),
    ]
    entries = [_token('{"relevance":', -0.01, []), _token("3", math.log(0.2), alternatives), _token("}", 0.0, [])]
    read = expected_scores(rubric, {"relevance": 3}, entries)
    assert read is not None
    assert read["relevance"].probs == {3: pytest.approx(0.5), 4: pytest.approx(0.5)}
    assert read["relevance"].mass == pytest.approx(0.4)


def test_the_reading_fails_as_a_whole_when_a_score_token_is_missing_or_not_the_replys(rubric: Rubric) -> None:
    entries = [_token('{"relevance":', -0.01, []), _token("3", -0.1, [("3", -0.1)]), _token("}", 0.0, [])]
    assert expected_scores(rubric, {"relevance": 3, "faithfulness": 2}, entries) is None  # no faithfulness token
    assert expected_scores(rubric, {"relevance": 4}, entries) is None  # the token says 3, the reply 4
    wide = rubric.model_copy(update={"scale": Scale(min=1, max=10)})
    assert expected_scores(wide, {"relevance": 3}, entries) is None  # "1" could start "10": not read
