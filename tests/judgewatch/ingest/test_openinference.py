"""An OpenAI client instrumented by `openinference-instrumentation-openai`, calling the simulator, its spans
exported over OTLP/HTTP to the receiver: the LLM span becomes a sampled interaction carrying the documents of
the trace's RETRIEVER span, and is judged."""

from __future__ import annotations

import asyncio

import openai
from openinference.instrumentation.openai import OpenAIInstrumentor
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from sqlalchemy import Engine
from sqlmodel import select

from judges.reference import ReferenceJudge
from judgewatch.contract.rubric import Rubric
from judgewatch.ingest.store import SpanStore
from judgewatch.judging.pipeline import judge_keyed
from judgewatch.storage.db import session_scope
from judgewatch.storage.interactions import Interaction
from judgewatch.testing.ingest_server import run_receiver_in_thread
from judgewatch.testing.simulator import run_simulator_in_thread
from judgewatch.traffic.config import SourceConfig

TOKEN = "openinference-test-token"
DOC = "The Eiffel Tower is 330 metres tall."


def test_openinference_spans_are_stored_with_their_retrieved_documents_and_judged(
    engine: Engine, rubric: Rubric
) -> None:
    config = SourceConfig(name="rag", kind="otlp", sampling={"default_rate": 1.0}, tiers={"sim": "quantized"})
    store = SpanStore(engine, config)
    instrumentor = OpenAIInstrumentor()
    with (
        run_simulator_in_thread(latency_ms=1, model="sim-answerer") as sim,
        run_receiver_in_thread(store, TOKEN) as url,
    ):
        provider = TracerProvider()
        exporter = OTLPSpanExporter(endpoint=f"{url}/v1/traces", headers={"Authorization": f"Bearer {TOKEN}"})
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        instrumentor.instrument(tracer_provider=provider)
        try:
            tracer = provider.get_tracer("rag-app")
            client = openai.OpenAI(base_url=sim.base_url, api_key="sk-test")
            with tracer.start_as_current_span("rag") as root:
                root.set_attribute("openinference.span.kind", "CHAIN")
                with tracer.start_as_current_span("retrieve") as retrieve:
                    retrieve.set_attribute("openinference.span.kind", "RETRIEVER")
                    retrieve.set_attribute("input.value", "How tall is the Eiffel Tower?")
                    retrieve.set_attribute("retrieval.documents.0.document.content", DOC)
                reply = client.chat.completions.create(
                    model="sim-answerer",
                    messages=[
                        {"role": "system", "content": f"Answer from: {DOC}"},
                        {"role": "user", "content": "How tall is the Eiffel Tower?"},
                    ],
                )
            provider.force_flush()
        finally:
            instrumentor.uninstrument()
            provider.shutdown()
    assert store.totals["llm_spans"] == 1 and store.totals["dropped"] == 2  # the chain and the retriever

    with session_scope(engine) as session:
        (stored,) = session.exec(select(Interaction).where(Interaction.source == "traffic:rag")).all()
    assert stored.question == "How tall is the Eiffel Tower?"
    assert stored.answer == reply.choices[0].message.content
    assert stored.model is not None and stored.model.startswith("sim")
    assert stored.tier == "quantized"
    assert stored.context == [DOC]
    assert stored.messages is not None and [m["role"] for m in stored.messages] == ["system", "user"]
    assert stored.meta["tokens"]["prompt"] > 0 and stored.meta["tokens"]["completion"] > 0

    result = asyncio.run(judge_keyed([(stored.id, stored.to_item())], rubric, ReferenceJudge(), engine=engine))
    assert [v.status for v in result.verdicts] == ["scored"]
