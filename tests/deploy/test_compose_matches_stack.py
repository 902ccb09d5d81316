"""deploy/compose runs the same command lines as `make stack-up` (scripts/stack.sh), so the two cannot drift apart.

`stack.sh commands` prints every service's command line; run with the values the Compose file uses (hosts,
ports, URLs), each must equal the `command:` of the Compose service of the same name.
"""

from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path

import yaml

from judgewatch.settings import REPO_ROOT

COMPOSE = REPO_ROOT / "deploy" / "compose" / "compose.yaml"
COMPOSE_VALUES = {
    "JUDGEWATCH_STACK_HOST": "0.0.0.0",
    "JUDGEWATCH_PREFECT_PORT": "4200",
    "JUDGEWATCH_REVIEW_PORT": "7860",
    "JUDGEWATCH_PG_URL": "postgresql://postgres@postgres:5432",
    "JUDGEWATCH_PREFECT_DB": "judgewatch_prefect",
    "JUDGEWATCH_STORE_DB": "judgewatch",
    "JUDGEWATCH_JUDGE_URL": "http://vllm-judge:8000/v1",
    "JUDGEWATCH_JUDGE_SLOTS": "64",
    "JUDGEWATCH_WORK_POOL": "judgewatch",
    "JUDGEWATCH_WORKERS": "2",
    "JUDGEWATCH_WORKER_LIMIT": "4",
    "JUDGEWATCH_INGEST_PORT": "4318",
}


def stack_commands(values: dict[str, str]) -> dict[str, list[str]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("JUDGEWATCH_")} | values
    script = str(REPO_ROOT / "scripts" / "stack.sh")
    out = subprocess.run(["bash", script, "commands"], env=env, capture_output=True, text=True, check=True).stdout
    return {name: shlex.split(line) for name, _, line in (row.partition(": ") for row in out.splitlines())}


def compose_commands(path: Path = COMPOSE) -> dict[str, list[str]]:
    services = yaml.safe_load(path.read_text(encoding="utf-8"))["services"]
    return {name: [str(a) for a in spec["command"]] for name, spec in services.items() if "command" in spec}


def test_every_stack_command_runs_unchanged_in_compose() -> None:
    stack, compose = stack_commands(COMPOSE_VALUES), compose_commands()
    assert set(stack) >= {"prefect-server", "worker-1", "worker-2", "deploy", "judge-limit", "review-ui"}
    missing = sorted(set(stack) - set(compose))
    assert not missing, f"services of stack.sh without a Compose service: {missing}"
    for name, argv in stack.items():
        assert compose[name] == argv, f"{name}: compose runs {compose[name]}, stack.sh runs {argv}"


def test_the_comparison_catches_a_drifted_command(tmp_path: Path) -> None:
    drifted = COMPOSE.read_text(encoding="utf-8").replace('--limit, "4", --name, judgewatch-worker-2', "--name, w2")
    (tmp_path / "compose.yaml").write_text(drifted, encoding="utf-8")
    stack, compose = stack_commands(COMPOSE_VALUES), compose_commands(tmp_path / "compose.yaml")
    assert compose["worker-2"] != stack["worker-2"]
    assert compose["worker-1"] == stack["worker-1"]


def test_compose_judge_serves_the_model_name_and_budget_the_stack_expects() -> None:
    judge = yaml.safe_load(COMPOSE.read_text(encoding="utf-8"))["services"]["vllm-judge"]["command"]
    flags = dict(zip(judge[::2], judge[1::2], strict=True))
    assert flags["--served-model-name"] == "smollm2-135m-instruct"  # scripts/judge_serve.sh's served name
    assert flags["--max-num-seqs"] == COMPOSE_VALUES["JUDGEWATCH_JUDGE_SLOTS"]  # the global limit = what it serves
    assert flags["--max-model-len"] == "2048"


def _port_of(argv: list[str]) -> str | None:
    return argv[argv.index("--port") + 1] if "--port" in argv else None


def test_every_listening_stack_service_publishes_its_port_and_checks_health_there() -> None:
    stack = stack_commands(COMPOSE_VALUES)
    services = yaml.safe_load(COMPOSE.read_text(encoding="utf-8"))["services"]
    listening = {name: port for name, argv in stack.items() if (port := _port_of(argv))}
    assert listening == {"prefect-server": "4200", "review-ui": "7860", "ingest": "4318"}
    for name, port in listening.items():
        published = [str(p).rsplit(":", 1) for p in services[name].get("ports", [])]
        assert [port, port] in published, f"{name} listens on {port}, compose publishes {published}"
        health = " ".join(services[name].get("healthcheck", {}).get("test", []))
        assert not health or f":{port}/" in health, f"{name}: healthcheck {health!r} is not on port {port}"
    for name, spec in services.items():  # nothing published that no process listens on
        for mapping in spec.get("ports", []):
            container = str(mapping).rsplit(":", 1)[-1]
            assert _port_of([str(a) for a in spec.get("command", [])]) == container, (name, mapping)
