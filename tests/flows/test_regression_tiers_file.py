"""The regression flow with a tiers file: two tiers behind one gateway that authenticates every call.

The fake gateway (aiohttp on 127.0.0.1) answers 401 without `Authorization: Bearer <key>` and 400 without
its route header, on GET /models as on chat completions, and records every request it accepts: the flow must
send exactly the configured template, params and headers, and the key must never reach the logs, the report or
the store.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from sqlalchemy import inspect, text
from typer.testing import CliRunner

from judgewatch.cli.regress_cmd import standalone_app
from judgewatch.regression.answer_prompt import answer_messages
from judgewatch.regression.golden import load_golden_set
from judgewatch.settings import get_settings
from judgewatch.storage.db import make_engine, session_scope
from judgewatch.storage.releases import accept_baseline, get_release_tiers
from judgewatch.testing.openai_stub import chat_completion, openai_stub

from .conftest import SET, gate

pytestmark = pytest.mark.usefixtures("prefect_server")  # every test runs the flow for real

KEY = "sk-test-7f3a9c1e5b"  # what the gateway accepts; it must appear nowhere judgewatch writes
KEY_ENV = "JW_TEST_GATEWAY_KEY"
TEMPLATE = """{% block system %}You are Acme's support assistant. Reply in {{ language }}.{% endblock %}
{% block user %}Customer question: {{ question }}
Knowledge base:
{% for fact in reference_facts %}* {{ fact }}
{% endfor %}{% endblock %}
"""


@dataclass
class Gateway:
    url: str = ""
    chats: list[tuple[dict[str, Any], dict[str, str]]] = field(default_factory=list)  # (body, lowercased headers)
    refused: list[str] = field(default_factory=list)  # why each refused request was refused

    def by_route(self, route: str) -> list[dict[str, Any]]:
        return [body for body, headers in self.chats if headers.get("x-gateway-route") == route]


@pytest.fixture
async def gateway() -> AsyncIterator[Gateway]:
    gw = Gateway()

    def refuse(request: web.Request) -> web.Response | None:
        if request.headers.get("Authorization") != f"Bearer {KEY}":
            gw.refused.append("auth")
            return web.json_response({"error": {"message": "invalid api key"}}, status=401)
        if request.headers.get("X-Gateway-Route") not in ("full", "quantized"):
            gw.refused.append("route")
            return web.json_response({"error": {"message": "unknown route"}}, status=400)
        return None

    async def models(request: web.Request) -> web.Response:
        return refuse(request) or web.json_response(
            {"object": "list", "data": [{"id": "acme-chat", "object": "model"}]}
        )

    async def chat(request: web.Request) -> web.Response:
        if (refused := refuse(request)) is not None:
            return refused
        body = await request.json()
        gw.chats.append((body, {k.lower(): v for k, v in request.headers.items()}))
        user = body["messages"][-1]["content"]
        fact = next((line[2:] for line in user.splitlines() if line.startswith(("* ", "- "))), "no idea")
        return chat_completion(body["model"], fact)

    async with openai_stub(models, chat) as gw.url:
        yield gw


def tiers_file(folder: Path, url: str, template: str = TEMPLATE) -> Path:
    (folder / "prompts").mkdir(exist_ok=True)
    (folder / "prompts" / "support.j2").write_text(template, encoding="utf-8")
    path = folder / "tiers.yaml"
    path.write_text(
        f"""
tiers:
- name: full
  base_url: {url}
  model: acme-chat
  api_key_env: {KEY_ENV}
  headers: {{X-Gateway-Route: full, X-Tenant: "${{JW_TEST_TENANT}}"}}
  prompt_template: prompts/support.j2
  params: {{temperature: 0.2, max_tokens: 48, seed: 11, stop: ["\\n\\n"], extra_body: {{top_k: 5}}}}
  concurrency: 2
- name: quantized
  base_url: {url}
  model: acme-chat-awq
  api_key_env: {KEY_ENV}
  headers: {{X-Gateway-Route: quantized}}
""",
        encoding="utf-8",
    )
    return path


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)
    monkeypatch.setenv("JW_TEST_TENANT", "acme")


class Recorder(logging.Handler):
    """Every record of the loggers it is attached to, formatted with its arguments and any traceback."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []
        self.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    @property
    def text(self) -> str:
        return "\n".join(self.format(r) for r in self.records)


# Attached to each logger, not only to the root: Prefect reconfigures logging (and the root's handlers) when a
# flow runs, so a root-only handler such as pytest's caplog can miss everything.
LOGGERS = (None, "openai", "httpx", "httpcore", "httpcore2", "judges", "judgewatch", "flows", "prefect")


