"""A password in a judge, tier or database URL is used to connect and kept nowhere else.

One store, three commands (`judge`, `regress` with live tiers and the pairwise tier gap, `calibrate` with the
judge's fingerprint), every URL carrying a planted password: afterwards no table of the store, no report or
output file, no Prefect flow-run parameter and no line the commands printed holds it, while every request the
endpoints received carried it.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import inspect, text
from sqlalchemy.engine import make_url

from judges.config import EndpointConfig
from judgewatch.settings import REPO_ROOT
from judgewatch.storage.db import make_engine
from judgewatch.testing.simulator import run_simulator_in_thread
from judgewatch.url_secrets import ENV, HiddenCredentialError, hide, hide_in, reveal

PASSWORD = "Planted-s3cret"
SET = "halueval_qa_mini"

pytestmark = pytest.mark.usefixtures("prefect_server")  # one Prefect server for this module


def with_password(url: str, user: str) -> str:
    scheme, _, rest = url.partition("://")
    return f"{scheme}://{user}:{PASSWORD}@{rest}"


def leaks_in_store(db_url: str) -> list[str]:
    """`table: row` of every row of every table whose text holds the password."""
    engine = make_engine(db_url)
    found = []
    try:
        with engine.connect() as conn:
            for name in inspect(conn).get_table_names():
                for row in conn.execute(text(f'SELECT * FROM "{name}"')):
                    if PASSWORD in str(tuple(row)):
                        found.append(f"{name}: {str(tuple(row))[:200]}")
    finally:
        engine.dispose()
    return found


def run_cli(args: list[str]) -> subprocess.CompletedProcess[str]:
    """`judgewatch ARGS` as an operator runs it: its own process, on this module's Prefect server."""
    from prefect.settings import PREFECT_API_URL

    env = {**os.environ, "PREFECT_API_URL": str(PREFECT_API_URL.value()), "PYTHONPATH": str(REPO_ROOT)}
    env.pop(ENV, None)  # the process gets its credentials from its arguments only
    command = [sys.executable, "-m", "judgewatch", *args]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=600, check=False)


async def flow_run_parameters() -> list[dict[str, Any]]:
    from prefect.client.orchestration import get_client

    async with get_client() as client:
        return [run.parameters for run in await client.read_flow_runs()]


def test_a_planted_password_reaches_the_endpoints_and_nothing_else(db_url: str, tmp_path: Path) -> None:
    store_url = db_url
    if db_url.startswith("postgresql"):  # the test server trusts local connections: any password is accepted
        store_url = make_url(db_url).set(password=PASSWORD).render_as_string(hide_password=False)
    items = tmp_path / "items.jsonl"
    rows = [{"id": f"s{i}", "question": f"What is {i} + 2?", "answer": str(i + 2)} for i in range(10)]
    items.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    out, report = tmp_path / "verdicts.jsonl", tmp_path / "gate.md"
    printed = []
    with run_simulator_in_thread(latency_ms=0) as sim:
        judge = with_password(sim.base_url, "jw")
        common = ["--database-url", store_url]
        judge_options = ["--judge", judge, "--model", "sim-judge"]
        tiers = ["--tier", f"full={judge}#sim-judge", "--tier", f"quantized={judge}#sim-judge", "--report", str(report)]
        runs = [
            ["judge", "--rubric", "answer_quality", "--input", str(items), "--output", str(out), *judge_options],
            ["calibrate", "--judge", judge],
            ["regress", "--release", "r1", "--dataset", SET, "--judge", judge, "--accept-unvalidated-judge", *tiers],
        ]
        for args in runs:
            result = run_cli([*args, *common])
            printed.append(result.stdout + result.stderr)
            allowed = (0, 1) if args[0] == "regress" else (0,)  # the gate may pass or fail: it ran
            assert result.returncode in allowed, f"{args[0]}: {printed[-1][-2000:]}"
        authorizations = dict(sim.state.authorizations)
    expected = "Basic " + base64.b64encode(f"jw:{PASSWORD}".encode()).decode()
    assert authorizations and set(authorizations) == {expected}  # every request carried the credential

    assert leaks_in_store(db_url) == []
    files = [out, report, report.with_suffix(".json")]
    assert all(f.exists() for f in files)
    assert [f.name for f in files if PASSWORD in f.read_text(encoding="utf-8")] == []
    params = asyncio.run(flow_run_parameters())
    assert len(params) >= 2 and [p for p in params if PASSWORD in json.dumps(p)] == []
    assert [p for p in printed if PASSWORD in p] == []
    # the places the password used to leak hold its mask instead
    engine = make_engine(db_url)
    try:
        with engine.connect() as conn:
            endpoints = set(conn.execute(text("SELECT DISTINCT judge_endpoint FROM verdict")).scalars())
            scopes = set(
                conn.execute(text("SELECT scope FROM calibration_snapshot WHERE kind = 'judge_fingerprint'")).scalars()
            )
    finally:
        engine.dispose()
    masked = with_password(sim.base_url, "jw").replace(PASSWORD, "***")
    assert masked in endpoints and scopes == {masked}


def test_a_masked_url_is_revealed_only_when_its_credential_was_given() -> None:
    url = "http://svc:hunter2-x@judge.internal:8012/v1"
    assert hide(url) == "http://svc:***@judge.internal:8012/v1"
    assert reveal("http://svc:***@judge.internal:8012/v1") == url
    assert hide_in(f"full={url}#m,reference") == "full=http://svc:***@judge.internal:8012/v1#m,reference"
    assert reveal("http://127.0.0.1:1/v1") == "http://127.0.0.1:1/v1"  # nothing masked: as given
    with pytest.raises(HiddenCredentialError, match="JUDGEWATCH_URL_CREDENTIALS"):
        reveal("http://other:***@judge.internal:8012/v1")
    with pytest.raises(HiddenCredentialError, match="JUDGEWATCH_URL_CREDENTIALS"):  # refused before any call
        EndpointConfig("http://other:***@judge.internal:8012/v1", "m")
