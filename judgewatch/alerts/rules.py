"""An alert rules file (`JUDGEWATCH_ALERT_RULES_FILE`): the webhooks, each naming the environment variable that
holds its URL (a secret, never in the file), and the rules that send to them (docs/operations.md, "Alert rules and
webhooks"). Validation is strict (unknown fields are errors) and an error is one line naming the file, the rule or
webhook and the field."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from judgewatch.yaml_files import ENV_NAME, error_line, read_yaml

NAME = r"^[A-Za-z0-9][\w.-]*$"


class AlertRulesError(ValueError):
    """A rules file that cannot be used, in one line naming the file and the field."""


class Webhook(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=NAME)
    format: Literal["slack", "json"]
    url_env: str = Field(pattern=f"^{ENV_NAME}$")

    @model_validator(mode="before")
    @classmethod
    def _no_url(cls, data: object) -> object:
        if isinstance(data, dict) and "url" in data:
            raise ValueError(
                "field 'url': a webhook URL is a secret: set it in an environment variable, name it in url_env"
            )
        return data


class _Rule(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=NAME)
    webhook: str


class _Scoped(_Rule):
    rubric: str | None = None  # None: every rubric
    tier: str | None = None  # None: every tier


class CorrectedScoreBelow(_Scoped):
    """The PPI-corrected score of the latest calibration snapshot below `threshold`, per tier and criterion."""

    condition: Literal["corrected_score_below"]
    threshold: float
    criterion: str | None = None
    estimand: Literal["traffic_quality", "release_quality"] = "traffic_quality"


class DriftAlertOpen(_Scoped):
    """An open drift alert (judge drift or served-model change) of the calibration flow."""

    condition: Literal["drift_alert"]
    criterion: str | None = None


class UnscoredShareAbove(_Scoped):
    """The share of traffic verdicts written in the last `window_hours` that are unscored, above `threshold`."""

    condition: Literal["unscored_share_above"]
    threshold: float = Field(gt=0, lt=1)
    window_hours: float = Field(default=24.0, gt=0)
    min_verdicts: int = Field(default=20, ge=1)  # fewer: not evaluated (said so), never an alert on 1 of 1


class JudgeSpendAbove(_Rule):
    """Today's (UTC) judge spend, priced by judge_prices, at or above `threshold` in the cost currency."""

    condition: Literal["judge_spend_above"]
    threshold: float = Field(gt=0)


Rule = Annotated[
    CorrectedScoreBelow | DriftAlertOpen | UnscoredShareAbove | JudgeSpendAbove, Field(discriminator="condition")
]


class RulesDocument(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    webhooks: list[Webhook] = Field(min_length=1)
    rules: list[Rule] = Field(min_length=1)


def _where(data: object, loc: list[str | int]) -> tuple[str, list[str | int]]:
    """("rule 'x' (rules[2]): ", the field's path) for an error located in one entry of a list."""
    if len(loc) >= 2 and loc[0] in ("rules", "webhooks") and isinstance(loc[1], int):
        entries = data.get(str(loc[0])) if isinstance(data, dict) else None
        entry = entries[loc[1]] if isinstance(entries, list) and loc[1] < len(entries) else None
        name = entry.get("name") if isinstance(entry, dict) else None
        what = f"{str(loc[0])[:-1]} {name!r} " if isinstance(name, str) else ""
        rest = loc[3:] if loc[0] == "rules" and len(loc) > 2 and loc[2] in RULE_CONDITIONS else loc[2:]
        return f"{what}({loc[0]}[{loc[1]}]): ", rest
    return "", loc


RULE_CONDITIONS = ("corrected_score_below", "drift_alert", "unscored_share_above", "judge_spend_above")


def parse_rules(data: object, *, origin: str) -> RulesDocument:
    """Validate a rules document; names must be unique and every rule's webhook declared."""
    if not isinstance(data, dict):
        raise AlertRulesError(f"{origin}: expected a mapping with 'webhooks' and 'rules' at the top level")
    try:
        document = RulesDocument.model_validate(data)
    except ValidationError as exc:  # the first error in one line (and how many more)
        errors = exc.errors()
        where, loc = _where(data, list(errors[0]["loc"]))
        if errors[0]["type"] in ("union_tag_invalid", "union_tag_not_found"):
            loc.append("condition")
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise AlertRulesError(error_line(origin, where, loc, errors[0]["msg"]) + more) from None
    hooks = [w.name for w in document.webhooks]
    for kind, names in (("webhooks", hooks), ("rules", [r.name for r in document.rules])):
        for index, name in enumerate(names):
            if name in names[:index]:
                raise AlertRulesError(f"{origin}: {kind}[{index}]: field 'name': duplicate name {name!r}")
    for index, rule in enumerate(document.rules):
        if rule.webhook not in hooks:
            raise AlertRulesError(
                f"{origin}: rule {rule.name!r} (rules[{index}]): field 'webhook': no webhook named {rule.webhook!r} "
                f"(declared: {', '.join(hooks)})"
            )
    return document


def load_rules(path: str | Path) -> RulesDocument:
    """Read and validate a rules YAML file; every error names the file (and the rule and field)."""
    path = Path(path).expanduser()
    return parse_rules(read_yaml(path, AlertRulesError, "alert rules file"), origin=str(path))
