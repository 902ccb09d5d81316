"""`serve_declared`: the three flows' `serve` read their deployment from `prefect.yaml` the same way."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from prefect.client.schemas.objects import ConcurrencyLimitConfig

from flows.serving import serve_declared, serve_main
from judgewatch.settings import REPO_ROOT


class _RecordingFlow:
    """Stands in for a Prefect flow: keeps what `serve` was called with instead of serving."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def serve(self, **kwargs: Any) -> None:
        self.calls.append(kwargs)


def test_the_sampling_deployment_is_served_with_its_schedule_and_concurrency_limit() -> None:
    flow = _RecordingFlow()
    serve_declared(flow, "traffic-sampling", REPO_ROOT / "prefect.yaml")  # type: ignore[arg-type]
    (call,) = flow.calls
    assert call["name"] == "traffic-sampling"
    assert [s.cron for s in call["schedules"]] == ["0 * * * *"]
    assert isinstance(call["global_limit"], ConcurrencyLimitConfig)
    assert call["parameters"] and call["tags"]


def test_a_deployment_without_schedules_or_limit_leaves_them_to_prefect() -> None:
    flow = _RecordingFlow()
    serve_declared(flow, "post-release-regression", REPO_ROOT / "prefect.yaml")  # type: ignore[arg-type]
    (call,) = flow.calls
    assert call["name"] == "post-release-regression"
    assert "schedules" not in call and "global_limit" not in call


def test_an_undeclared_deployment_is_refused_naming_the_file(tmp_path: Path) -> None:
    declared = tmp_path / "prefect.yaml"
    declared.write_text("deployments:\n- name: other\n", encoding="utf-8")
    with pytest.raises(SystemExit, match=r"prefect\.yaml: no deployment named 'missing'"):
        serve_declared(_RecordingFlow(), "missing", declared)  # type: ignore[arg-type]


def test_the_module_entry_point_accepts_only_serve(monkeypatch: pytest.MonkeyPatch) -> None:
    served: list[bool] = []
    monkeypatch.setattr("flows.serving.configure_logging", lambda **_: None)  # leave this process's logging be
    monkeypatch.setattr("sys.argv", ["flows.sampling", "run"])
    with pytest.raises(SystemExit, match=r"usage: python -m flows\.sampling serve"):
        serve_main("flows.sampling", lambda: served.append(True))
    monkeypatch.setattr("sys.argv", ["flows.sampling", "serve"])
    serve_main("flows.sampling", lambda: served.append(True))
    assert served == [True]
