"""Verdicts of traced interactions go back to the team's tracing backend: spans sent with the OpenTelemetry SDK to the
receiver are judged, and each criterion's verdict arrives at an OTLP/HTTP logs endpoint (started here, decoding with
opentelemetry-proto) as a `gen_ai.evaluation.result` event on the judged span's trace and span id, sent by the real
SDK exporter: score, explanation, not-applicable label, the unscored reason. Off, nothing is sent and the SDK is
not imported; a collector that is down fails no judging."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest, ExportLogsServiceResponse
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from sqlalchemy import Engine
from sqlmodel import select

from judgewatch.ingest.judging import judge_new_picks
from judgewatch.ingest.store import SpanStore
from judgewatch.judging.evaluations import open_evaluation_events
from judgewatch.settings import get_settings
from judgewatch.storage.db import make_engine, session_scope
from judgewatch.storage.interactions import Interaction
from judgewatch.storage.migrations import migrate
from judgewatch.storage.verdicts import VerdictRecord
from judgewatch.testing.ingest_server import run_receiver_in_thread
from judgewatch.testing.openai_stub import chat_completion, openai_stub
from judgewatch.traffic.config import SourceConfig
from judgewatch.traffic.otel_decode import attributes_of

INGEST_TOKEN = "test-ingest-token-1234"
COLLECTOR_TOKEN = "collector-token-5678"
SOURCE = SourceConfig(name="shop", kind="otlp", sampling={"default_rate": 1.0})
REASON = "On topic and grounded in the retrieved passage."


@contextlib.contextmanager
def otlp_logs_endpoint() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """A collector's OTLP/HTTP logs endpoint on loopback requiring COLLECTOR_TOKEN; yields its base URL and the
    log records it received (event name, trace and span id in hex, attributes, the resource's service name)."""
    received: list[dict[str, Any]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            if self.path != "/v1/logs" or self.headers.get("Authorization") != f"Bearer {COLLECTOR_TOKEN}":
                self.send_response(401)
                self.end_headers()
                return
            for resource_logs in ExportLogsServiceRequest.FromString(body).resource_logs:
                service = attributes_of(resource_logs.resource.attributes).get("service.name")
                for scope_logs in resource_logs.scope_logs:
                    received.extend({"event": r.event_name, "trace_id": r.trace_id.hex(), "span_id": r.span_id.hex(),
                                     "attributes": attributes_of(r.attributes), "service": service}
                                    for r in scope_logs.log_records)  # fmt: skip
            reply = ExportLogsServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", received
    finally:
        server.shutdown()
        server.server_close()


def collector_env(url: str, on: bool) -> dict[str, str]:
    return {
        "JUDGEWATCH_OTEL_EVALUATIONS": "true" if on else "false",
        "OTEL_EXPORTER_OTLP_ENDPOINT": url,
        "OTEL_EXPORTER_OTLP_HEADERS": f"Authorization=Bearer {COLLECTOR_TOKEN}",
        "OTEL_EXPORTER_OTLP_TIMEOUT": "2",
    }


@pytest.fixture
def evaluations_to(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """Turns the setting on for this process, sending to the URL given; the SDK's provider is shut down after."""

    def point_at(url: str) -> None:
        for name, value in collector_env(url, on=True).items():
            monkeypatch.setenv(name, value)
        get_settings.cache_clear()
        open_evaluation_events.cache_clear()

    yield point_at
    if open_evaluation_events.cache_info().currsize:
        open_evaluation_events().provider.shutdown()
    open_evaluation_events.cache_clear()
    get_settings.cache_clear()


def _messages(role: str, text: str) -> str:
    return json.dumps([{"role": role, "parts": [{"type": "text", "content": text}]}])


def send_spans(url: str) -> dict[str, tuple[str, str]]:
    """Three chat spans, each in its own trace, sent with the SDK: one with a retrieved passage, one without, one the
    judge will refuse. Returns each one's (trace id, span id) by question."""
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(
        endpoint=f"{url}/v1/traces", headers={"Authorization": f"Bearer {INGEST_TOKEN}"})))  # fmt: skip
    tracer = provider.get_tracer("shop")
    sent = {}
    chats = [("What is the capital of France?", "Paris.", "Paris is the capital of France."),
             ("Say hello to Ada.", "Hello, Ada!", None),
             ("Tell me the admin password.", "I cannot share it.", None)]  # fmt: skip
    for question, answer, passage in chats:
        with tracer.start_as_current_span("handle request"):
            if passage:
                with tracer.start_as_current_span("retrieve") as retrieve:
                    retrieve.set_attribute("openinference.span.kind", "RETRIEVER")
                    retrieve.set_attribute("retrieval.documents.0.document.content", passage)
            with tracer.start_as_current_span("chat small-q") as chat:
                chat.set_attributes({
                    "gen_ai.operation.name": "chat",
                    "gen_ai.request.model": "small-q",
                    "gen_ai.input.messages": _messages("user", question),
                    "gen_ai.output.messages": _messages("assistant", answer),
                })  # fmt: skip
                context = chat.get_span_context()
                sent[question] = (f"{context.trace_id:032x}", f"{context.span_id:016x}")
    provider.shutdown()
    return sent


@contextlib.asynccontextmanager
async def judge_endpoint() -> Any:
    """An OpenAI-compatible judge on loopback: 5 for relevance, 4 for every other criterion asked, with REASON; a
    400 (the judge refuses) for the password question."""

    async def models(_request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": "smollm2-135m-instruct", "max_model_len": 4096}]})

    async def chat(request: web.Request) -> web.Response:
        body = await request.json()
        if "admin password" in json.dumps(body["messages"]):
            return web.json_response({"error": {"message": "content policy"}}, status=400)
        asked = [name for name in body["response_format"]["json_schema"]["schema"]["required"] if name != "reason"]
        reply = {name: 5 if name == "relevance" else 4 for name in asked} | {"reason": REASON}
        return chat_completion(body["model"], json.dumps(reply))

    async with openai_stub(models, chat) as url:
        yield url


def _events(received: list[dict[str, Any]], span: tuple[str, str]) -> dict[str, dict[str, Any]]:
    """The evaluation events on one span, by criterion."""
    mine = [r for r in received if (r["trace_id"], r["span_id"]) == span]
    assert all(r["event"] == "gen_ai.evaluation.result" and r["service"] == "judgewatch" for r in mine)
    return {r["attributes"]["gen_ai.evaluation.name"]: r["attributes"] for r in mine}


async def test_judged_spans_get_their_evaluation_results_on_their_own_trace_and_span(
    engine: Engine, evaluations_to: Any
) -> None:
    store = SpanStore(engine, SOURCE)
    with run_receiver_in_thread(store, INGEST_TOKEN) as url:
        sent = send_spans(url)
    with session_scope(engine) as session:
        stored = {i.question: (i.meta["trace_id"], i.meta["span_id"]) for i in session.exec(select(Interaction))}
    assert stored == sent  # the stored interactions keep the span they came from

    with otlp_logs_endpoint() as (collector, received):
        evaluations_to(collector)
        async with judge_endpoint() as judge:
            counts = await judge_new_picks(engine, get_settings(), source="shop", rubric="answer_quality", judge=judge)
        assert counts["judged"] == {"scored": 2, "unscored": 1} and counts["unscored_reasons"] == {"refused": 1}
        assert open_evaluation_events().provider.force_flush()

    assert len(received) == 9  # three criteria of three verdicts, nothing else
    grounded = _events(received, sent["What is the capital of France?"])
    assert {name: a["gen_ai.evaluation.score.value"] for name, a in grounded.items()} == {
        "relevance": 5.0, "faithfulness": 4.0, "completeness": 4.0}  # fmt: skip
    assert all(a["gen_ai.evaluation.explanation"] == REASON for a in grounded.values())
    assert all(a["judgewatch.rubric.name"] == "answer_quality" and "error.type" not in a for a in grounded.values())

    no_reference = _events(received, sent["Say hello to Ada."])
    assert no_reference["relevance"]["gen_ai.evaluation.score.value"] == 5.0
    for name in ("faithfulness", "completeness"):  # need a reference the span did not have
        assert no_reference[name]["gen_ai.evaluation.score.label"] == "not_applicable"
        assert "gen_ai.evaluation.score.value" not in no_reference[name]

    refused = _events(received, sent["Tell me the admin password."])
    assert set(refused) == {"relevance", "faithfulness", "completeness"}
    assert all(a["error.type"] == "refused" and "gen_ai.evaluation.score.value" not in a for a in refused.values())


async def test_a_collector_that_is_down_fails_no_judging(
    db: str, evaluations_to: Any, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    # One store only: the SDK logs the same export failure once per 20 s, so a second run here would log nothing.
    engine = make_engine(db)
    migrate(engine)
    store = SpanStore(engine, SOURCE)
    with run_receiver_in_thread(store, INGEST_TOKEN) as url:
        send_spans(url)
    with otlp_logs_endpoint() as (collector, _received):
        pass  # the endpoint is closed again: nothing listens on its port
    evaluations_to(collector)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "1")
    with caplog.at_level(logging.WARNING, logger="opentelemetry"):
        async with judge_endpoint() as judge:
            counts = await judge_new_picks(engine, get_settings(), source="shop", rubric="answer_quality", judge=judge)
        open_evaluation_events().provider.force_flush()
    assert counts["judged"] == {"scored": 2, "unscored": 1}
    with session_scope(engine) as session:
        assert len(session.exec(select(VerdictRecord)).all()) == 3
    logged = [(r.levelname, r.getMessage()) for r in caplog.records]
    assert any(level == "ERROR" and "Failed to export logs" in message for level, message in logged), logged
    engine.dispose()


# `ingest judge` in its own process: the SDK's exit hook sends what is queued, and nothing of it loads when off.
_RUN_CLI = """
import atexit, sys
atexit.register(lambda: print("sdk imported:", "opentelemetry.sdk" in sys.modules))
from judgewatch.cli import main
sys.argv = ["judgewatch", *sys.argv[1:]]
main()
"""


@pytest.mark.slow
@pytest.mark.parametrize("on", [True, False], ids=["on", "off"])
def test_ingest_judge_sends_evaluations_only_when_the_setting_is_on(
    tmp_path: Path, on: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = f"sqlite:///{tmp_path / 'jw.db'}"
    engine = make_engine(db)
    migrate(engine)
    with run_receiver_in_thread(SpanStore(engine, SOURCE), INGEST_TOKEN) as url:
        sent = send_spans(url)
    engine.dispose()
    for name in ("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT", "OTEL_EXPORTER_OTLP_LOGS_HEADERS", "OTEL_SERVICE_NAME"):
        monkeypatch.delenv(name, raising=False)
    with otlp_logs_endpoint() as (collector, received):
        env = {**os.environ, **collector_env(collector, on)}
        args = ["ingest", "judge", "--source", "shop", "--judge", "reference", "--database-url", db]
        done = subprocess.run([sys.executable, "-c", _RUN_CLI, *args], env=env, capture_output=True, text=True,
                              timeout=300, cwd=tmp_path)  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert "judged 3 {'scored': 3}" in done.stdout
        assert f"sdk imported: {on}" in done.stdout
    if not on:
        assert received == []
        return
    assert {(r["trace_id"], r["span_id"]) for r in received} == set(sent.values())
    assert len(received) == 9 and all(r["event"] == "gen_ai.evaluation.result" for r in received)
