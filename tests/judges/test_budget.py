"""The shared judge budget: a Prefect global concurrency limit per endpoint bounds the calls of every client together.

Two chat clients, each allowed 16 concurrent calls, stand in for two flow runs; the simulator counts what it
really sees in flight. The limit is created with the `judgewatch judges limit` command against a real temporary
Prefect server; without a server the clients work as before.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from judges import budget
from judges.chat_client import ChatClient
from judges.config import EndpointConfig
from judgewatch.cli import get_app
from judgewatch.settings import REPO_ROOT
from judgewatch.testing.simulator import SimulatorHandle, serve_simulator

MESSAGES = [{"role": "user", "content": "Say hello."}]


async def _two_flow_runs(sim: SimulatorHandle, calls_each: int = 24) -> None:
    clients = [ChatClient(EndpointConfig(sim.base_url, "sim-judge", concurrency=16)) for _ in range(2)]
    try:
        await asyncio.gather(*(c.complete(MESSAGES, max_tokens=8) for c in clients for _ in range(calls_each)))
    finally:
        for client in clients:
            await client.aclose()


@pytest.mark.parametrize(
    ("url", "name"),
    [
        ("http://127.0.0.1:8011/v1", "judge:127.0.0.1:8011"),
        ("https://Judge.example.com/v1", "judge:judge.example.com:443"),
        ("http://vllm/v1", "judge:vllm:80"),
        ("127.0.0.1:9000", "judge:127.0.0.1:9000"),
    ],
)
def test_limit_name_is_host_and_port_with_default_ports(url: str, name: str) -> None:
    assert budget.limit_name(url) == name


async def test_without_a_prefect_server_calls_are_bounded_only_by_the_client() -> None:
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with temporary_settings({PREFECT_API_URL: None}):
        assert budget.prefect_api_url() is None
        async with serve_simulator(latency_ms=100, max_concurrency=64) as sim:
            await _two_flow_runs(sim)
            assert sim.state.status[200] == 48
            assert sim.state.max_in_flight > 16  # two clients of 16 each: nothing shared bounds them


def _api_url_in_a_fresh_process(tmp_path: Path, **env: str) -> tuple[str | None, bool]:
    """(prefect_api_url(), whether Prefect got imported) in a new interpreter run in tmp_path with HOME there."""
    code = (
        "import json, sys; from judges.budget import prefect_api_url; "
        "print(json.dumps([prefect_api_url(), 'prefect' in sys.modules]))"
    )
    clean = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env={**clean, "HOME": str(tmp_path), "PYTHONPATH": str(REPO_ROOT), **env},
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    url, imported = json.loads(result.stdout.strip().splitlines()[-1])
    return url, imported


def test_with_nothing_configuring_prefect_a_judge_call_does_not_import_it(tmp_path: Path) -> None:
    assert _api_url_in_a_fresh_process(tmp_path) == (None, False)


def test_a_prefect_profile_with_an_api_url_is_still_found(tmp_path: Path) -> None:
    home = tmp_path / "prefect-home"
    home.mkdir()
    (home / "profiles.toml").write_text(
        'active = "ops"\n[profiles.ops]\nPREFECT_API_URL = "http://127.0.0.1:4299/api"\n', encoding="utf-8"
    )
    assert _api_url_in_a_fresh_process(tmp_path, PREFECT_HOME=str(home)) == ("http://127.0.0.1:4299/api", True)


def test_limit_command_needs_a_prefect_server() -> None:
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with temporary_settings({PREFECT_API_URL: None}):
        result = CliRunner().invoke(get_app(), ["judges", "limit", "http://127.0.0.1:8011/v1", "4"])
    assert result.exit_code == 2
    assert "PREFECT_API_URL" in result.output


@pytest.mark.prefect_server
@pytest.mark.slow
def test_global_limit_bounds_all_clients_together(prefect_server: None) -> None:
    from judgewatch.testing.simulator import run_simulator_in_thread

    with run_simulator_in_thread(latency_ms=100, max_concurrency=64) as sim:
        # No limit yet: both clients' calls go through, bounded by nothing shared (and not refused).
        asyncio.run(_two_flow_runs(sim, calls_each=16))
        assert sim.state.status[200] == 32 and sim.state.max_in_flight > 4
        sim.state.reset()
        budget._known.clear()
        result = CliRunner().invoke(get_app(), ["judges", "limit", sim.base_url, "4"])
        assert result.exit_code == 0, result.output
        assert f"judge:127.0.0.1:{sim.port}: 4 slots" in result.output
        asyncio.run(_two_flow_runs(sim))
        assert sim.state.status[200] == 48
        assert 1 <= sim.state.max_in_flight <= 4


@pytest.mark.prefect_server
def test_limit_command_resizes_an_existing_limit(prefect_server: None) -> None:
    from prefect.client.orchestration import get_client

    runner = CliRunner()
    for slots in ("8", "3"):
        result = runner.invoke(get_app(), ["judges", "limit", "http://10.0.0.7:8000/v1", slots])
        assert result.exit_code == 0, result.output

    async def read() -> int:
        async with get_client() as client:
            return (await client.read_global_concurrency_limit_by_name("judge:10.0.0.7:8000")).limit

    assert asyncio.run(read()) == 3
