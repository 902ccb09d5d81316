"""OTLP/JSON export requests as the Collector's file exporter and OTLP/HTTP JSON senders write them, for tests
and the ingest benchmark: LLM spans in the GenAI or OpenInference conventions, and retriever spans."""

from __future__ import annotations

import json
from typing import Any


def attr(key: str, value: Any) -> dict[str, Any]:
    """One OTLP/JSON attribute (KeyValue) of a str, bool, int or float value."""
    if isinstance(value, bool):
        return {"key": key, "value": {"boolValue": value}}
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    if isinstance(value, float):
        return {"key": key, "value": {"doubleValue": value}}
    return {"key": key, "value": {"stringValue": str(value)}}


def span(trace: int, span_id: int, name: str, attributes: dict[str, Any], start_s: float = 1_780_000_000.0,
         latency_s: float = 0.8) -> dict[str, Any]:  # fmt: skip
    """A span of trace number `trace` (ids are hex of the numbers), started at `start_s` epoch seconds."""
    start = int(start_s * 1e9)
    return {
        "traceId": f"{trace:032x}",
        "spanId": f"{span_id:016x}",
        "name": name,
        "kind": 3,
        "startTimeUnixNano": str(start),
        "endTimeUnixNano": str(start + int(latency_s * 1e9)),
        "attributes": [attr(k, v) for k, v in attributes.items()],
    }


def genai_chat(trace: int, span_id: int, question: str, answer: str, model: str = "small-q",
               **labels: Any) -> dict[str, Any]:  # fmt: skip
    """A chat span in the current GenAI conventions (`gen_ai.input.messages` / `gen_ai.output.messages`)."""
    return span(trace, span_id, f"chat {model}", {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": model,
        "gen_ai.usage.input_tokens": 40,
        "gen_ai.usage.output_tokens": 12,
        "gen_ai.input.messages": json.dumps([{"role": "user", "parts": [{"type": "text", "content": question}]}]),
        "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": answer}]}]),
        **labels,
    })  # fmt: skip


def openinference_llm(trace: int, span_id: int, question: str, answer: str, model: str = "big-fp16") -> dict[str, Any]:
    """An LLM span in the OpenInference conventions (flattened input and output messages)."""
    return span(trace, span_id, "ChatCompletion", {
        "openinference.span.kind": "LLM",
        "llm.model_name": model,
        "llm.input_messages.0.message.role": "user",
        "llm.input_messages.0.message.content": question,
        "llm.output_messages.0.message.role": "assistant",
        "llm.output_messages.0.message.content": answer,
        "llm.token_count.prompt": 30,
        "llm.token_count.completion": 8,
    })  # fmt: skip


def retriever(trace: int, span_id: int, *documents: str) -> dict[str, Any]:
    contents = {f"retrieval.documents.{n}.document.content": text for n, text in enumerate(documents)}
    return span(trace, span_id, "retrieve", {"openinference.span.kind": "RETRIEVER", **contents})


def request(*spans: dict[str, Any], service: str = "shop-assistant") -> dict[str, Any]:
    """An `ExportTraceServiceRequest` holding the spans under one resource and scope."""
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": [attr("service.name", service)]},
                "scopeSpans": [{"scope": {"name": "judgewatch-tests"}, "spans": list(spans)}],
            }
        ]
    }
