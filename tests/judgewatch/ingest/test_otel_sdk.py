"""The OpenTelemetry Python SDK, exporting over OTLP/HTTP to the receiver on loopback: LLM spans of both the
current and the older GenAI conventions are stored as sampled interactions with their retrieved documents,
scrubbed, and judged; non-LLM spans are dropped; a span without an answer is quarantined with its reason."""

from __future__ import annotations

import json
import re

from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from sqlalchemy import Engine
from sqlmodel import col, select
from typer.testing import CliRunner

from judgewatch.cli import get_app
from judgewatch.ingest.store import SpanStore
from judgewatch.storage.db import session_scope
from judgewatch.storage.interactions import Interaction
from judgewatch.storage.quarantine import get_quarantined
from judgewatch.storage.verdicts import VerdictRecord
from judgewatch.testing.ingest_server import run_receiver_in_thread
from judgewatch.traffic.config import SourceConfig

TOKEN = "test-ingest-token-1234"


def _export(url: str, token: str = TOKEN) -> None:
    resource = Resource.create({"service.name": "shop-assistant", "service.version": "r7"})
    provider = TracerProvider(resource=resource)
    exporter = OTLPSpanExporter(
        endpoint=f"{url}/v1/traces", headers={"Authorization": f"Bearer {token}"}, compression=Compression.Gzip
    )
    provider.add_span_processor(BatchSpanProcessor(exporter))
    tracer = provider.get_tracer("shop")
    with tracer.start_as_current_span("handle request") as root:
        root.set_attribute("http.route", "/ask")
        with tracer.start_as_current_span("retrieve") as retrieve:
            retrieve.set_attribute("openinference.span.kind", "RETRIEVER")
            retrieve.set_attribute("retrieval.documents.0.document.content", "Paris is the capital of France.")
            retrieve.set_attribute("retrieval.documents.1.document.content", "France is in Western Europe.")
        with tracer.start_as_current_span("chat small-q") as chat:  # current GenAI conventions
            chat.set_attributes({
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "small-q",
                "gen_ai.usage.input_tokens": 31,
                "gen_ai.usage.output_tokens": 9,
                "judgewatch.route": "geo",
                "user.id": "alice@example.com",
                "gen_ai.input.messages": json.dumps([
                    {"role": "user", "parts": [{"type": "text", "content": "What is the capital of France?"}]}
                ]),
                "gen_ai.output.messages": json.dumps([
                    {"role": "assistant", "parts": [{"type": "text", "content": "Paris is the capital of France."}],
                     "finish_reason": "stop"}
                ]),
            })  # fmt: skip
    prompt = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "How tall is Mount Fuji?"}]
    answer = [{"role": "assistant", "content": "Mount Fuji is 3,776 metres tall. Key sk-abcdefghijklmnopqrstuvwx1234"}]
    with tracer.start_as_current_span("chat big") as old:  # older GenAI conventions: content events
        old.set_attributes({"gen_ai.system": "openai", "gen_ai.request.model": "big-fp16"})
        old.add_event("gen_ai.content.prompt", {"gen_ai.prompt": json.dumps(prompt)})
        old.add_event("gen_ai.content.completion", {"gen_ai.completion": json.dumps(answer)})
    with tracer.start_as_current_span("chat cut") as cut:  # no answer recorded: quarantined, never lost silently
        cut.set_attributes({"gen_ai.operation.name": "chat", "gen_ai.input.messages": '[{"role":"user"}]'})
    provider.force_flush()
    provider.shutdown()


def test_sdk_spans_are_stored_sampled_and_judged(engine: Engine) -> None:
    config = SourceConfig(
        name="shop", kind="otlp", tiers={"small-q": "quantized", "big": "full"}, sampling={"default_rate": 1.0}
    )
    store = SpanStore(engine, config)
    with run_receiver_in_thread(store, TOKEN) as url:
        _export(url)
    assert store.totals["llm_spans"] == 2 and store.totals["quarantined"] == 1
    assert store.totals["dropped"] == 2  # the request span and the retriever span

    with session_scope(engine) as session:
        stored = {i.model: i for i in session.exec(select(Interaction).where(Interaction.source == "traffic:shop"))}
        quarantined = get_quarantined(session=session, source="traffic:shop")
    current, older = stored["small-q"], stored["big-fp16"]
    stored_ids = {i.id for i in stored.values()}
    assert current.question == "What is the capital of France?"
    assert current.answer == "Paris is the capital of France."
    assert current.context == ["Paris is the capital of France.", "France is in Western Europe."]
    assert (current.tier, current.route, current.release) == ("quantized", "geo", "r7")
    assert current.meta["inclusion_probability"] == 1.0 and current.meta["stratum"] == "quantized"
    assert current.meta["tokens"] == {"prompt": 31, "completion": 9, "cached": 0}
    attributes = current.meta["attributes"]
    assert attributes["user"] == "[EMAIL]" and attributes["service"] == "shop-assistant"
    assert attributes["latency_ms"] >= 0 and re.fullmatch("[0-9a-f]{32}:[0-9a-f]{16}", current.source_id)
    assert older.question == "How tall is Mount Fuji?" and older.tier == "full"
    assert older.messages is not None and [m["role"] for m in older.messages] == ["system", "user"]
    assert "sk-" not in older.answer and "[SECRET]" in older.answer
    assert [q.reason.split(":")[0] for q in quarantined] == ["missing_response"]

    url = engine.url.render_as_string(hide_password=False)
    judged = CliRunner().invoke(get_app(), ["ingest", "judge", "--source", "shop", "--database-url", url])
    assert judged.exit_code == 0, judged.output
    assert "judged 2 {'scored': 2}, 0 already judged" in judged.output
    with session_scope(engine) as session:
        verdicts = session.exec(select(VerdictRecord).where(col(VerdictRecord.interaction_id).in_(list(stored_ids))))
        assert sorted(v.status for v in verdicts) == ["scored", "scored"]
    again = CliRunner().invoke(get_app(), ["ingest", "judge", "--source", "shop", "--database-url", url])
    assert "judged 0 {}, 2 already judged" in again.output


def test_wrong_token_is_refused_and_nothing_is_stored(engine: Engine) -> None:
    store = SpanStore(engine, SourceConfig(name="shop", kind="otlp", sampling={"default_rate": 1.0}))
    with run_receiver_in_thread(store, TOKEN) as url:
        _export(url, token="not-the-token")
    assert store.totals["requests"] == 0
    with session_scope(engine) as session:
        assert session.exec(select(Interaction)).first() is None
