"""A real Prometheus (Debian's package) scrapes `judgewatch metrics serve` and answers queries over its HTTP API."""

from __future__ import annotations

import contextlib
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import yaml

from judgewatch.storage.db import make_engine
from judgewatch.storage.migrations import migrate
from judgewatch.testing.metrics_store import seed_store
from judgewatch.testing.processes import free_port, stop_process

pytestmark = [pytest.mark.prometheus, pytest.mark.slow]

N = 200


@pytest.fixture
def metrics_server(tmp_path: Path) -> Iterator[str]:
    """`judgewatch metrics serve` on a free port over a seeded SQLite store; yields host:port."""
    url = f"sqlite:///{tmp_path / 'store.db'}"
    engine = make_engine(url)
    migrate(engine)
    seed_store(engine, verdicts=N)
    engine.dispose()
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "judgewatch", "metrics", "serve", "--port", str(port), "--database-url", url],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            time.sleep(0.3)
        else:
            pytest.fail("judgewatch metrics serve did not answer within 120 s")
        yield f"127.0.0.1:{port}"
    finally:
        stop_process(proc)
    assert proc.returncode == 0, "SIGTERM must stop the server cleanly"


def _query(api: str, query: str) -> list[dict]:
    body = httpx.get(f"{api}/query", params={"query": query}, timeout=5).json()
    return list(body["data"]["result"])


def test_prometheus_scrapes_the_endpoint_and_loads_the_alert_rules(
    metrics_server: str, prometheus_bin: str, deploy_dir: Path, tmp_path: Path
) -> None:
    (tmp_path / "alerts.yml").write_text((deploy_dir / "prometheus" / "alerts.yml").read_text(encoding="utf-8"))
    config = {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": ["alerts.yml"],
        "scrape_configs": [{"job_name": "judgewatch", "static_configs": [{"targets": [metrics_server]}]}],
    }
    (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(config), encoding="utf-8")
    port = free_port()
    proc = subprocess.Popen(
        [
            prometheus_bin,
            f"--config.file={tmp_path / 'prometheus.yml'}",
            f"--storage.tsdb.path={tmp_path / 'tsdb'}",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    api = f"http://127.0.0.1:{port}/api/v1"
    try:
        result: list[dict] = []
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not result:
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else "prometheus exited"
            with contextlib.suppress(httpx.TransportError, ValueError, KeyError):  # not up yet
                result = _query(api, "sum(judgewatch_verdicts_total)")
            time.sleep(0.5)
        assert result, "no judgewatch series scraped within 120 s"
        assert float(result[0]["value"][1]) == N

        states = {r["metric"]["state"]: float(r["value"][1]) for r in _query(api, "judgewatch_review_queue_items")}
        assert states["waiting"] == N / 10 / 5
        assert set(states) >= {"waiting", "leased", "labeled", "adjudication"}
        assert float(_query(api, 'up{job="judgewatch"}')[0]["value"][1]) == 1
        drift = _query(api, "judgewatch_drift_alerts_open")
        assert drift[0]["metric"]["tier"] == "quantized" and float(drift[0]["value"][1]) == 1

        groups = httpx.get(f"{api}/rules", timeout=5).json()["data"]["groups"]
        rules = {rule["name"]: rule for group in groups for rule in group["rules"]}
        assert "JudgewatchGateCouldNotEvaluate" in rules
        assert all(rule["health"] != "err" for rule in rules.values())
        deadline = time.monotonic() + 60  # the seeded store holds one open drift alert: its rule must fire
        while rules["JudgewatchDriftAlertOpen"]["state"] != "firing" and time.monotonic() < deadline:
            time.sleep(1)
            groups = httpx.get(f"{api}/rules", timeout=5).json()["data"]["groups"]
            rules = {rule["name"]: rule for group in groups for rule in group["rules"]}
        assert rules["JudgewatchDriftAlertOpen"]["state"] == "firing"
    finally:
        stop_process(proc)
    assert not re.search(r"level=(error|ERROR)", proc.stderr.read() if proc.stderr else "")
