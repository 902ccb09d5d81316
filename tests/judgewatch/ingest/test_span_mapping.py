"""Each convention's LLM span maps to the same question, answer and references (pure functions, no server)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from judgewatch.traffic.otel_decode import Span
from judgewatch.traffic.otel_spans import TraceDocuments, input_messages, kind_of, output_text, payload_rows


def _span(attributes: dict[str, Any], events: list[tuple[str, dict[str, Any]]] | None = None,
          span_id: str = "00000000000000a1") -> Span:  # fmt: skip
    return Span(trace_id="0" * 31 + "1", span_id=span_id, parent_span_id="", name="s", start_ns=1_780_000_000 * 10**9,
                end_ns=1_780_000_001 * 10**9, attributes=attributes, resource={}, events=events or [])  # fmt: skip


DETAILS = "gen_ai.client.inference.operation.details"
QUESTION, ANSWER = "What is the boiling point of water?", "100 degrees Celsius at sea level."
CASES = {
    "openinference messages": _span({
        "openinference.span.kind": "LLM",
        "llm.input_messages.0.message.role": "system", "llm.input_messages.0.message.content": "Be exact.",
        "llm.input_messages.1.message.role": "user",
        "llm.input_messages.1.message.contents.0.message_content.text": QUESTION,
        "llm.output_messages.0.message.role": "assistant", "llm.output_messages.0.message.content": ANSWER,
    }),
    "openinference input/output values": _span({
        "openinference.span.kind": "LLM",
        "input.value": json.dumps({"model": "m", "messages": [{"role": "user", "content": QUESTION}]}),
        "input.mime_type": "application/json",
        "output.value": json.dumps({"choices": [{"message": {"role": "assistant", "content": ANSWER}}]}),
        "output.mime_type": "application/json",
    }),
    "genai current, on an event": _span({"gen_ai.operation.name": "chat"}, [(DETAILS, {
        "gen_ai.input.messages": json.dumps([{"role": "user", "parts": [{"type": "text", "content": QUESTION}]}]),
        "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": ANSWER}]}]),
    })]),
    "genai per-message events": _span({"gen_ai.system": "openai"}, [
        ("gen_ai.user.message", {"content": QUESTION}),
        ("gen_ai.choice", {"message": json.dumps({"role": "assistant", "content": ANSWER}), "index": 0}),
    ]),
    "genai indexed attributes": _span({
        "gen_ai.system": "openai", "gen_ai.prompt.0.role": "user", "gen_ai.prompt.0.content": QUESTION,
        "gen_ai.completion.0.role": "assistant", "gen_ai.completion.0.content": ANSWER,
    }),
}  # fmt: skip


@pytest.mark.parametrize("span", CASES.values(), ids=CASES.keys())
def test_every_convention_gives_the_question_and_answer(span: Span) -> None:
    assert kind_of(span) == "llm"
    assert [m["content"] for m in input_messages(span) if m["role"] == "user"] == [QUESTION]
    assert output_text(span) == ANSWER


def test_genai_tool_calls_and_results_stay_turns_of_the_conversation() -> None:
    span = _span({"gen_ai.operation.name": "chat", "gen_ai.input.messages": json.dumps([
        {"role": "user", "parts": [{"type": "text", "content": "Weather in Paris?"}]},
        {"role": "assistant", "parts": [{"type": "tool_call", "id": "c1", "name": "weather",
                                         "arguments": {"city": "Paris"}}]},
        {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1", "response": "18C, cloudy"}]},
    ])})  # fmt: skip
    assert input_messages(span) == [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "name": "weather",
                                                              "arguments": '{"city": "Paris"}'}]},
        {"role": "tool", "content": "18C, cloudy", "tool_call_id": "c1"},
    ]  # fmt: skip


def test_openinference_tool_calls_and_openai_bodies_keep_their_turns() -> None:
    indexed = _span({
        "openinference.span.kind": "LLM",
        "llm.input_messages.0.message.role": "user", "llm.input_messages.0.message.content": "Weather in Paris?",
        "llm.input_messages.1.message.role": "assistant",
        "llm.input_messages.1.message.tool_calls.0.tool_call.id": "c1",
        "llm.input_messages.1.message.tool_calls.0.tool_call.function.name": "weather",
        "llm.input_messages.1.message.tool_calls.0.tool_call.function.arguments": '{"city": "Paris"}',
        "llm.input_messages.2.message.role": "tool", "llm.input_messages.2.message.tool_call_id": "c1",
        "llm.input_messages.2.message.content": "18C",
    })  # fmt: skip
    body = _span({"openinference.span.kind": "LLM", "input.value": json.dumps({"messages": [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {
            "name": "weather", "arguments": '{"city": "Paris"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "18C"},
    ]})})  # fmt: skip
    for span in (indexed, body):
        turns = input_messages(span)
        assert [t["role"] for t in turns] == ["user", "assistant", "tool"]
        assert turns[1]["tool_calls"] == [{"id": "c1", "name": "weather", "arguments": '{"city": "Paris"}'}]
        assert (turns[2]["tool_call_id"], turns[2]["content"]) == ("c1", "18C")


def test_genai_retrieval_documents_reach_llm_spans_of_the_trace_sent_later() -> None:
    documents = TraceDocuments(max_traces=2)
    retrieval = _span({"gen_ai.operation.name": "retrieval", "gen_ai.retrieval.documents": json.dumps(
        [{"id": "d1", "score": 0.9, "content": "Water boils at 100 C."}])}, span_id="00000000000000b2")  # fmt: skip
    assert payload_rows([retrieval], documents) == ([], 1)  # counted as dropped, its documents remembered
    rows, dropped = payload_rows([CASES["genai indexed attributes"]], documents)
    assert dropped == 0 and rows[0][1]["reference"]["context"] == ["Water boils at 100 C."]  # type: ignore[index]


def test_spans_of_no_llm_convention_are_other() -> None:
    assert kind_of(_span({"http.route": "/ask"})) == "other"
    assert kind_of(_span({"openinference.span.kind": "CHAIN"})) == "other"
    assert kind_of(_span({"gen_ai.operation.name": "embeddings", "gen_ai.system": "openai"})) == "other"
