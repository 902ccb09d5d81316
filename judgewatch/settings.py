"""One settings object, read from, highest first: arguments, the environment (JUDGEWATCH_*), a `.env` file, an
optional TOML file (README, "Configuration"), then the defaults below."""

from __future__ import annotations

import os
import re
from functools import lru_cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    SettingsError,
    TomlConfigSettingsSource,
)

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_CONFIG_FILE = "judgewatch.toml"


class ModelPrice(BaseModel):
    """A judge model's price per million tokens, in `Settings.cost_currency` (cached: prefix-cache hits)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    input: float = Field(ge=0)
    output: float = Field(ge=0)
    cached_input: float | None = Field(default=None, ge=0)

    def of(self, prompt: int, completion: int, cached: int) -> float:
        """The price of one call's tokens; cached input is priced as input when no cached price is set."""
        cached = min(cached, prompt)
        cached_price = self.input if self.cached_input is None else self.cached_input
        return ((prompt - cached) * self.input + cached * cached_price + completion * self.output) / 1_000_000


class Settings(BaseSettings):
    """Everything an operator can configure. Built by `get_settings()`, never at import time."""

    model_config = SettingsConfigDict(env_prefix="JUDGEWATCH_", env_file=".env", extra="ignore")

    data_dir: Path = Field(default=REPO_ROOT / ".judgewatch", description="SQLite file, reports, logs")
    database_url: str | None = Field(default=None, description="SQLAlchemy URL; default: SQLite in data_dir")
    rubrics_dir: Path = REPO_ROOT / "rubrics"
    datasets_dir: Path = REPO_ROOT / "datasets"

    judge_url: str = Field(default="http://127.0.0.1:8011/v1", description="OpenAI-compatible base URL")
    judge_model: str = "smollm2-135m-instruct"
    judge_api_key: str = "EMPTY"
    judge_fallback_urls: list[str] = Field(default_factory=list)
    judge_concurrency: int = 64
    judge_timeout_s: float = 60.0
    judge_max_retries: int = 2
    judge_max_tokens: int = 160
    judge_seed: int = 1234
    # vLLM reports its context window and counts tokens; for other servers the next two settings give the estimate.
    judge_fit_prompt: bool = Field(default=True, description="Trim reference material so prompts fit the window")
    judge_context_window: int = Field(
        default=4096, gt=0, description="Context window in tokens when the endpoint does not report max_model_len"
    )
    judge_chars_per_token: float = Field(
        default=3.0, gt=0, description="Characters per token of the estimate when the endpoint cannot count tokens"
    )
    # judges.score_logprobs: each score's expected value over the scale, stored beside the integer.
    judge_logprobs: bool = Field(default=False, description="Store probability-weighted scores beside the integers")
    judge_top_logprobs: int = Field(default=20, ge=1, le=20, description="Alternatives asked for per token position")
    # JSON, e.g. '{"dtype": "float32"}' (scripts/judge_serve.sh writes its choice to .judge/server-<port>.serving.json);
    # in the judge's config hash: another dtype or quantization is another judge series.
    judge_serving: dict[str, str] = Field(
        default_factory=dict, description="Declared serving flags of the judge model (dtype, quantization, ...)"
    )

    max_field_bytes: int = Field(
        default=256 * 1024, gt=0, description="Input rows with a text field larger than this are quarantined"
    )

    # Judging runs: a running run beats every run_heartbeat_s; one silent for run_expiry_s is marked abandoned.
    run_heartbeat_s: float = Field(default=30.0, gt=0)
    run_degraded_share: float = Field(
        default=0.05, ge=0, lt=1, description="A run with more verdicts than this share from a fallback is degraded"
    )
    run_expiry_s: float = Field(default=300.0, gt=0, description="A running run silent this long is abandoned")
    run_min_judged_share: float = Field(
        default=0.5, ge=0, le=1, description="A run scoring less than this share of the rows it read fails"
    )

    # PII: question, answer and references are scrubbed (judgewatch.contract.pii, every kind) before a judge or
    # a reviewer sees them, on every path. Turn off only for inputs known to hold none (curated golden sets).
    pii_scrub: bool = Field(default=True, description="Scrub PII from content sent to judges and reviewers")

    review_share: float = 0.10
    # Set: uncertainty-weighted routing, scaled to this many labels a day in expectation (review/active.py).
    review_budget: float | None = Field(default=None, gt=0, description="Expected labels per day, active routing")
    double_label_share: float = 0.10
    lease_seconds: int = 600
    # Review app logins: failures allowed per account / per address within the window, then a lockout.
    login_account_failures: int = Field(default=5, ge=1)
    login_address_failures: int = Field(default=20, ge=1)
    login_window_s: float = Field(default=900.0, gt=0)
    login_lockout_s: float = Field(default=900.0, gt=0)
    # Web origins (scheme://host[:port]) allowed to call the review app besides its own (the host it is served
    # under); requests from any other site are refused and its session cookies are SameSite=Lax.
    review_allowed_origins: list[str] = Field(default_factory=list)
    # Where people open the review app (behind a proxy: its public address): reports link their items to it.
    review_url: str = Field(default="http://127.0.0.1:7860", description="The review app's address, for links")

    # `judgewatch ingest serve`: OTLP/HTTP senders must send `Authorization: Bearer <this>`; unset, it will not start.
    ingest_token: SecretStr | None = Field(default=None, description="Bearer token OTLP senders must present")
    # Each verdict of an interaction that came from a trace sent as OpenTelemetry `gen_ai.evaluation.result`
    # events on the judged span (judgewatch/judging/evaluations.py), to the standard OTEL_EXPORTER_OTLP_* endpoint.
    otel_evaluations: bool = Field(default=False, description="Send verdicts of traced interactions over OTLP")

    # The tier every other serving tier is compared with (gaps read candidate − baseline) where neither a tiers
    # file (`baseline: true`) nor `--baseline-tier` names one: the gate, `report tiers` and the pages read it alike.
    baseline_tier: str | None = Field(default=None, description="Baseline serving tier when nothing else names one")

    # Estimates resting on fewer human labels than this read "too few labels (n=k, need m)", with no interval.
    min_labels: int = Field(default=5, ge=2, description="Human labels an estimate needs before it gets an interval")

    # Alert rules (judgewatch.alerts, docs/operations.md): checked after each calibration, sampling and ingest-judging
    # flow run and by `judgewatch alerts check`; unset, nothing is checked.
    alert_rules_file: Path | None = Field(default=None, description="YAML file of alert rules and their webhooks")
    # The calibration flow re-judges the anchor set when its last judging by the configured judge is older than
    # this, even with an unchanged fingerprint: a server change nothing reports is caught within the period.
    anchor_rejudge_days: float = Field(default=7.0, gt=0, description="Re-judge the anchors at least this often")

    # Judge trust (judgewatch.trust.policy.TrustPolicy): the minimum a judge must reach before a gate rests on it.
    trust_criterion: str = "faithfulness"
    trust_min_auroc: float = 0.70
    trust_max_unscored_rate: float = 0.2
    trust_min_items: int = 20
    # Known-answer pairs and probe items per golden set a gate measures an unmeasured judge on
    # (judgewatch.trust.measure); below trust_min_items the measurement is inconclusive and the gate exits 2.
    trust_gate_items: int = Field(default=20, ge=1)

    # Judge cost in money: price per million tokens per judge model id (JSON in the environment, e.g.
    # JUDGEWATCH_JUDGE_PRICES='{"my-judge": {"input": 0.10, "output": 0.40, "cached_input": 0.025}}').
    judge_prices: dict[str, ModelPrice] = Field(default_factory=dict)
    cost_currency: str = "USD"
    # Once the judge spend of the UTC day (priced by judge_prices) reaches this, sampling-side judging pauses until
    # the next UTC day: picks are stored and judged then (judgewatch.judging.spend_cap). Release gates never pause.
    judge_daily_spend_cap: float | None = Field(default=None, gt=0, description="Daily judge spend cap, cost_currency")

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """The TOML file below the environment and `.env` (a missing file is no error: defaults apply)."""
        toml_file = Path(os.environ.get("JUDGEWATCH_CONFIG_FILE") or DEFAULT_CONFIG_FILE)
        toml = TomlConfigSettingsSource(settings_cls, toml_file=toml_file)
        return (init_settings, env_settings, dotenv_settings, toml, file_secret_settings)

    @property
    def effective_database_url(self) -> str:
        return self.database_url or f"sqlite:///{self.data_dir / 'judgewatch.db'}"


