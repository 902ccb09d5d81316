"""Partitions as flow runs on a work pool: `scripts/stack.sh up` (a real Prefect server, the `judgewatch` process
pool, two real `prefect worker start` processes), then a `traffic-sampling` run with `partition_runs` whose four
`sample-partition` child flow runs the workers execute; the picks it stores equal a single pass's.

The workers clone the code from a git repository built from the checkout (prefect.yaml's pull step); the source
is the demo log cut into four files on the local disk, which both workers see at the same path, as shared
storage would give workers on several machines. The children judge with the simulator behind the stack's global
limit of 16 slots; the single pass uses the reference judge (the picks do not depend on the judge).
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import time
import uuid
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from judgewatch.settings import REPO_ROOT
from judgewatch.testing.sampling_runs import stored_sample
from judgewatch.testing.simulator import run_simulator_in_thread
from judgewatch.testing.stack import admin_sql, run_via_rest, source_repository, stack_ports, wait_final

logger = logging.getLogger(__name__)

pytestmark = [pytest.mark.prefect_server, pytest.mark.postgres, pytest.mark.slow]

PG = os.environ.get("JUDGEWATCH_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")
DEMO = REPO_ROOT / "examples" / "traffic"
PARENT, CHILD = "traffic-sampling/traffic-sampling", "sample-partition/sample-partition"


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """`stack.sh up` with the test's ports, databases and repository, 3 flow runs per worker; `down` at the end."""
    home = tmp_path_factory.mktemp("partition-stack")
    tag = uuid.uuid4().hex[:8]
    port, review_port = stack_ports()
    dbs = {"prefect": f"jw_{tag}_prefect", "store": f"jw_{tag}_store", "one": f"jw_{tag}_one", "runs": f"jw_{tag}_runs"}
    with run_simulator_in_thread(latency_ms=20, max_concurrency=64) as sim:
        env = {
            **os.environ,
            "PREFECT_LOGGING_LEVEL": "INFO",  # the workers' "submitting flow run" lines name who ran what
            "PREFECT_WORKER_QUERY_SECONDS": "2",  # workers poll the pool every 2 s, not 10
            "JUDGEWATCH_STACK_DIR": str(home / "state"),
            "JUDGEWATCH_PREFECT_PORT": str(port),
            "JUDGEWATCH_REVIEW_PORT": str(review_port),
            "JUDGEWATCH_PG_URL": PG.replace("+psycopg", "").rsplit("/", 1)[0],
            "JUDGEWATCH_PREFECT_DB": dbs["prefect"],
            "JUDGEWATCH_STORE_DB": dbs["store"],
            "JUDGEWATCH_STACK_JUDGE": "external",
            "JUDGEWATCH_JUDGE_URL": sim.base_url,
            "JUDGEWATCH_JUDGE_MODEL": "sim-judge",
            "JUDGEWATCH_JUDGE_SLOTS": "16",
            "JUDGEWATCH_WORKER_LIMIT": "3",  # the parent and four children fit on two workers at once
            "JUDGEWATCH_GIT_REPOSITORY": str(source_repository(home / "origin")),
            "JUDGEWATCH_GIT_BRANCH": "main",
            "JUDGEWATCH_STACK_BIN": str(Path(sys.executable).parent),
        }
        env.pop("PREFECT_API_URL", None)
        base = PG.rsplit("/", 1)[0]
        info = {"env": env, "home": home, "api": f"http://127.0.0.1:{port}/api", "state": home / "state", "sim": sim,
                "one": f"{base}/{dbs['one']}", "runs": f"{base}/{dbs['runs']}"}  # fmt: skip
        try:
            for name in ("one", "runs"):
                admin_sql(PG, f'CREATE DATABASE "{dbs[name]}"')
            up = subprocess.run(
                ["bash", "scripts/stack.sh", "up"], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=600
            )
            (home / "stack-up.log").write_text(up.stdout + up.stderr)
            assert up.returncode == 0, (up.stdout + up.stderr)[-4000:]
            yield info
        finally:
            subprocess.run(["bash", "scripts/stack.sh", "down"], cwd=REPO_ROOT, env=env, timeout=120)
            for db in dbs.values():
                try:
                    admin_sql(PG, f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')
                except Exception as exc:  # leave the database, say so; never hide a failing test behind cleanup
                    warnings.warn(f"could not drop {db}: {exc}", stacklevel=1)


@pytest.fixture(scope="module")
def split_source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo log cut into 4 files under a source of its own name (the hourly demo deployment's is another)."""
    folder = tmp_path_factory.mktemp("split-log")
    lines = (DEMO / "halluqa_gateway_log.jsonl").read_bytes().splitlines(keepends=True)
    for k in range(4):
        (folder / f"part-{k}.jsonl").write_bytes(b"".join(lines[k * 676 : (k + 1) * 676]))
    config = yaml.safe_load((DEMO / "demo_source.yaml").read_text(encoding="utf-8"))
    config["name"], config["paths"] = "halluqa-split", [str(folder / "part-*.jsonl")]
    path = folder / "source.yaml"
    path.write_text(yaml.safe_dump(config, allow_unicode=True), encoding="utf-8")
    return path


def children_of(api: str, parent_id: str) -> list[dict[str, Any]]:
    """The flow runs linked under the parent (run_deployment's as_subflow: a task run of the parent's)."""
    tasks = (
        httpx.post(f"{api}/task_runs/filter", json={"flow_runs": {"id": {"any_": [parent_id]}}}, timeout=30)
        .raise_for_status()
        .json()
    )
    runs = httpx.post(
        f"{api}/flow_runs/filter",
        json={"flow_runs": {"parent_task_run_id": {"any_": [t["id"] for t in tasks]}}},
        timeout=30,
    ).raise_for_status()
    return list(runs.json())


def ran_by(worker_log: Path, run_ids: list[str]) -> list[str]:
    """The flow runs this worker submitted and did not abort (another worker may have taken one first)."""
    log = worker_log.read_text()
    return [i for i in run_ids if f"submitting flow run '{i}'" in log and f"submission of flow run '{i}'" not in log]


def test_workers_run_the_partition_flow_runs_and_store_what_one_pass_stores(
    stack: dict[str, Any], split_source: Path
) -> None:
    api, sim = stack["api"], stack["sim"]
    sim.state.reset()
    # One after the other: the traffic-sampling deployment runs one flow run at a time (CANCEL_NEW).
    one_id = run_via_rest(
        api, PARENT, {"source": str(split_source), "judge": "reference", "database_url": stack["one"]}
    )
    one = wait_final(api, one_id)
    assert one["state"]["type"] == "COMPLETED", one["state"]
    started = time.monotonic()
    # The children judge with the deployment's judge: the simulator, behind the global limit.
    params = {"source": str(split_source), "partitions": 4, "partition_runs": True, "database_url": stack["runs"]}
    runs_id = run_via_rest(api, PARENT, params)
    parent = wait_final(api, runs_id)
    took = time.monotonic() - started
    assert parent["state"]["type"] == "COMPLETED", parent["state"]

    children = children_of(api, runs_id)
    child_ids = [c["id"] for c in children]
    assert sorted(c["name"] for c in children) == [f"halluqa-split-{k}-of-4" for k in range(1, 5)]
    assert {c["state"]["type"] for c in children} == {"COMPLETED"}
    assert {c["work_queue_name"] for c in children} == {"sampling"}  # the pool's queue: any worker takes them
    deployment = httpx.get(f"{api}/deployments/name/{CHILD}", timeout=30).json()
    assert {c["deployment_id"] for c in children} == {deployment["id"]}
    # The worker that ran a flow run labels it (prefect.worker.name); its log names the runs it submitted.
    by_label = {c["id"]: c["labels"].get("prefect.worker.name") for c in children}
    assert set(by_label.values()) <= {"judgewatch-worker-1", "judgewatch-worker-2"}, by_label
    taken = {w: ran_by(stack["state"] / f"worker-{w}.log", child_ids) for w in (1, 2)}
    assert sorted(taken[1] + taken[2]) == sorted(child_ids), taken  # each child run by exactly one worker
    assert {i: f"judgewatch-worker-{w}" for w in (1, 2) for i in taken[w]} == by_label
    logger.info("partition runs: worker-1 ran %d, worker-2 ran %d; the partitioned run took %.0f s",
                len(taken[1]), len(taken[2]), took)  # fmt: skip

    single, split = stored_sample(stack["one"]), stored_sample(stack["runs"])
    assert split == single and len(single["interactions"]) > 200  # picks, quarantined rows, the saved watermark
    assert {Path(p).name: m["rows"] for p, m in split["watermark"]["files"].items()} == {
        "part-0.jsonl": 676, "part-1.jsonl": 676, "part-2.jsonl": 676, "part-3.jsonl": 674,
    }  # fmt: skip
    assert sim.state.status[200] >= len(single["interactions"])  # the children judged their picks there...
    assert sim.state.max_in_flight <= 16, sim.state.stats()  # ...within the endpoint's global limit, together
