"""The receiver's HTTP contract, over a real socket: JSON and protobuf bodies, idempotent re-sends, a bad span
quarantined while the rest of its batch is stored, a malformed payload refused with a 400 and its reason."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator

import httpx
import pytest
from google.protobuf import json_format
from google.rpc.status_pb2 import Status
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from sqlalchemy import Engine, func
from sqlmodel import select

from judgewatch.ingest.store import SpanStore
from judgewatch.storage.db import session_scope
from judgewatch.storage.interactions import Interaction
from judgewatch.storage.quarantine import get_quarantined
from judgewatch.testing.conversations import weather_row
from judgewatch.testing.ingest_server import run_receiver_in_thread
from judgewatch.testing.otlp_payloads import genai_chat, openinference_llm, request, retriever, span
from judgewatch.traffic.config import SourceConfig
from judgewatch.traffic.otel_decode import decode_json

TOKEN = "receiver-http-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture
def receiver(engine: Engine) -> Iterator[tuple[str, SpanStore]]:
    store = SpanStore(engine, SourceConfig(name="app", kind="otlp", sampling={"default_rate": 1.0}))
    with run_receiver_in_thread(store, TOKEN) as url:
        yield url, store


def _count(engine: Engine) -> int:
    with session_scope(engine) as session:
        return int(session.exec(select(func.count()).select_from(Interaction)).one())


def test_json_and_protobuf_resends_store_each_span_once(engine: Engine, receiver: tuple[str, SpanStore]) -> None:
    url, _store = receiver
    payload = request(
        retriever(1, 1, "Refunds take 5 days."),
        genai_chat(1, 2, "How long do refunds take?", "Five days.", **{"judgewatch.route": "billing"}),
        openinference_llm(2, 3, "Hello?", "Hi there."),
        span(2, 4, "db query", {"db.system": "postgresql"}),
    )
    body = json.dumps(payload).encode()
    first = httpx.post(f"{url}/v1/traces", content=body, headers={**AUTH, "Content-Type": "application/json"})
    assert first.status_code == 200 and json.loads(first.text) == {}
    proto = decode_json(body)[0].SerializeToString()
    again = httpx.post(
        f"{url}/v1/traces",
        content=gzip.compress(proto),
        headers={**AUTH, "Content-Type": "application/x-protobuf", "Content-Encoding": "gzip"},
    )
    assert again.status_code == 200
    ExportTraceServiceResponse().ParseFromString(again.content)
    assert _count(engine) == 2  # the same trace and span ids: upserted, not duplicated
    with session_scope(engine) as session:
        billing = session.exec(select(Interaction).where(Interaction.route == "billing")).one()
    assert billing.context == ["Refunds take 5 days."] and billing.answer == "Five days."


def test_a_bad_span_is_quarantined_and_the_rest_of_its_batch_stored(
    engine: Engine, receiver: tuple[str, SpanStore]
) -> None:
    url, store = receiver
    bad_type = genai_chat(3, 1, "Q1?", "A1.")
    bad_type["attributes"].append({"key": "gen_ai.usage.input_tokens", "value": {"intValue": "many"}})
    bad_id = genai_chat(3, 2, "Q2?", "A2.")
    bad_id["spanId"] = "zz"
    no_answer = span(
        3, 3, "chat", {"gen_ai.operation.name": "chat", "gen_ai.input.messages": '[{"role":"user","content":"Q3?"}]'}
    )
    body = json.dumps(request(bad_type, bad_id, no_answer, genai_chat(3, 4, "Q4?", "A4."))).encode()
    reply = httpx.post(f"{url}/v1/traces", content=body, headers={**AUTH, "Content-Type": "application/json"})
    assert reply.status_code == 200
    partial = json_format.Parse(reply.text, ExportTraceServiceResponse()).partial_success
    assert partial.rejected_spans == 3 and "missing_response" in partial.error_message
    assert _count(engine) == 1 and store.totals["quarantined"] == 3
    with session_scope(engine) as session:
        reasons = sorted(q.reason.split(":")[0] for q in get_quarantined(session=session, source="traffic:app"))
    assert reasons == ["missing_response", "wrong_type", "wrong_type"]


def test_malformed_payloads_get_a_400_with_the_reason_and_are_kept(
    engine: Engine, receiver: tuple[str, SpanStore]
) -> None:
    url, _store = receiver
    proto = httpx.post(f"{url}/v1/traces", content=b"\xff\xff\xff not protobuf",
                       headers={**AUTH, "Content-Type": "application/x-protobuf"})  # fmt: skip
    assert proto.status_code == 400
    status = Status()
    status.ParseFromString(proto.content)
    assert "not an ExportTraceServiceRequest protobuf" in status.message
    broken = httpx.post(
        f"{url}/v1/traces", content=b'{"resourceSpans": [', headers={**AUTH, "Content-Type": "application/json"}
    )
    assert broken.status_code == 400 and "not valid JSON" in broken.json()["message"]
    text = httpx.post(f"{url}/v1/traces", content=b"{}", headers={**AUTH, "Content-Type": "text/plain"})
    assert text.status_code == 415
    with session_scope(engine) as session:
        kept = get_quarantined(session=session, source="traffic:app")
    assert len(kept) == 2 and all(q.position.startswith("otlp:") for q in kept)


def test_requests_without_the_token_are_refused(engine: Engine, receiver: tuple[str, SpanStore]) -> None:
    url, store = receiver
    body = json.dumps(request(genai_chat(4, 1, "Q?", "A."))).encode()
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN}):
        reply = httpx.post(f"{url}/v1/traces", content=body, headers={**headers, "Content-Type": "application/json"})
        assert reply.status_code == 401
    assert _count(engine) == 0 and store.totals["requests"] == 0


def test_a_span_holding_a_conversation_stores_its_turns_with_the_tool_call(
    engine: Engine, receiver: tuple[str, SpanStore]
) -> None:
    url, _store = receiver
    turns = weather_row()["messages"]
    genai = [
        {"role": t["role"], "parts": [{"type": "text", "content": t["content"]}]} for t in turns[:4]
    ] + [
        {"role": "assistant", "parts": [{"type": "tool_call", "id": "call_1", "name": "get_weather",
                                         "arguments": {"city": "Paris"}}]},
        {"role": "tool", "parts": [{"type": "tool_call_response", "id": "call_1", "response": {"temp_c": 18}}]},
    ]  # fmt: skip
    chat = genai_chat(5, 1, "unused", "It is 18 °C in Paris right now.")
    for attribute in chat["attributes"]:
        if attribute["key"] == "gen_ai.input.messages":
            attribute["value"] = {"stringValue": json.dumps(genai)}
    reply = httpx.post(f"{url}/v1/traces", content=json.dumps(request(chat)).encode(),
                       headers={**AUTH, "Content-Type": "application/json"})  # fmt: skip
    assert reply.status_code == 200
    with session_scope(engine) as session:
        stored = session.exec(select(Interaction)).one()
    assert stored.question == "What is the weather in Paris right now?"
    assert [m["role"] for m in stored.messages or []] == ["system", "user", "assistant", "user", "assistant", "tool"]
    assert (stored.messages or [])[4]["tool_calls"] == [
        {"id": "call_1", "name": "get_weather", "arguments": '{"city": "Paris"}'}
    ]
    assert (stored.messages or [])[5] == {"role": "tool", "content": '{"temp_c": 18}', "tool_call_id": "call_1"}
    assert stored.to_item().is_conversation
