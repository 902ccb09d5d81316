"""`judgewatch regress --tiers FILE` with the real vLLM server as a tier, behind a keyed loopback gateway.

The gateway is a small aiohttp proxy in this test: it requires the bearer key and a route header, forwards the
request to the real vLLM server unchanged otherwise, and records what went in and what vLLM answered. So the
test sees that the tier's custom template and max_tokens reached the real model, that vLLM honoured them, and
that the answers stored and judged are the ones vLLM gave.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from sqlalchemy import text

from judgewatch.regression.golden import load_golden_set
from judgewatch.settings import REPO_ROOT
from judgewatch.storage.db import make_engine
from judgewatch.testing.openai_stub import openai_stub

from .conftest import VLLM_MODEL

pytestmark = [pytest.mark.vllm, pytest.mark.slow]

ITEMS = 6
MAX_TOKENS = 12
KEY = "sk-vllm-gateway-4e8d2b"
TEMPLATE = """{% block system %}You are a terse assistant. Use the notes.{% endblock %}
{% block user %}Notes: {{ reference_facts | join(' ') }}
Q: {{ question }}
A:{% endblock %}
"""


@dataclass
class Proxy:
    url: str = ""
    exchanges: list[tuple[dict[str, Any], dict[str, Any]]] = field(default_factory=list)  # (request, response)


@pytest.fixture
async def proxy(vllm_url: str) -> AsyncIterator[Proxy]:
    recorded = Proxy()
    upstream = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=300))

    def refused(request: web.Request) -> web.Response | None:
        if request.headers.get("Authorization") != f"Bearer {KEY}" or request.headers.get("X-Route") != "small":
            return web.json_response({"error": {"message": "unauthorized"}}, status=401)
        return None

    async def models(request: web.Request) -> web.Response:
        if (no := refused(request)) is not None:
            return no
        async with upstream.get(f"{vllm_url}/models") as response:
            return web.json_response(await response.json(), status=response.status)

    async def chat(request: web.Request) -> web.Response:
        if (no := refused(request)) is not None:
            return no
        body = await request.json()
        async with upstream.post(f"{vllm_url}/chat/completions", json=body) as response:
            answer = await response.json()
            recorded.exchanges.append((body, answer))
            return web.json_response(answer, status=response.status)

    try:
        async with openai_stub(models, chat) as recorded.url:
            yield recorded
    finally:
        await upstream.close()


def golden_subset(folder: Path) -> Path:
    rows = (REPO_ROOT / "datasets" / "halueval_qa_mini" / "data.jsonl").read_text(encoding="utf-8").splitlines()
    folder.mkdir(parents=True)
    (folder / "data.jsonl").write_text("\n".join(rows[:ITEMS]) + "\n", encoding="utf-8")
    return folder


async def test_the_real_vllm_tier_answers_with_the_configured_template_and_max_tokens(
    tmp_path: Path, proxy: Proxy
) -> None:
    golden = golden_subset(tmp_path / "golden_s")
    (tmp_path / "small.j2").write_text(TEMPLATE, encoding="utf-8")
    tiers = tmp_path / "tiers.yaml"
    tiers.write_text(
        f"""tiers:
- name: small
  base_url: {proxy.url}
  model: {VLLM_MODEL}
  api_key_env: JW_TEST_VLLM_GATEWAY_KEY
  headers: {{X-Route: small}}
  prompt_template: small.j2
  params: {{max_tokens: {MAX_TOKENS}, temperature: 0}}
  concurrency: 2
""",
        encoding="utf-8",
    )
    db = tmp_path / "jw.db"
    env = {
        **os.environ,
        "JW_TEST_VLLM_GATEWAY_KEY": KEY,
        "PREFECT_HOME": str(tmp_path / "prefect"),
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "PREFECT_LOGGING_LEVEL": "WARNING",
        "JUDGEWATCH_DATA_DIR": str(tmp_path / "data"),
        "JUDGEWATCH_DATABASE_URL": f"sqlite:///{db}",
    }
    # Six items cannot measure the judge (the gate would exit 2 "judge not measured"): this test is about the tier.
    args = ["regress", "--release", "r1", "--dataset", str(golden), "--tiers", str(tiers), "--judge", "reference",
            "--accept-unvalidated-judge"]  # fmt: skip
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "judgewatch", *args, env=env, cwd=REPO_ROOT,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(process.communicate(), timeout=600)
    output = out.decode() + err.decode()
    assert process.returncode in (0, 1), output  # evaluated: SmolLM2's answers may pass or regress, never exit 2

    check_exchanges_stores_and_report(proxy, golden, tmp_path, output)


def check_exchanges_stores_and_report(proxy: Proxy, golden: Path, root: Path, output: str) -> None:
    """What the proxy saw went to the real server, what the server answered is what was stored and reported."""
    items = {i.question: i for i in load_golden_set(golden).items}
    assert len(proxy.exchanges) == ITEMS
    stored: dict[str, str] = {}
    for sent, answered in proxy.exchanges:
        system, user = sent["messages"]
        assert system == {"role": "system", "content": "You are a terse assistant. Use the notes."}
        question = user["content"].split("\nQ: ", 1)[1].removesuffix("\nA:")
        item = items[question]
        assert user["content"] == f"Notes: {' '.join(item.reference_facts)}\nQ: {item.question}\nA:"
        assert sent["max_tokens"] == MAX_TOKENS and sent["model"] == VLLM_MODEL
        assert answered["usage"]["completion_tokens"] <= MAX_TOKENS  # the real server honoured max_tokens
        stored[item.id] = answered["choices"][0]["message"]["content"]
    assert any(a["choices"][0]["finish_reason"] == "length" for _, a in proxy.exchanges)  # 12 tokens cut answers

    db = root / "jw.db"
    with make_engine(f"sqlite:///{db}").connect() as conn:
        rows = conn.execute(text("SELECT source_id, answer, model FROM interaction WHERE tier = 'small'")).all()
    assert {r[0]: r[1] for r in rows} == stored and {r[2] for r in rows} == {VLLM_MODEL}
    report = (root / "data" / "reports" / "regression-r1.md").read_text(encoding="utf-8")
    assert "prompt template small.j2 (hash " in report and f"max_tokens {MAX_TOKENS}" in report
    assert KEY not in report and KEY not in output and KEY.encode() not in db.read_bytes()
    data = json.loads((root / "data" / "reports" / "regression-r1.json").read_text(encoding="utf-8"))
    assert data["tiers"][0]["generation"]["generated"] == ITEMS