@pytest.fixture
def logs() -> Iterator[Recorder]:
    recorder = Recorder()
    saved = []
    for name in LOGGERS:
        logger = logging.getLogger(name)
        saved.append((logger, logger.level))
        logger.setLevel(logging.DEBUG)
        logger.addHandler(recorder)
    yield recorder
    for logger, level in saved:
        logger.removeHandler(recorder)
        logger.setLevel(level)


def read(path: str | Path) -> str:
    return Path(path).read_text(encoding="utf-8")


def everything_stored(db: str, folder: Path) -> str:
    """Every row of every table as text, plus the raw bytes of the SQLite files."""
    engine = make_engine(db)
    parts = []
    with engine.connect() as conn:
        for name in inspect(conn).get_table_names():
            parts += [repr(tuple(row)) for row in conn.execute(text(f'SELECT * FROM "{name}"'))]
    for path in folder.glob("jw.db*"):
        parts.append(path.read_bytes().decode("latin-1"))
    return "\n".join(parts)


@pytest.mark.usefixtures("env")
async def test_the_gate_sends_exactly_the_configured_template_params_and_headers(
    tmp_path: Path, gateway: Gateway, logs: Recorder
) -> None:
    db = f"sqlite:///{tmp_path / 'jw.db'}"
    config = tiers_file(tmp_path, gateway.url)
    result = await gate(db, tmp_path, "r1", tiers_file=str(config))
    assert result["exit_code"] == 0, result["summary"]

    items = {i.question: i for i in load_golden_set(SET).items}
    full, quantized = gateway.by_route("full"), gateway.by_route("quantized")
    assert len(full) == len(quantized) == len(items) == 40
    for body in full:
        system, user = body["messages"]
        item = items[user["content"].splitlines()[0].removeprefix("Customer question: ")]
        assert system == {"role": "system", "content": "You are Acme's support assistant. Reply in en."}
        expected = "\n".join([f"Customer question: {item.question}", "Knowledge base:"])
        expected += "".join(f"\n* {fact}" for fact in item.reference_facts)
        assert user == {"role": "user", "content": expected}
        assert body["model"] == "acme-chat"
        assert (body["temperature"], body["max_tokens"], body["seed"]) == (0.2, 48, 11)
        assert body["stop"] == ["\n\n"] and body["top_k"] == 5
    for body in quantized:  # no template, no params: the built-in prompt and the gate's defaults
        item = next(i for i in items.values() if i.question in body["messages"][1]["content"])
        assert body["messages"] == answer_messages(item.question, item.reference_facts, item.language)
        assert body["model"] == "acme-chat-awq" and body["temperature"] == 0
        assert (body["max_tokens"], body["seed"]) == (256, get_settings().judge_seed)
        assert "stop" not in body and "top_k" not in body
    headers = [h for _, h in gateway.chats]
    assert {h["authorization"] for h in headers} == {f"Bearer {KEY}"}
    assert {h.get("x-tenant") for h in headers if h["x-gateway-route"] == "full"} == {"acme"}

    report = read(result["report"])
    data = json.loads(read(result["report_json"]))
    section = next(t for t in data["tiers"] if t["tier"] == "full")
    config_hash = section["config"]["config_hash"]
    assert section["config"]["template"] == "support.j2" and section["config"]["template_hash"]
    assert section["config"]["params"] == {
        "temperature": 0.2,
        "max_tokens": 48,
        "seed": 11,
        "stop": ["\n\n"],
        "top_k": 5,
    }
    assert (
        f"- configuration {config_hash}: model acme-chat at {gateway.url}, prompt template support.j2 (hash " in report
    )
    assert f"- api key: ${KEY_ENV} (masked); headers: X-Gateway-Route: full, X-Tenant: ${{JW_TEST_TENANT}}" in report
    assert "- params: temperature 0.2, max_tokens 48, seed 11" in report
    with session_scope(make_engine(db)) as session:
        tiers = {r.tier: r for r in get_release_tiers(session=session, release="r1")}
        assert tiers["full"].config_hash == config_hash != tiers["quantized"].config_hash
    with make_engine(db).connect() as conn:
        metas = [
            json.loads(m) for m in conn.execute(text("SELECT metadata FROM interaction WHERE tier = 'full'")).scalars()
        ]
    assert {m["tier_config"] for m in metas} == {config_hash}

    again = await gate(db, tmp_path, "r1", tiers_file=str(config))
    assert again["exit_code"] == 0 and len(gateway.chats) == 80  # same configuration: stored answers reused

    written = [report, read(result["report_json"]), json.dumps(result)]
    assert {"openai._base_client", "judgewatch.regression.report"} <= {r.name for r in logs.records}
    assert KEY not in logs.text and all(KEY not in w for w in written)
    assert KEY not in everything_stored(db, tmp_path)


