"""judgewatch as a service: `scripts/stack.sh up` (a Prefect server on PostgreSQL, the `judgewatch` work pool with two
workers, `prefect deploy --all`), flow runs triggered the way a CI job does, then `down`.

The workers get the code from prefect.yaml's git_clone pull step: a git repository this test builds from the
checkout's files (not the test's working directory). Recorded answers and the reference judge keep the gate
runs short; the shared-budget run judges with the simulator behind a global limit of 16. Everything Prefect and
PostgreSQL do is real. The stack's ports and databases are the test's own, so a developer's stack is untouched.
"""

from __future__ import annotations

import json
import os
import re
import signal
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
from sqlalchemy import create_engine, text

from judgewatch.contract.rubric import load_rubric
from judgewatch.regression.golden import load_golden_set
from judgewatch.regression.serving import write_recorded_answers
from judgewatch.settings import REPO_ROOT
from judgewatch.storage.db import make_engine, session_scope
from judgewatch.storage.releases import accept_baseline
from judgewatch.testing.processes import free_port
from judgewatch.testing.sampling_runs import stored_sample
from judgewatch.testing.simulator import SimulatorHandle, run_simulator_in_thread
from judgewatch.testing.stack import admin_sql as stack_admin_sql
from judgewatch.testing.stack import run_via_rest, source_repository, stack_ports, wait_final

pytestmark = [pytest.mark.prefect_server, pytest.mark.postgres, pytest.mark.slow]

SET = "halueval_qa_mini"
DEPLOYMENT = "post-release-regression/post-release-regression"
PG = os.environ.get("JUDGEWATCH_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")


def admin_sql(statement: str) -> None:
    stack_admin_sql(PG, statement)


