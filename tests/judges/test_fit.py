"""Prompts fitted to the judge's context window, on the simulator enforcing vLLM's window and its 400 error."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import httpx
import openai
import pytest

from judges.chat_client import ChatClient
from judges.config import EndpointConfig
from judges.errors import classify_exception
from judges.openai_judge import OpenAIJudge
from judges.window import TokenCounter, tokens_bound
from judgewatch.contract.items import JudgeItem
from judgewatch.contract.rubric import Rubric
from judgewatch.contract.verdicts import UnscoredReason, Verdict, VerdictStatus
from judgewatch.testing.conversations import weather_row
from judgewatch.testing.long_items import SUPPORTING, long_answer_item, long_context_item
from judgewatch.testing.sim_tokens import context_length_error, prompt_tokens
from judgewatch.testing.simulator import SimulatorHandle, serve_simulator

WINDOW = 2048
MAX_TOKENS = 160


@pytest.fixture
async def windowed() -> AsyncIterator[SimulatorHandle]:
    async with serve_simulator(latency_ms=5, max_model_len=WINDOW) as handle:
        yield handle


async def _judged(sim: SimulatorHandle, item: JudgeItem, rubric: Rubric, **changes: object) -> Verdict:
    """The verdict of a fresh OpenAIJudge on `sim` (endpoint `changes` applied)."""
    endpoint = EndpointConfig(sim.base_url, sim.state.model, max_retries=0, max_tokens=MAX_TOKENS)
    judge = OpenAIJudge(endpoint.with_changes(**changes) if changes else endpoint)
    try:
        return await judge.judge(item, rubric)
    finally:
        await judge.aclose()


async def test_the_simulator_answers_a_prompt_over_its_window_with_vllms_400(windowed: SimulatorHandle) -> None:
    messages = [{"role": "user", "content": "word " * 3000}]
    body = {"model": "sim-judge", "max_tokens": MAX_TOKENS, "messages": messages}
    async with httpx.AsyncClient() as client:
        reply = await client.post(f"{windowed.base_url}/chat/completions", json=body)
        models = (await client.get(f"{windowed.base_url}/models")).json()
    assert reply.status_code == 400
    error = reply.json()["error"]
    assert error["type"] == "BadRequestError" and error["code"] == 400
    assert error["message"] == context_length_error(WINDOW, prompt_tokens(messages))
    assert error["message"].startswith("This model's maximum context length is 2048 tokens. However, your prompt")
    assert models["data"][0]["max_model_len"] == WINDOW


async def test_the_simulator_clamps_the_reply_of_a_prompt_that_leaves_less_than_max_tokens(
    windowed: SimulatorHandle,
) -> None:
    base = [{"role": "user", "content": ""}]
    words = WINDOW - prompt_tokens(base) - 2  # two tokens left for the reply
    body = {"model": "sim-judge", "max_tokens": MAX_TOKENS, "messages": [{"role": "user", "content": "w " * words}]}
    async with httpx.AsyncClient() as client:
        reply = (await client.post(f"{windowed.base_url}/chat/completions", json=body)).json()
    assert reply["choices"][0]["finish_reason"] == "length"  # vLLM clamps max_tokens instead of refusing
    assert len(reply["choices"][0]["message"]["content"]) <= 2 * 4


async def test_a_context_length_error_that_slips_through_is_too_long_not_refused(
    windowed: SimulatorHandle, rubric: Rubric
) -> None:
    verdict = await _judged(windowed, long_context_item(), rubric, fit_prompt=False)  # the server's 400 comes back
    assert verdict.status == VerdictStatus.unscored
    assert verdict.unscored_reason == UnscoredReason.too_long
    assert "maximum context length" in (verdict.detail or "")
    assert windowed.state.status[400] == 1


def test_only_a_context_length_400_maps_to_too_long() -> None:
    request = httpx.Request("POST", "http://judge/v1/chat/completions")

    def bad_request(message: str) -> openai.BadRequestError:
        response = httpx.Response(400, request=request)
        return openai.BadRequestError(message, response=response, body={"message": message})  # type: ignore[arg-type]

    assert classify_exception(bad_request(context_length_error(2048, 3000))).reason == UnscoredReason.too_long
    openai_style = "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens."
    assert classify_exception(bad_request(openai_style)).reason == UnscoredReason.too_long
    assert classify_exception(bad_request("response_format is not supported")).reason == UnscoredReason.refused


async def test_thirty_long_passages_are_trimmed_to_fit_and_the_verdict_says_how_many_were_kept(
    windowed: SimulatorHandle, rubric: Rubric
) -> None:
    verdict = await _judged(windowed, long_context_item(), rubric)
    assert verdict.status == VerdictStatus.scored, verdict.detail
    trim = verdict.trimmed
    assert trim is not None and trim.exact
    assert trim.passages_given == 30 and 0 < trim.passages_kept < 30
    assert (trim.window, trim.reply_tokens) == (WINDOW, MAX_TOKENS)
    assert trim.prompt_tokens_full > WINDOW
    sent = windowed.state.captured[-1]["messages"]
    assert prompt_tokens(sent) == trim.prompt_tokens_sent == verdict.tokens.prompt
    assert trim.prompt_tokens_sent <= WINDOW - MAX_TOKENS
    user = sent[-1]["content"]
    assert "Clara Voss" in user  # the passage that supports the answer ranks first
    assert user.count("Archive record") < 30 * 14
    assert windowed.state.requests == 1


async def test_an_answer_longer_than_the_window_is_too_long_and_nothing_is_sent(
    windowed: SimulatorHandle, rubric: Rubric
) -> None:
    item = long_answer_item()
    verdict = await _judged(windowed, item, rubric)
    assert verdict.unscored_reason == UnscoredReason.too_long
    assert verdict.attempts == 0 and windowed.state.requests == 0
    detail = verdict.detail or ""
    assert "rubric, question and answer alone take" in detail and f"window is {WINDOW} tokens" in detail
    assert f"{WINDOW - MAX_TOKENS} for the prompt" in detail


async def test_a_short_item_is_sent_whole_and_not_marked_trimmed(
    windowed: SimulatorHandle, rubric: Rubric, make_item: object
) -> None:
    item = JudgeItem(
        id="short", question="Capital of France?", answer="Paris.", reference_answer="Paris", context=["Paris."]
    )
    verdict = await _judged(windowed, item, rubric)
    assert verdict.status == VerdictStatus.scored and verdict.trimmed is None


async def test_a_prompt_under_the_byte_bound_is_sent_without_counting_its_tokens(rubric: Rubric) -> None:
    item = JudgeItem(id="short2", question="Capital of France?", answer="Paris.", reference_answer="Paris")
    async with serve_simulator(latency_ms=5, max_model_len=4 * WINDOW) as sim:  # room for the rubric's bytes
        judge = OpenAIJudge(EndpointConfig(sim.base_url, sim.state.model, max_tokens=MAX_TOKENS))
        try:
            await judge.judge(item, rubric)
            learned = sim.state.tokenize_requests  # the window's probe of /tokenize only
            verdict = await judge.judge(item.model_copy(update={"id": "short3", "answer": "It is Paris."}), rubric)
        finally:
            await judge.aclose()
        assert learned == 1 and sim.state.tokenize_requests == learned
    assert verdict.status == VerdictStatus.scored and verdict.trimmed is None


def test_the_byte_bound_is_never_below_the_simulators_count() -> None:
    for text in ("Paris.", "北京是中国的首都。" * 40, "naïve café " * 100, "x" * 3000):
        messages = [{"role": "system", "content": "Grade the answer."}, {"role": "user", "content": text}]
        assert tokens_bound(messages) >= prompt_tokens(messages)


async def test_concurrent_first_items_learn_the_window_with_one_models_request(windowed: SimulatorHandle) -> None:
    client = ChatClient(EndpointConfig(windowed.base_url, windowed.state.model, max_tokens=MAX_TOKENS))
    counter = TokenCounter(client)
    calls = 0
    card = client.model_card

    async def counted() -> dict[str, object] | None:
        nonlocal calls
        calls += 1
        return await card()

    client.model_card = counted  # type: ignore[method-assign]
    try:
        windows = await asyncio.gather(*(counter.window() for _ in range(32)))
    finally:
        await client.aclose()
    assert calls == 1
    assert {w.size for w in windows if w is not None} == {WINDOW} and None not in windows


async def test_the_health_checks_models_answer_serves_the_window(windowed: SimulatorHandle) -> None:
    """A run checks the judge's health (GET /models), then learns its window: the first request waits for no second
    /models answer (the /tokenize probe goes out beside the card read)."""
    client = ChatClient(EndpointConfig(windowed.base_url, windowed.state.model, max_tokens=MAX_TOKENS))
    try:
        assert await client.health()
        window = await TokenCounter(client).window()
    finally:
        await client.aclose()
    assert window is not None and window.size == WINDOW and window.exact
    assert windowed.state.models_requests == 1 and windowed.state.tokenize_requests == 1


async def test_a_passage_too_long_to_keep_whole_keeps_its_best_sentences(
    windowed: SimulatorHandle, rubric: Rubric
) -> None:
    filler = " ".join(f"Clause {k} of the harbour charter concerns moorings and tolls." for k in range(300))
    item = JudgeItem(
        id="one-huge",
        question="Who designed the Meridian Bridge?",
        answer="Clara Voss designed the Meridian Bridge.",
        context=[filler[: len(filler) // 2] + " " + SUPPORTING + " " + filler[len(filler) // 2 :]],
    )
    verdict = await _judged(windowed, item, rubric)
    assert verdict.status == VerdictStatus.scored, verdict.detail
    trim = verdict.trimmed
    assert trim is not None and (trim.passages_given, trim.passages_kept, trim.passages_partial) == (1, 0, 1)
    user = windowed.state.captured[-1]["messages"][-1]["content"]
    assert "designed by the engineer Clara Voss" in user and " … " in user


async def test_token_counts_are_cached_per_text(windowed: SimulatorHandle, rubric: Rubric) -> None:
    judge = OpenAIJudge(EndpointConfig(windowed.base_url, windowed.state.model, max_tokens=MAX_TOKENS))
    try:
        await judge.judge(long_context_item("a"), rubric)
        first = windowed.state.tokenize_requests
        again = await judge.judge(long_context_item("b"), rubric)  # same texts, another id
    finally:
        await judge.aclose()
    assert again.status == VerdictStatus.scored
    assert windowed.state.tokenize_requests == first  # every passage and both prompts were counted already


async def test_a_server_without_window_or_tokenizer_gets_the_configured_estimate(rubric: Rubric) -> None:
    async with serve_simulator(latency_ms=5, max_model_len=None, tokenizer=False) as sim:
        verdict = await _judged(sim, long_context_item(), rubric, context_window=WINDOW, chars_per_token=3.0)
        sent = sim.state.captured[-1]["messages"]
    assert verdict.status == VerdictStatus.scored
    assert verdict.trimmed is not None and not verdict.trimmed.exact and verdict.trimmed.window == WINDOW
    assert prompt_tokens(sent) <= WINDOW - MAX_TOKENS  # the estimate is conservative


def _long_conversation(exchanges: int, **changes: object) -> JudgeItem:
    """`exchanges` long user/assistant exchanges, then the weather question, its tool call and result."""
    row = weather_row("long-conversation", **changes)
    chatter = [
        turn
        for k in range(exchanges)
        for turn in (
            {"role": "user", "content": f"Exchange {k}: tell me about the harbour charter. " + "Moorings. " * 60},
            {"role": "assistant", "content": f"Reply {k}: the charter covers tolls and moorings. " + "Tolls. " * 60},
        )
    ]
    row["messages"] = [row["messages"][0], *chatter, *row["messages"][3:]]
    return JudgeItem.model_validate(row)


async def test_a_long_conversation_loses_its_oldest_turns_first_and_says_how_many(
    windowed: SimulatorHandle, rubric: Rubric
) -> None:
    item = _long_conversation(12)
    verdict = await _judged(windowed, item, rubric)
    assert verdict.status == VerdictStatus.scored, verdict.detail
    trim = verdict.trimmed
    assert trim is not None and trim.turns_given == 25 and 0 < trim.turns_dropped < 25
    assert trim.passages_kept == trim.passages_given == 1  # the references were not touched
    assert trim.note == f"dropped {trim.turns_dropped} oldest turns of 25"
    user = windowed.state.captured[-1]["messages"][-1]["content"]
    assert "Exchange 0:" not in user and "Reply 11:" in user  # the oldest went, the newest stayed
    assert "You are a travel assistant" not in user  # the system prompt is the oldest turn
    for kept in ("What is the weather in Paris right now?", "get_weather", '"temp_c": 18', "It is 18 °C"):
        assert kept in user
    assert prompt_tokens(windowed.state.captured[-1]["messages"]) == trim.prompt_tokens_sent <= WINDOW - MAX_TOKENS


async def test_when_dropping_every_earlier_turn_is_not_enough_the_references_are_trimmed_next(
    windowed: SimulatorHandle, rubric: Rubric
) -> None:
    context = long_context_item().context
    verdict = await _judged(windowed, _long_conversation(3, context=context), rubric)
    assert verdict.status == VerdictStatus.scored, verdict.detail
    trim = verdict.trimmed
    assert trim is not None and trim.turns_dropped == trim.turns_given == 7
    assert 0 < trim.passages_kept < trim.passages_given
    assert trim.note.startswith("dropped 7 oldest turns of 7; kept ")
