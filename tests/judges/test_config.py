"""One endpoint configuration: built once from the settings, checked when built, taken by every OpenAI client."""

from __future__ import annotations

import pytest

from judges.base import config_hash
from judges.config import EndpointConfig, judge_endpoint
from judges.openai_judge import PROMPT_FORMAT, OpenAIJudge
from judges.pairwise import PAIR_REPLY_MAX_TOKENS, PAIRWISE_FORMAT, OpenAIPairwiseJudge
from judgewatch.contract.rubric import Rubric
from judgewatch.settings import Settings


def test_judge_endpoint_takes_every_client_knob_from_the_settings() -> None:
    settings = Settings(
        judge_url="http://judge:8000/v1/",
        judge_model="m",
        judge_api_key="secret",
        judge_concurrency=3,
        judge_timeout_s=7.5,
        judge_max_retries=4,
        judge_max_tokens=99,
        judge_seed=42,
    )
    endpoint = judge_endpoint(settings)
    expected = EndpointConfig("http://judge:8000/v1", "m", api_key="secret", concurrency=3, timeout_s=7.5)
    assert endpoint == expected.with_changes(max_retries=4, max_tokens=99, seed=42)
    assert "secret" not in repr(endpoint)  # the key never reaches a log line through repr
    override = judge_endpoint(settings, "http://other/v1", model="x", concurrency=9)
    assert (override.base_url, override.model, override.concurrency) == ("http://other/v1", "x", 9)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"base_url": "judge:8000"}, "http"),
        ({"model": ""}, "model name is empty"),
        ({"concurrency": 0}, "concurrency"),
        ({"max_retries": -1}, "max_retries"),
        ({"timeout_s": 0}, "timeout_s"),
        ({"max_tokens": 0}, "max_tokens"),
        ({"top_logprobs": 21}, "top_logprobs"),
    ],
)
def test_an_unusable_value_is_refused_when_the_config_is_built_or_changed(
    changes: dict[str, object], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        EndpointConfig("http://judge/v1", "m").with_changes(**changes)


def test_judges_hash_the_same_scoring_fields_as_before_the_config_object(rubric: Rubric) -> None:
    endpoint = EndpointConfig("http://judge/v1", "m", seed=7, temperature=0.0, max_tokens=160)
    pointwise = OpenAIJudge(endpoint).identity(rubric).config_hash
    expected = config_hash(rubric, model="m", temperature=0.0, seed=7, max_tokens=160, prompt_format=PROMPT_FORMAT)
    assert pointwise == expected  # stored series stay one series across this refactor
    pairwise = OpenAIPairwiseJudge(endpoint)
    assert pairwise.endpoint.max_tokens == PAIR_REPLY_MAX_TOKENS
    assert pairwise.identity(rubric).config_hash == config_hash(
        rubric, model="m", temperature=0.0, seed=7, max_tokens=PAIR_REPLY_MAX_TOKENS, prompt_format=PAIRWISE_FORMAT
    )


def test_the_logprobs_setting_reaches_the_endpoint_and_a_pairwise_judges_hash_ignores_it(rubric: Rubric) -> None:
    endpoint = judge_endpoint(Settings(judge_logprobs=True, judge_top_logprobs=6))
    assert (endpoint.logprobs, endpoint.top_logprobs) == (True, 6)
    assert (judge_endpoint(Settings()).logprobs, judge_endpoint(Settings()).top_logprobs) == (False, 20)
    pairwise = OpenAIPairwiseJudge(endpoint).identity(rubric).config_hash
    assert pairwise == OpenAIPairwiseJudge(endpoint.with_changes(logprobs=False)).identity(rubric).config_hash


def test_declared_serving_flags_enter_the_config_hash_and_none_declared_keeps_it(
    rubric: Rubric, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A declared dtype/quantization change is a new judge series; an undeclared one leaves stored series alone."""
    plain = OpenAIJudge(judge_endpoint(Settings())).identity(rubric).config_hash
    plain_pairwise = OpenAIPairwiseJudge(judge_endpoint(Settings())).identity(rubric).config_hash
    monkeypatch.setenv("JUDGEWATCH_JUDGE_SERVING", '{"dtype": "float32"}')  # what judge_serve.sh's file says
    settings = Settings()
    assert settings.judge_serving == {"dtype": "float32"}
    float32 = OpenAIJudge(judge_endpoint(settings)).identity(rubric).config_hash
    bfloat16 = OpenAIJudge(judge_endpoint(Settings(judge_serving={"dtype": "bfloat16"}))).identity(rubric).config_hash
    quantized = Settings(judge_serving={"quantization": "awq", "dtype": "float32"})
    awq = OpenAIJudge(judge_endpoint(quantized)).identity(rubric).config_hash
    assert len({plain, float32, bfloat16, awq}) == 4
    reordered = Settings(judge_serving={"dtype": "float32", "quantization": "awq"})
    assert OpenAIJudge(judge_endpoint(reordered)).identity(rubric).config_hash == awq  # order is no change
    assert OpenAIPairwiseJudge(judge_endpoint(settings)).identity(rubric).config_hash != plain_pairwise
    with pytest.raises(ValueError, match="judge_serving: every flag needs a name and a value"):
        judge_endpoint(Settings(judge_serving={"dtype": " "}))