class SettingsInvalid(ValueError):
    """A setting that cannot be read, in one line naming it (its variable) and why; the CLI exits 2 with it."""


def _setting_name(field: str) -> str:
    return f"{field} (JUDGEWATCH_{field.upper()}, .env or the TOML file)"


def describe_invalid(exc: ValidationError | SettingsError) -> str:
    """One line for a settings error: pydantic's are several lines and name no variable."""
    if isinstance(exc, ValidationError):
        errors = exc.errors()
        first = errors[0]
        where = ".".join(str(part) for part in first["loc"])
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        return f"invalid setting {_setting_name(where.split('.')[0])}: {where}: {first['msg']}{more}"
    field = re.search(r'field "(\w+)"', str(exc))
    cause = f": {exc.__cause__}" if exc.__cause__ else ""
    what = _setting_name(field.group(1)) if field else "value"
    return f"invalid setting {what}: not parseable (a structured setting is written as JSON){cause}"


# Settings that were removed, and what replaced them: set, they stop the command instead of being ignored (an
# operator who relied on one would otherwise lose what it did without a word).
REMOVED = {
    "JUDGEWATCH_CALIBRATION_WEBHOOK_URL": "drift alerts are sent by a `drift_alert` rule in the alert rules file "
    "(JUDGEWATCH_ALERT_RULES_FILE, docs/operations.md)",
}


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The settings, read once; an unreadable one raises `SettingsInvalid` with a one-line message."""
    for name, instead in REMOVED.items():
        if os.environ.get(name):
            raise SettingsInvalid(f"setting {name} was removed: {instead}")
    try:
        return Settings()
    except (ValidationError, SettingsError) as exc:
        raise SettingsInvalid(describe_invalid(exc)) from None
