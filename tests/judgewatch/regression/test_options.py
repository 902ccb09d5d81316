"""The gate's defaults live in one typed model: the command, the flow and `prefect.yaml` agree with it."""

from __future__ import annotations

import inspect

import pytest
import yaml
from pydantic import ValidationError

from judgewatch.regression.options import DEFAULTS, GateOptions
from judgewatch.settings import REPO_ROOT


def test_prefect_yaml_deployment_parameters_match_the_gate_options() -> None:
    document = yaml.safe_load((REPO_ROOT / "prefect.yaml").read_text(encoding="utf-8"))
    [deployment] = [d for d in document["deployments"] if d["name"] == "post-release-regression"]
    parameters = deployment["parameters"]
    shared = set(parameters) & set(GateOptions.model_fields)
    assert {"baseline", "margin", "max_unscored_share"} <= shared
    assert {name: parameters[name] for name in shared} == {name: getattr(DEFAULTS, name) for name in shared}
    GateOptions.model_validate({name: parameters[name] for name in shared})  # and they are valid options


def test_the_flow_and_the_command_take_their_defaults_from_the_gate_options() -> None:
    from flows.regression import post_release_regression
    from judgewatch.cli.regress_cmd import regress

    flow = inspect.signature(post_release_regression.fn).parameters
    command = inspect.signature(regress).parameters
    for name in GateOptions.model_fields:
        assert flow[name].default == getattr(DEFAULTS, name), name
        assert command[name].default == getattr(DEFAULTS, name), name


def test_gate_options_refuse_what_no_gate_can_use() -> None:
    with pytest.raises(ValidationError, match="margin"):
        GateOptions(margin=-0.1)
    with pytest.raises(ValidationError, match="max_unscored_share"):
        GateOptions(max_unscored_share=1.5)
    with pytest.raises(ValidationError, match="extra_forbidden"):
        GateOptions.model_validate({"margn": 0.2})
