"""`judgewatch ingest serve`: receive OTLP/HTTP traces, store the sampled LLM spans as interactions."""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Annotated

import typer

from judgewatch.cli._store import DatabaseUrl, fail, store

app = typer.Typer(help="OTLP traces in: receive OpenTelemetry GenAI / OpenInference spans.", no_args_is_help=True)


@app.command("serve")
def serve(
    config: Annotated[
        Path | None,
        typer.Option(help="Source YAML of kind otlp: name, sampling rates, tiers, filters, PII (default: name otlp)."),
    ] = None,
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on (4318 is OTLP/HTTP's).")] = 4318,
    database_url: DatabaseUrl = None,
) -> None:
    """Serve POST /v1/traces until interrupted; senders authenticate with JUDGEWATCH_INGEST_TOKEN as bearer."""
    import uvicorn

    from judgewatch.ingest.server import create_app
    from judgewatch.ingest.store import SpanStore
    from judgewatch.settings import get_settings
    from judgewatch.traffic.config import SourceConfig, SourceConfigError, load_source_config

    token = get_settings().ingest_token
    if token is None or not token.get_secret_value():
        fail("set JUDGEWATCH_INGEST_TOKEN: the receiver does not accept unauthenticated spans")
    try:
        source = load_source_config(config) if config else SourceConfig(name="otlp", kind="otlp")
    except SourceConfigError as exc:
        fail(exc)
    if source.kind != "otlp":
        fail(f"{config}: kind: the receiver needs a source of kind otlp, got {source.kind}")
    with store(database_url) as engine:
        app_ = create_app(SpanStore(engine, source), token.get_secret_value())
        typer.echo(f"receiving OTLP/HTTP traces on http://{host}:{port}/v1/traces as source {source.name}", err=True)
        import opentelemetry.proto.collector.trace.v1.trace_service_pb2  # noqa: F401  (every request decodes with it)

        # What is alive now (modules, the engine, the sampler) lives as long as the server: frozen, it is not walked
        # again by every full collection, which cost 17% of the receiver's CPU (bench/README.md).
        gc.freeze()
        uvicorn.run(app_, host=host, port=port, log_level="warning", access_log=False)


@app.command("judge")
def judge(
    source: Annotated[str, typer.Option(help="Name of the otlp source whose stored picks to judge.")] = "otlp",
    judge: Annotated[str, typer.Option(help="Judge: `reference`, an endpoint URL, or URLs separated by commas.")] = (
        "reference"
    ),
    rubric: Annotated[str, typer.Option(help="Rubric name (rubrics/<name>.yaml).")] = "answer_quality",
    database_url: DatabaseUrl = None,
) -> None:
    """Judge the received picks not judged yet under the rubric and judge; route a share of the verdicts to review."""
    import asyncio

    from judgewatch.ingest.judging import judge_new_picks
    from judgewatch.settings import get_settings

    with store(database_url) as engine:
        counts = asyncio.run(judge_new_picks(engine, get_settings(), source=source, rubric=rubric, judge=judge))
    judged = counts["judged"]
    total = sum(judged.values()) if isinstance(judged, dict) else 0
    typer.echo(f"source {source}: judged {total} {judged}, {counts['already_judged']} already judged, "
               f"routed {counts['routed']} ({counts['review_items_created']} new review items)")  # fmt: skip
    if counts["paused"]:
        typer.echo(f"paused: {counts['paused']}")
