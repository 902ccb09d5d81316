"""The `otlp` source kind over what the Collector's file exporter writes (JSON lines of export requests, the
active file and its rotated backups): `judgewatch sample` samples, stores and judges the LLM spans with the
same rule, strata and inclusion probabilities as any source, the watermark moves line by line, and the receiver
picks exactly the same spans."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
from sqlalchemy import Engine
from sqlmodel import select
from typer.testing import CliRunner

from judgewatch.cli.sample_cmd import standalone_app
from judgewatch.hashing import interaction_id
from judgewatch.ingest.store import SpanStore
from judgewatch.storage.db import make_engine, session_scope
from judgewatch.storage.interactions import Interaction
from judgewatch.storage.migrations import migrate
from judgewatch.storage.verdicts import VerdictRecord
from judgewatch.testing.ingest_server import run_receiver_in_thread
from judgewatch.testing.otlp_payloads import genai_chat, openinference_llm, request, retriever, span
from judgewatch.traffic import Sampler, load_source_config, read_source
from judgewatch.traffic.sampling import decide

SOURCE = """\
name: collector
kind: otlp
paths: ["traces*.json"]
tiers: {{small-q: quantized, big-fp16: full}}
sampling: {{salt: s1, default_rate: 0.5, rates: {{full: 0.25}}}}
"""


def _requests(first: int, n: int) -> list[dict[str, object]]:
    """n export requests, each a trace with a retriever, a GenAI chat, an OpenInference LLM and a db span."""
    out = []
    for t in range(first, first + n):
        out.append(request(
            retriever(t, 1, f"Order {t} ships in {t % 5 + 1} days."),
            genai_chat(t, 2, f"When does order {t} ship?", f"In {t % 5 + 1} days.", start_s=1_780_000_000.0 + t),
            openinference_llm(t, 3, f"Say hello {t}", f"Hello {t}!"),
            span(t, 4, "SELECT orders", {"db.system": "postgresql"}),
        ))  # fmt: skip
    return out


def _write(path: Path, requests: list[dict[str, object]], mode: str = "w") -> None:
    with path.open(mode) as f:
        for r in requests:
            f.write(json.dumps(r) + "\n")


def _stored(engine: Engine) -> dict[str, Interaction]:
    with session_scope(engine) as session:
        return {i.id: i for i in session.exec(select(Interaction).where(Interaction.source == "traffic:collector"))}


def test_collector_files_are_sampled_stored_and_judged_from_their_watermark(
    tmp_path: Path, prefect_server: None
) -> None:
    _write(tmp_path / "traces-2026-12-04T10-00-00.000.json", _requests(1, 30))  # a rotated backup
    _write(tmp_path / "traces.json", _requests(31, 30))  # the active file
    (tmp_path / "traces.json").open("a").write('{"resourceSpans": [ not json\n')
    (tmp_path / "source.yaml").write_text(SOURCE.format())
    db = f"sqlite:///{tmp_path / 'jw.db'}"
    runner = CliRunner()
    args = ["sample", "--source", str(tmp_path / "source.yaml"), "--database-url", db, "--judge", "reference"]
    first = runner.invoke(standalone_app(), args)
    assert first.exit_code == 0, first.output
    assert "quarantined  1 (invalid_json: 1)" in first.output

    engine = make_engine(db)
    stored = _stored(engine)
    expected = {}
    for t in range(1, 61):
        for span_id, rate in ((2, 0.5), (3, 0.25)):  # the GenAI span is quantized, the OpenInference one full
            iid = interaction_id("traffic:collector", f"{t:032x}:{span_id:016x}")
            if decide(iid, rate, "s1"):
                expected[iid] = rate
    assert set(stored) == set(expected) and 0 < len(stored) < 120
    assert all(stored[i].meta["inclusion_probability"] == expected[i] for i in stored)
    assert all(f"{i.meta['trace_id']}:{i.meta['span_id']}" == i.source_id for i in stored.values())  # the span
    genai = [i for i in stored.values() if i.model == "small-q"]
    assert genai and all(i.context == [f"Order {i.question.split()[3]} ships in {i.answer.split()[1]} days."]
                         for i in genai)  # fmt: skip
    with session_scope(engine) as session:
        judged = {v.interaction_id for v in session.exec(select(VerdictRecord))}
    assert judged == set(stored)

    _write(tmp_path / "traces.json", _requests(61, 10), mode="a")
    second = runner.invoke(standalone_app(), args)
    assert second.exit_code == 0, second.output
    assert "read         20 rows, from the stored watermark" in second.output
    engine.dispose()


def test_the_receiver_picks_what_the_file_source_picks(tmp_path: Path) -> None:
    requests = _requests(1, 40)
    _write(tmp_path / "traces.json", requests)
    (tmp_path / "source.yaml").write_text(SOURCE.format())
    config = load_source_config(tmp_path / "source.yaml")
    from_files = {p.row.interaction_id: (p.stratum, p.inclusion_probability)
                  for p in Sampler(config).run(read_source(config))}  # fmt: skip

    engine = make_engine(f"sqlite:///{tmp_path / 'jw.db'}")
    migrate(engine)
    store = SpanStore(engine, config)
    with run_receiver_in_thread(store, "tok-123456") as url:
        for r in requests:
            reply = httpx.post(f"{url}/v1/traces", json=r, headers={"Authorization": "Bearer tok-123456"})
            assert reply.status_code == 200
    received = {i.id: (i.meta["stratum"], i.meta["inclusion_probability"]) for i in _stored(engine).values()}
    assert received == from_files and len(received) > 0
    engine.dispose()
