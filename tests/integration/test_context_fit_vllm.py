"""Prompts fitted to the real vLLM judge's window (SmolLM2-135M, --max-model-len 2048), counted by its /tokenize."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import httpx
import pytest

from judges.config import EndpointConfig
from judges.openai_judge import OpenAIJudge
from judgewatch.contract.rubric import Rubric
from judgewatch.contract.verdicts import UnscoredReason, VerdictStatus
from judgewatch.testing.long_items import long_answer_item, long_context_item

pytestmark = [pytest.mark.vllm, pytest.mark.slow]

MODEL = "smollm2-135m-instruct"
MAX_TOKENS = 160


class SentRequests:
    """Records the chat request bodies the judge sends (an httpx event hook on the judge's own client)."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []

    async def __call__(self, request: httpx.Request) -> None:
        if request.url.path.endswith("/chat/completions"):
            self.bodies.append(request.content)


@pytest.fixture
async def judge(vllm_url: str) -> AsyncIterator[tuple[OpenAIJudge, SentRequests]]:
    judge = OpenAIJudge(EndpointConfig(vllm_url, MODEL, max_tokens=MAX_TOKENS, max_retries=0, timeout_s=120))
    sent = SentRequests()
    client, _ = judge.client._bind()
    client._client.event_hooks["request"].append(sent)  # the AsyncOpenAI's httpx client
    yield judge, sent
    await judge.aclose()


async def _tokens(vllm_url: str, messages: list[dict[str, str]]) -> int:
    async with httpx.AsyncClient(timeout=30) as client:
        reply = await client.post(
            vllm_url.removesuffix("/v1") + "/tokenize",
            json={"model": MODEL, "messages": messages, "add_generation_prompt": True},
        )
    reply.raise_for_status()
    return int(reply.json()["count"])


async def test_thirty_long_passages_are_scored_and_the_request_sent_fits_the_window(
    judge: tuple[OpenAIJudge, SentRequests], rubric: Rubric, vllm_url: str
) -> None:
    openai_judge, sent = judge
    verdict = await openai_judge.judge(long_context_item("vllm-long"), rubric)
    trim = verdict.trimmed
    assert trim is not None and trim.exact and trim.window == 2048 and trim.reply_tokens == MAX_TOKENS
    assert trim.passages_given == 30 and 0 < trim.passages_kept < 30
    assert verdict.unscored_reason != UnscoredReason.too_long and verdict.attempts == 1
    assert verdict.status == VerdictStatus.scored or verdict.unscored_reason in (
        UnscoredReason.parse_error,
        UnscoredReason.truncated,
    ), verdict  # SmolLM2 may still write an unusable reply; the window is not the reason
    assert len(sent.bodies) == 1
    messages = json.loads(sent.bodies[0])["messages"]
    counted = await _tokens(vllm_url, messages)
    assert counted == trim.prompt_tokens_sent <= 2048 - MAX_TOKENS
    assert verdict.tokens.prompt == counted  # what vLLM reported for the request
    assert "Clara Voss" in messages[-1]["content"]


async def test_an_answer_longer_than_the_window_is_too_long_without_a_request(
    judge: tuple[OpenAIJudge, SentRequests], rubric: Rubric
) -> None:
    openai_judge, sent = judge
    verdict = await openai_judge.judge(long_answer_item("vllm-long-answer"), rubric)
    assert verdict.status == VerdictStatus.unscored and verdict.unscored_reason == UnscoredReason.too_long
    assert verdict.attempts == 0 and sent.bodies == []
    assert "window is 2048 tokens" in (verdict.detail or "")


async def test_vllms_own_context_length_error_is_too_long_not_refused(vllm_url: str, rubric: Rubric) -> None:
    unfitted = OpenAIJudge(EndpointConfig(vllm_url, MODEL, max_tokens=MAX_TOKENS, max_retries=0, fit_prompt=False))
    try:
        verdict = await unfitted.judge(long_context_item("vllm-unfitted"), rubric)
    finally:
        await unfitted.aclose()
    assert verdict.unscored_reason == UnscoredReason.too_long
    assert "maximum context length is 2048 tokens" in (verdict.detail or "")
