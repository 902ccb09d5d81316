"""Serve a flow as `prefect.yaml` declares its deployment, without a work pool: this process runs its flow runs."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from prefect import Flow

from judgewatch.logs import configure_logging


def serve_declared(flow: Flow[..., Any], deployment: str, prefect_yaml: Path) -> None:
    """Serve `flow` under the name, description, tags, parameters, schedules and concurrency limit that
    `prefect_yaml` declares for `deployment`; a key the file leaves out is left to Prefect's default."""
    from prefect.client.schemas.objects import ConcurrencyLimitConfig
    from prefect.schedules import Cron

    declared = yaml.safe_load(prefect_yaml.read_text(encoding="utf-8")).get("deployments") or []
    spec = next((d for d in declared if d.get("name") == deployment), None)
    if spec is None:
        raise SystemExit(f"{prefect_yaml}: no deployment named {deployment!r}")
    options: dict[str, Any] = {}
    if "schedules" in spec:
        crons = [s for s in spec.get("schedules") or [] if "cron" in s]
        options["schedules"] = [Cron(s["cron"], timezone=s.get("timezone")) for s in crons]
    limit = spec.get("concurrency_limit")
    if limit is not None:
        options["global_limit"] = ConcurrencyLimitConfig.model_validate(limit) if isinstance(limit, dict) else limit
    flow.serve(
        name=spec["name"],
        description=spec.get("description"),
        tags=spec.get("tags") or [],
        parameters=spec.get("parameters") or {},
        **options,
    )


def serve_main(module: str, serve: Callable[[], None]) -> None:
    """`python -m <module> serve`: configure logging as every entry point does, then serve the deployment."""
    if sys.argv[1:] != ["serve"]:
        raise SystemExit(f"usage: python -m {module} serve")
    configure_logging(default_level="INFO")
    serve()