@pytest.fixture(scope="module")
def sim() -> Iterator[SimulatorHandle]:
    with run_simulator_in_thread(latency_ms=200, max_concurrency=64) as handle:
        yield handle


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory, sim: SimulatorHandle) -> Iterator[dict[str, Any]]:
    """`stack.sh up` with this test's ports, databases and git repository; `down` at the end whatever happens."""
    home = tmp_path_factory.mktemp("stack")
    tag = uuid.uuid4().hex[:8]
    port, review_port = stack_ports()
    ingest_config = home / "otlp_source.yaml"  # every received LLM span is a pick (the default samples 1%)
    ingest_config.write_text("name: otlp\nkind: otlp\nsampling: {default_rate: 1.0}\n", encoding="utf-8")
    env = {
        **os.environ,
        # Workers log "submitting flow run ..." at INFO, which the tests read; an in-process `regress` test earlier
        # in the session may have left Prefect's quiet default (WARNING) in this process's environment.
        "PREFECT_LOGGING_LEVEL": "INFO",
        "JUDGEWATCH_STACK_DIR": str(home / "state"),
        "JUDGEWATCH_PREFECT_PORT": str(port),
        "JUDGEWATCH_REVIEW_PORT": str(review_port),
        "JUDGEWATCH_PG_URL": PG.replace("+psycopg", "").rsplit("/", 1)[0],
        "JUDGEWATCH_PREFECT_DB": f"jw_{tag}_prefect",
        "JUDGEWATCH_STORE_DB": f"jw_{tag}_store",
        "JUDGEWATCH_STACK_JUDGE": "external",
        "JUDGEWATCH_JUDGE_URL": sim.base_url,
        "JUDGEWATCH_JUDGE_MODEL": "sim-judge",
        "JUDGEWATCH_JUDGE_SLOTS": "16",
        "JUDGEWATCH_WORKER_LIMIT": "2",  # three concurrent runs cannot all land on one worker
        "JUDGEWATCH_GIT_REPOSITORY": str(source_repository(home / "origin")),
        "JUDGEWATCH_GIT_BRANCH": "main",
        "JUDGEWATCH_STACK_BIN": str(Path(sys.executable).parent),
        "JUDGEWATCH_INGEST_PORT": str(free_port()),
        "JUDGEWATCH_INGEST_CONFIG": str(ingest_config),
        "JUDGEWATCH_INGEST_JUDGE_CRON": "* * * * *",  # every minute: the test waits for a scheduled run
    }
    env.pop("JUDGEWATCH_INGEST_TOKEN", None)  # stack.sh makes one and writes it to its env file
    env.pop("PREFECT_API_URL", None)
    info = {
        "env": env,
        "home": home,
        "api": f"http://127.0.0.1:{port}/api",
        "store": PG.rsplit("/", 1)[0] + f"/jw_{tag}_store",
        "state": home / "state",
        "down": False,
    }
    try:
        up = subprocess.run(
            ["bash", "scripts/stack.sh", "up"], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=900
        )
        (home / "stack-up.log").write_text(up.stdout + up.stderr)
        assert up.returncode == 0, (up.stdout + up.stderr)[-4000:]
        info["up_output"] = up.stdout
        yield info
    finally:
        if not info["down"]:
            subprocess.run(["bash", "scripts/stack.sh", "down"], cwd=REPO_ROOT, env=env, timeout=120)
        for db in (env["JUDGEWATCH_PREFECT_DB"], env["JUDGEWATCH_STORE_DB"]):
            try:
                admin_sql(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')
            except Exception as exc:  # leave the database, say so; never hide a failing test behind cleanup
                warnings.warn(f"could not drop {db}: {exc}", stacklevel=1)


def recorded(home: Path, name: str, *, bad: bool = False) -> str:
    path = home / f"{name}.jsonl"
    items = load_golden_set(SET).items
    write_recorded_answers(path, [(i.id, (i.bad_answers if bad else i.good_answers)[0]) for i in items])
    return str(path)


def ran_by(worker_log: Path, run_ids: list[str]) -> list[str]:
    """The flow runs this worker submitted and did not abort (another worker may have taken one first)."""
    log = worker_log.read_text()
    return [i for i in run_ids if f"submitting flow run '{i}'" in log and f"submission of flow run '{i}'" not in log]


def test_stack_up_prints_every_part_healthy(stack: dict[str, Any]) -> None:
    out = stack["up_output"]
    for part in ("prefect-server", "worker-1", "worker-2", "judge", "review-ui", "ingest", "store"):
        assert re.search(rf"^{part}\s+.*healthy$", out, re.M), out
    assert "Deployment 'post-release-regression/post-release-regression'" in out
    assert "Deployment 'calibration/calibration'" in out and "Deployment 'traffic-sampling/traffic-sampling'" in out
    assert (
        "Deployment 'ingest-judging/ingest-judging'" in out and "Deployment 'sample-partition/sample-partition'" in out
    )
    # Prefect's own database is PostgreSQL: its tables are in the stack's judgewatch_prefect database.
    engine = create_engine(PG.rsplit("/", 1)[0] + "/" + stack["env"]["JUDGEWATCH_PREFECT_DB"])
    with engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM deployment")).scalar_one() == 5
    engine.dispose()
    again = subprocess.run(
        ["bash", "scripts/stack.sh", "up"], cwd=REPO_ROOT, env=stack["env"], capture_output=True, text=True, timeout=900
    )
    assert again.returncode == 0, again.stdout[-3000:]
    assert "prefect-server already running" in again.stdout and "worker-1 already running" in again.stdout


def test_stack_up_writes_the_env_a_shell_needs_to_reach_the_deployments(stack: dict[str, Any]) -> None:
    """Without PREFECT_API_URL a shell's `prefect deployment run` answers `Deployment ... not found!`: up says what to
    source, and with it sourced (and nothing else set) the deployments are found and the store is the stack's."""
    env_file = stack["state"] / "env"
    assert f"source {env_file}" in stack["up_output"]
    clean = {k: v for k, v in stack["env"].items() if k not in ("PREFECT_API_URL", "JUDGEWATCH_DATABASE_URL")}
    shown = subprocess.run(
        ["bash", "-c", f"source {env_file} && prefect deployment ls && echo store=$JUDGEWATCH_DATABASE_URL"],
        cwd=REPO_ROOT,
        env={**clean, "PATH": f"{Path(sys.executable).parent}:{clean['PATH']}"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert shown.returncode == 0, shown.stderr[-2000:]
    assert "post-release-regression" in shown.stdout
    assert f"store={stack['store']}" in shown.stdout


def _env_file(path: Path) -> dict[str, str]:
    """The `export NAME=value` lines of the stack's env file, as a shell that sources it would have them."""
    lines = [line.removeprefix("export ").partition("=") for line in path.read_text().splitlines()]
    return {name: value.strip("'") for name, _, value in lines}


def test_spans_sent_with_the_otel_sdk_are_judged_by_a_worker_on_schedule(stack: dict[str, Any]) -> None:
    """An application's OTLP exporter, set up from the env file `up` wrote (endpoint and bearer token), sends
    GenAI chat spans to the stack's receiver; nobody runs a command: the ingest-judging deployment's scheduled
    flow run, on a worker, judges them."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    exported = _env_file(stack["state"] / "env")
    assert (stack["state"] / "env").stat().st_mode & 0o077 == 0  # it holds the receiver's token
    token = exported["JUDGEWATCH_INGEST_TOKEN"]
    assert exported["OTEL_EXPORTER_OTLP_TRACES_HEADERS"] == f"Authorization=Bearer%20{token}"
    exporter = OTLPSpanExporter(
        endpoint=exported["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"], headers={"Authorization": f"Bearer {token}"}
    )
    provider = TracerProvider(resource=Resource.create({"service.name": "shop-assistant"}))
    provider.add_span_processor(BatchSpanProcessor(exporter))
    tracer = provider.get_tracer("shop")
    for k in range(6):
        with tracer.start_as_current_span(f"chat small-q {k}") as chat:
            question = [{"role": "user", "parts": [{"type": "text", "content": f"What is {k} plus {k}?"}]}]
            answer = [
                {"role": "assistant", "parts": [{"type": "text", "content": f"{2 * k}."}], "finish_reason": "stop"}
            ]
            chat.set_attributes({
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "small-q",
                "gen_ai.input.messages": json.dumps(question),
                "gen_ai.output.messages": json.dumps(answer),
            })  # fmt: skip
    provider.force_flush()
    provider.shutdown()
    engine = create_engine(stack["store"])
    query = text(
        "SELECT count(DISTINCT v.interaction_id) FROM verdict v JOIN interaction i ON i.id = v.interaction_id "
        "WHERE i.source = 'traffic:otlp'"
    )
    deadline, judged = time.monotonic() + 300, 0
    try:
        while time.monotonic() < deadline:
            with engine.connect() as conn:
                stored = conn.execute(text("SELECT count(*) FROM interaction WHERE source = 'traffic:otlp'")).scalar()
                judged = conn.execute(query).scalar_one()
            if judged == 6:
                break
            time.sleep(3)
        assert stored == 6 and judged == 6, f"{stored} spans stored, {judged} judged in 300 s"
        with engine.connect() as conn:
            runs = conn.execute(text("SELECT name, status FROM eval_run WHERE name = 'ingest-judge/otlp'")).all()
    finally:
        engine.dispose()
    assert runs and all(status != "failed" for _, status in runs), runs
    completed = {
        "deployments": {"name": {"any_": ["ingest-judging"]}},
        "flow_runs": {"state": {"type": {"any_": ["COMPLETED"]}}},
    }
    flow_runs = httpx.post(f"{stack['api']}/flow_runs/filter", json=completed, timeout=30).raise_for_status().json()
    assert flow_runs, "no completed ingest-judging flow run"
    assert all(r["auto_scheduled"] for r in flow_runs)  # started by the schedule, not by a person or this test


def test_ci_triggers_regression_completed_then_regressed_release_failed(stack: dict[str, Any]) -> None:
    api, home = stack["api"], stack["home"]
    good, bad = recorded(home, "good"), recorded(home, "bad", bad=True)
    common = {"datasets": [SET], "judge": "reference", "baseline_tier": "full"}
    first_id = run_via_rest(
        api, DEPLOYMENT, {**common, "release": "r1", "answers": [f"full={good}", f"quantized={good}"]}
    )
    first = wait_final(api, first_id)
    assert first["state"]["type"] == "COMPLETED", first["state"]
    with session_scope(make_engine(stack["store"]), write=True) as session:
        accept_baseline(session=session, release="r1", by="ci")

    params = {**common, "release": "r2", "answers": [f"full={good}", f"quantized={bad}"]}
    cli = subprocess.run(
        [str(Path(sys.executable).parent / "prefect"), "deployment", "run", DEPLOYMENT, "--watch",
         "--params", json.dumps(params)],
        env={**stack["env"], "PREFECT_API_URL": api}, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert cli.returncode != 0, cli.stdout[-3000:]  # the pipeline reads the failure from the exit code
    run_id = re.search(r"UUID:\s*([0-9a-f-]{36})", cli.stdout)
    assert run_id, cli.stdout[-3000:]
    second = wait_final(api, run_id.group(1))
    assert second["state"]["type"] == "FAILED"
    message = second["state"]["message"]
    criteria = [c.name for c in load_rubric("answer_quality", REPO_ROOT / "rubrics").criteria]
    named = re.search(r"tier quantized (\w+) ", message)
    assert message.startswith("gate exit 1: REGRESSION") and named and named.group(1) in criteria, message

    # Both runs came from the pull step: each flow run cloned the test's repository first.
    for flow_run_id in (first_id, run_id.group(1)):
        events = httpx.post(
            f"{api}/events/filter",
            json={"filter": {"event": {"name": ["prefect.flow-run.pull-step.executed"]},
                             "any_resource": {"id": [f"prefect.flow-run.{flow_run_id}"]}}},
            timeout=30,
        ).raise_for_status().json()["events"]  # fmt: skip
        assert events and "git_clone" in json.dumps(events), events
    engine = make_engine(stack["store"])
    with engine.connect() as conn:
        verdicts = conn.execute(  # only these releases: the hourly sampling deployment may have run meanwhile
            text(
                "SELECT count(*) FROM verdict v JOIN interaction i ON i.id = v.interaction_id "
                "WHERE i.release IN ('r1', 'r2')"
            )
        ).scalar_one()
        decisions = conn.execute(
            text("SELECT release, exit_code, flow_run_id FROM gate_decision ORDER BY release")
        ).all()
    engine.dispose()
    n = len(load_golden_set(SET).items)
    assert verdicts == 6 * n  # r1 and r2 (r1 judged once): each tier's verdicts and the tier-vs-tier pairs'
    assert [tuple(d) for d in decisions] == [("r1", 0, first_id), ("r2", 1, run_id.group(1))]


def test_three_concurrent_runs_share_the_judge_budget(stack: dict[str, Any], sim: SimulatorHandle) -> None:
    api, home = stack["api"], stack["home"]
    good = recorded(home, "good-sim")
    sim.state.reset()
    ids = [
        run_via_rest(
            api,
            DEPLOYMENT,
            {
                "datasets": [SET],
                "judge": sim.base_url,
                "release": f"c{i}",
                "answers": [f"full={good}"],
                "fail_on_gate": False,
                "concurrency": 64,
                "accept_unvalidated_judge": True,  # the simulator scores at random: this is about the budget
            },
        )
        for i in range(3)
    ]
    runs = [wait_final(api, i, timeout_s=900) for i in ids]
    assert [r["state"]["type"] for r in runs] == ["COMPLETED"] * 3, [r["state"] for r in runs]
    workers = {
        httpx.get(f"{api}/flow_runs/{i}", timeout=30).json().get("work_queue_name") for i in ids
    }  # every run is in the regression queue; which worker took it is in the worker's log
    assert workers == {"regression"}
    taken = [len(ran_by(stack["state"] / f"worker-{w}.log", ids)) for w in (1, 2)]
    assert sum(taken) == 3 and all(t >= 1 for t in taken), taken  # spread over both workers (2 runs each at most)
    assert sim.state.max_in_flight <= 16, sim.state.stats()
    n = len(load_golden_set(SET).items)
    engine = make_engine(stack["store"])
    with engine.connect() as conn:
        rows = conn.execute(
            text(
                "SELECT v.status, v.unscored_reason FROM verdict v JOIN interaction i ON i.id = v.interaction_id "
                "WHERE i.release IN ('c0', 'c1', 'c2')"
            )
        ).all()
    engine.dispose()
    assert len(rows) == 3 * n  # every item has a verdict: scored, or unscored with its reason
    assert all(status == "scored" or reason for status, reason in rows), rows[:5]


def split_log(home: Path, slow_part: int) -> Path:
    """The demo log cut into 4 files (676 lines each but the last) under a source of its own name; the answers of
    file `slow_part` ask the simulator for 1.5 s a call, so that partition's run is surely mid-way when killed."""
    folder = home / "split-log"
    folder.mkdir()
    lines = (REPO_ROOT / "examples" / "traffic" / "halluqa_gateway_log.jsonl").read_text(encoding="utf-8").splitlines()
    for k in range(4):
        part = lines[k * 676 : (k + 1) * 676]
        if k == slow_part:
            part = [_slowed(line) for line in part]
        (folder / f"part-{k}.jsonl").write_text("\n".join(part) + "\n", encoding="utf-8")
    config = yaml.safe_load((REPO_ROOT / "examples" / "traffic" / "demo_source.yaml").read_text(encoding="utf-8"))
    config["name"], config["paths"] = "halluqa-split", [str(folder / "part-*.jsonl")]
    path = folder / "source.yaml"
    path.write_text(yaml.safe_dump(config, allow_unicode=True), encoding="utf-8")
    return path


def _slowed(line: str) -> str:
    try:
        row = json.loads(line)
        row["response"]["choices"][0]["message"]["content"] += " [[sim:slow=1500]]"
    except (ValueError, KeyError, IndexError, TypeError):  # the log's broken lines stay as they are
        return line
    return json.dumps(row, ensure_ascii=False)


def partition_runs(api: str, name: str) -> list[dict[str, Any]]:
    """The sample-partition flow runs of source `name`, oldest first."""
    only = {"deployments": {"name": {"any_": ["sample-partition"]}}}
    found = httpx.post(f"{api}/flow_runs/filter", json=only, timeout=30).raise_for_status().json()
    return sorted((r for r in found if r["name"].startswith(f"{name}#")), key=lambda r: r["created"])


def flow_run_processes(run_id: str) -> list[int]:
    """The processes a worker started for a flow run (its environment names the run)."""
    pids = []
    for environ in Path("/proc").glob("[0-9]*/environ"):
        try:
            if f"PREFECT__FLOW_RUN_ID={run_id}".encode() in environ.read_bytes().split(b"\0"):
                pids.append(int(environ.parent.name))
        except OSError:  # gone, or not ours
            continue
    return pids


def test_two_workers_share_a_partitioned_sample_and_a_killed_partition_resumes_alone(
    stack: dict[str, Any], sim: SimulatorHandle
) -> None:
    """`judgewatch sample --partitions 4` against the stack: both workers take partition flow runs; partition 3's
    run is killed mid-way (SIGKILL of its process), the sampling fails naming it and the source's watermark stays;
    run again, only partition 3 runs, from its own watermark, and the store holds what one pass stores."""
    api, home, store = stack["api"], stack["home"], stack["store"]
    source = split_log(home, slow_part=2)
    one = PG.rsplit("/", 1)[0] + f"/jw_{uuid.uuid4().hex[:8]}_one"  # the single pass's store
    env = {**stack["env"], "PREFECT_API_URL": api, "JUDGEWATCH_DATABASE_URL": store}  # the workers' store too
    sample = [str(Path(sys.executable).parent / "judgewatch"), "sample", "--source", str(source), "--json"]
    admin_sql(f'CREATE DATABASE "{one.rsplit("/", 1)[1]}"')
    try:
        single = subprocess.run([*sample, "--judge", "reference", "--database-url", one], env=env,
                                capture_output=True, text=True, timeout=600)  # fmt: skip
        assert single.returncode == 0, single.stderr[-3000:]
        sim.state.reset()
        split = [*sample, "--partitions", "4", "--judge", sim.base_url, "--batch-size", "5"]
        first = subprocess.Popen(split, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        engine = create_engine(store)
        deadline, victim = time.monotonic() + 600, None
        try:
            while victim is None:  # partition 3's run has checkpointed its own watermark at least once
                ended = first.poll() is not None
                assert time.monotonic() < deadline and not ended, first.communicate()[1][-3000:] if ended else "late"
                time.sleep(1)
                with engine.connect() as conn:
                    mark = conn.execute(
                        text("SELECT watermark FROM source_watermark WHERE source = 'halluqa-split#3/4'")
                    ).scalar()
                third = [r for r in partition_runs(api, "halluqa-split") if r["name"] == "halluqa-split#3/4"]
                if mark and third and flow_run_processes(third[0]["id"]):
                    victim = third[0]["id"]
            for pid in flow_run_processes(victim):
                os.kill(pid, signal.SIGKILL)  # the partition's process dies mid-way, as on a lost machine
            out, err = first.communicate(timeout=600)
            assert first.returncode == 2 and "partition 3/4 did not complete" in err, (out[-2000:], err[-2000:])
            runs = partition_runs(api, "halluqa-split")
            assert sorted(r["name"] for r in runs) == [f"halluqa-split#{k}/4" for k in range(1, 5)]
            states = {r["name"]: r["state"]["type"] for r in runs}
            assert states.pop("halluqa-split#3/4") == "CRASHED" and set(states.values()) == {"COMPLETED"}, states
            taken = [ran_by(stack["state"] / f"worker-{w}.log", [r["id"] for r in runs]) for w in (1, 2)]
            assert len(taken[0]) + len(taken[1]) == 4 and all(taken), taken  # both workers took partitions
            with engine.connect() as conn:
                rows = dict(conn.execute(text(
                    "SELECT source, completed_at IS NOT NULL FROM source_watermark WHERE partition_of IS NOT NULL"
                )).all())  # fmt: skip
                kept = json.loads(conn.execute(text(
                    "SELECT watermark FROM source_watermark WHERE source = 'halluqa-split#3/4'"
                )).scalar_one())["files"][str(source.parent / "part-2.jsonl")]["rows"]  # fmt: skip
            assert rows == {f"halluqa-split#{k}/4": k != 3 for k in range(1, 5)} and 0 < kept < 676
            assert stored_sample(store, "halluqa-split")["watermark"] is None  # the source's own has not moved

            again = subprocess.run(split, env=env, capture_output=True, text=True, timeout=900)
            assert again.returncode == 0, again.stderr[-3000:]
            report = json.loads(again.stdout)
            assert report["read"] == 676 - kept  # partition 3's rest, nothing else
            assert [report["partitions"][f"{k}/4"] for k in (1, 2, 4)] == ["read by an earlier run"] * 3
            assert len(partition_runs(api, "halluqa-split")) == 5  # one more flow run: partition 3's
        finally:
            engine.dispose()
            if first.poll() is None:
                first.kill()
        # the union of the partitions' picks, quarantined rows and watermarks is one pass's
        assert stored_sample(store, "halluqa-split") == stored_sample(one, "halluqa-split")
        assert sim.state.max_in_flight <= 16, sim.state.stats()  # within the judge's global limit, together
    finally:
        admin_sql(f'DROP DATABASE IF EXISTS "{one.rsplit("/", 1)[1]}" WITH (FORCE)')


def test_killed_worker_run_crashes_and_retrigger_completes_without_duplicates(
    stack: dict[str, Any], sim: SimulatorHandle
) -> None:
    api, home, state = stack["api"], stack["home"], stack["state"]
    items = load_golden_set(SET).items
    slow = home / "slow.jsonl"  # every judge call takes 1.5 s: the run is surely mid-way when its worker dies
    write_recorded_answers(slow, [(i.id, f"{i.good_answers[0]} [[sim:slow=1500]]") for i in items])
    params = {"datasets": [SET], "judge": sim.base_url, "release": "k1", "answers": [f"full={slow}"]}
    params["fail_on_gate"] = False
    params["accept_unvalidated_judge"] = True  # the simulator scores at random: this is about the crash
    sim.state.reset()
    run_id = run_via_rest(api, DEPLOYMENT, params)
    deadline = time.monotonic() + 600
    while sim.state.status[200] < 5:  # judging has started and verdicts are being stored
        assert time.monotonic() < deadline, sim.state.stats()
        time.sleep(0.5)
    worker = next(w for w in (1, 2) if ran_by(state / f"worker-{w}.log", [run_id]))
    pid = int((state / f"worker-{worker}.pid").read_text())
    os.killpg(pid, signal.SIGKILL)  # the worker and the flow run process it started: a lost machine
    crashed = wait_final(api, run_id, timeout_s=300)
    assert crashed["state"]["type"] == "CRASHED", crashed["state"]

    rerun = wait_final(api, run_via_rest(api, DEPLOYMENT, params), timeout_s=900)  # the surviving worker takes it
    assert rerun["state"]["type"] == "COMPLETED", rerun["state"]
    engine = make_engine(stack["store"])
    with engine.connect() as conn:
        total, distinct = conn.execute(
            text(
                "SELECT count(*), count(DISTINCT v.interaction_id) FROM verdict v "
                "JOIN interaction i ON i.id = v.interaction_id WHERE i.release = 'k1'"
            )
        ).one()
    engine.dispose()
    assert total == distinct == len(items)  # no item lost, none judged twice


def test_stack_down_leaves_no_process_running(stack: dict[str, Any]) -> None:
    state: Path = stack["state"]
    pids = [int(p.read_text()) for p in state.glob("*.pid")]
    assert len(pids) == 5  # prefect server, two workers, review UI, OTLP receiver (the judge here is external)
    down = subprocess.run(
        ["bash", "scripts/stack.sh", "down"],
        cwd=REPO_ROOT,
        env=stack["env"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    stack["down"] = True
    assert down.returncode == 0, down.stderr
    assert not list(state.glob("*.pid"))
    for pid in pids:  # each started in its own session: nothing left in that process group either
        group = subprocess.run(["pgrep", "-g", str(pid)], capture_output=True, text=True)
        assert group.stdout.strip() == "", f"process group {pid} still has {group.stdout.split()}"
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    with pytest.raises(httpx.HTTPError):
        httpx.get(stack["api"] + "/health", timeout=5)