@pytest.mark.usefixtures("env")
async def test_a_changed_prompt_template_is_a_new_configuration_and_is_asked_again(
    tmp_path: Path, gateway: Gateway
) -> None:
    db = f"sqlite:///{tmp_path / 'jw.db'}"
    first = await gate(db, tmp_path, "r1", tiers_file=str(tiers_file(tmp_path, gateway.url)))
    assert first["exit_code"] == 0, first["summary"]
    with session_scope(make_engine(db), write=True) as session:
        accept_baseline(session=session, release="r1", by="test")
    changed = tiers_file(tmp_path, gateway.url, TEMPLATE.replace("support assistant", "concise assistant"))
    second = await gate(db, tmp_path, "r2", tiers_file=str(changed))
    assert any(
        n.startswith("tier full: serving configuration changed since baseline r1") and "template_hash" in n
        for n in second["notes"]
    ), second["notes"]
    assert not any(n.startswith("tier quantized: serving configuration") for n in second["notes"])
    rerun = await gate(db, tmp_path, "r1", tiers_file=str(changed))  # r1 again, under the new template
    assert len(gateway.by_route("full")) == 40 * 3 and len(gateway.by_route("quantized")) == 40 * 2
    assert rerun["exit_code"] == 0


@pytest.mark.usefixtures("env")
async def test_without_the_key_the_tier_is_unreachable_and_the_variable_is_named(
    tmp_path: Path, gateway: Gateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(KEY_ENV)
    db = f"sqlite:///{tmp_path / 'jw.db'}"
    config = tiers_file(tmp_path, gateway.url)
    result = await gate(db, tmp_path, "r1", tiers_file=str(config))
    assert result["exit_code"] == 2, result["summary"]
    missing = f"environment variable {KEY_ENV} is not set (api_key_env of tier full in {config})"
    assert f"tier full: endpoint unreachable: {missing}" in result["summary"]
    assert gateway.chats == [] and gateway.refused == []  # nothing was sent without the key


@pytest.mark.usefixtures("env")
async def test_a_wrong_key_is_reported_as_refused_credentials_without_the_key(
    tmp_path: Path, gateway: Gateway, monkeypatch: pytest.MonkeyPatch, logs: Recorder
) -> None:
    wrong = "sk-wrong-0d1e2f"
    monkeypatch.setenv(KEY_ENV, wrong)
    db = f"sqlite:///{tmp_path / 'jw.db'}"
    result = await gate(db, tmp_path, "r1", tiers_file=str(tiers_file(tmp_path, gateway.url)))
    assert result["exit_code"] == 2
    assert f"{gateway.url} refused the credentials (HTTP 401) with the key in ${KEY_ENV}" in result["summary"]
    assert gateway.chats == [] and "auth" in gateway.refused
    assert any(r.name.startswith("judgewatch") for r in logs.records)
    texts = [logs.text, read(result["report"]), everything_stored(db, tmp_path)]
    assert all(wrong not in t for t in texts)


@pytest.mark.usefixtures("env")
async def test_the_tiers_document_can_come_from_a_prefect_variable(tmp_path: Path, gateway: Gateway) -> None:
    from prefect.variables import Variable

    config = tiers_file(tmp_path, gateway.url)
    document = config.read_text(encoding="utf-8").replace("prompts/support.j2", str(tmp_path / "prompts/support.j2"))
    await Variable.aset("jw-test-tiers", document, overwrite=True)
    db = f"sqlite:///{tmp_path / 'jw.db'}"
    result = await gate(db, tmp_path, "r1", tiers_variable="jw-test-tiers")
    assert result["exit_code"] == 0, result["summary"]
    assert len(gateway.by_route("full")) == 40 and gateway.by_route("full")[0]["max_tokens"] == 48
    missing = await gate(db, tmp_path, "r2", tiers_variable="jw-test-no-such-variable")
    assert missing["exit_code"] == 2 and "variable 'jw-test-no-such-variable': not set" in missing["summary"]


def test_the_cli_reads_a_tiers_file_and_names_file_tier_and_field_when_it_is_bad(tmp_path: Path) -> None:
    bad = tmp_path / "tiers.yaml"
    bad.write_text("- {name: full, base_url: 'http://127.0.0.1:9/v1', model: m, params: {max_token: 5}}\n")
    db = f"sqlite:///{tmp_path / 'jw.db'}"
    args = ["regress", "--release", "r1", "--dataset", SET, "--judge", "reference", "--database-url", db]
    done = CliRunner().invoke(standalone_app(), [*args, "--tiers", str(bad), "--report", str(tmp_path / "r1.md")])
    assert done.exit_code == 2, done.output
    assert f"{bad}: tier 'full' (tiers[0]): field 'params.max_token': Extra inputs are not permitted" in done.output
