"""The regression gate as a Prefect deployment: a real `prefect server`, the deployment served as prefect.yaml
declares it, triggered with `run_deployment` from another process the way a CI job does.

Recorded answers and the offline reference judge keep the flow itself fast; everything Prefect does is real.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import yaml
from sqlalchemy import text

from judgewatch.regression.golden import load_golden_set
from judgewatch.regression.serving import write_recorded_answers
from judgewatch.settings import REPO_ROOT
from judgewatch.storage.db import make_engine, session_scope
from judgewatch.storage.releases import accept_baseline
from judgewatch.testing.processes import free_port, stop_process

pytestmark = [pytest.mark.prefect_server, pytest.mark.slow]

SET = "halueval_qa_mini"
DEPLOYMENT = "post-release-regression/post-release-regression"

TRIGGER = """
import json, sys
from prefect.deployments import run_deployment
run = run_deployment(sys.argv[1], parameters=json.loads(sys.argv[2]), timeout=300)
print(json.dumps({"id": str(run.id), "type": run.state.type.value, "message": run.state.message}))
"""


def wait_healthy(url: str, process: subprocess.Popen[bytes], log: Path, timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"prefect server exited early:\n{log.read_text()[-3000:]}")
        try:
            if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    pytest.fail(f"prefect server not healthy after {timeout_s} s:\n{log.read_text()[-3000:]}")


def wait_deployment(api: str, process: subprocess.Popen[bytes], log: Path, timeout_s: float = 120) -> None:
    """The serving process registers the deployment once it has imported the flow."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"the serving process exited:\n{log.read_text()[-3000:]}")
        if httpx.get(f"{api}/deployments/name/{DEPLOYMENT}", timeout=5).status_code == 200:
            return
        time.sleep(0.5)
    pytest.fail(f"deployment {DEPLOYMENT} not registered after {timeout_s} s:\n{log.read_text()[-3000:]}")


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, object]]:
    """A prefect server and a process serving the deployment, both stopped at the end whatever happens."""
    home = tmp_path_factory.mktemp("prefect")
    port = free_port()
    api = f"http://127.0.0.1:{port}/api"
    env = {
        **os.environ,
        "PREFECT_HOME": str(home),
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "PREFECT_RUNNER_POLL_FREQUENCY": "1",
        "PREFECT_API_URL": api,
        "JUDGEWATCH_DATA_DIR": str(home / "data"),
        "JUDGEWATCH_DATABASE_URL": f"sqlite:///{home / 'jw.db'}",
    }
    server_env = {k: v for k, v in env.items() if k != "PREFECT_API_URL"}
    server_log, serve_log = home / "server.log", home / "serve.log"
    started: list[subprocess.Popen[bytes]] = []
    try:
        with server_log.open("wb") as out:
            server = subprocess.Popen(
                [sys.executable, "-m", "prefect", "server", "start", "--host", "127.0.0.1", "--port", str(port)],
                env=server_env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
        started.append(server)
        wait_healthy(api, server, server_log)
        with serve_log.open("wb") as out:
            serving = subprocess.Popen(
                [sys.executable, "-m", "flows.regression", "serve"],
                cwd=REPO_ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
        started.append(serving)
        wait_deployment(api, serving, serve_log)
        yield {"env": env, "home": home, "db": env["JUDGEWATCH_DATABASE_URL"], "serve_log": serve_log}
    finally:
        for process in reversed(started):
            stop_process(process, group=True, timeout_s=20)


def trigger(stack: dict[str, object], parameters: dict[str, object]) -> dict[str, str]:
    """`run_deployment` from a separate process, like a CI job; waits for the flow run to finish."""
    env = stack["env"]
    assert isinstance(env, dict)
    done = subprocess.run(
        [sys.executable, "-c", TRIGGER, DEPLOYMENT, json.dumps(parameters)],
        env=env, capture_output=True, text=True, timeout=400,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, str] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_prefect_yaml_declares_the_regression_deployment_with_valid_parameters() -> None:
    from prefect.flows import load_flow_from_entrypoint

    declared = yaml.safe_load((REPO_ROOT / "prefect.yaml").read_text(encoding="utf-8"))
    spec = next(d for d in declared["deployments"] if d["name"] == "post-release-regression")
    flow = load_flow_from_entrypoint(str(REPO_ROOT / spec["entrypoint"]))
    assert flow.name == "post-release-regression"
    flow.validate_parameters({"release": "r1", **spec["parameters"]})  # raises on an unknown or mistyped one


def test_triggered_deployment_stores_the_run_and_gates_like_the_cli(stack: dict[str, object]) -> None:
    home = stack["home"]
    assert isinstance(home, Path)
    items = load_golden_set(SET).items
    good, bad = home / "good.jsonl", home / "bad.jsonl"
    write_recorded_answers(good, [(i.id, i.good_answers[0]) for i in items])
    write_recorded_answers(bad, [(i.id, i.bad_answers[0]) for i in items])
    common = {"datasets": [SET], "judge": "reference", "baseline_tier": "full"}

    first = trigger(stack, {**common, "release": "r1", "answers": [f"full={good}", f"quantized={good}"]})
    assert first["type"] == "COMPLETED", first
    db = str(stack["db"])
    with session_scope(make_engine(db), write=True) as session:
        accept_baseline(session=session, release="r1", by="ci")

    second = trigger(stack, {**common, "release": "r2", "answers": [f"full={good}", f"quantized={bad}"]})
    assert second["type"] == "FAILED", second
    assert second["message"].startswith("gate exit 1: REGRESSION") and "tier quantized" in second["message"]

    with make_engine(db).connect() as conn:
        decisions = conn.execute(
            text("SELECT release, exit_code, outcome, flow_run_id, report_path FROM gate_decision ORDER BY release")
        ).all()
        tiers = conn.execute(text("SELECT release, tier, accepted_by FROM release_tier ORDER BY release, tier")).all()
        verdicts = conn.execute(
            text(
                "SELECT count(*) FROM verdict v JOIN interaction i ON i.id = v.interaction_id "
                "WHERE i.release IN ('r1', 'r2')"
            )
        ).scalar_one()
        measured = conn.execute(text("SELECT count(*) FROM trust_record")).scalar_one()
    assert [(d[0], d[1], d[2], d[3]) for d in decisions] == [
        ("r1", 0, "pass", first["id"]),
        ("r2", 1, "regression", second["id"]),
    ]
    assert all(Path(d[4]).is_file() for d in decisions)
    assert [tuple(t) for t in tiers] == [
        ("r1", "full", "ci"),
        ("r1", "quantized", "ci"),
        ("r2", "full", None),
        ("r2", "quantized", None),
    ]
    assert verdicts == 6 * len(items)  # per release: each tier's verdicts and the quantized-vs-full pairs'
    assert measured > 0  # the reference judge was measured before the first gate rested on it (known answers, probes)
