"""One settings object, read from the environment (JUDGEWATCH_*), a `.env` file and an optional TOML file."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

REPO_ROOT = Path(__file__).resolve().parent.parent


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
    # Fitting prompts to the judge's context window: vLLM reports its window (/v1/models max_model_len) and
    # counts tokens exactly (/tokenize); for other OpenAI-compatible servers these settings give the estimate.
    judge_fit_prompt: bool = Field(default=True, description="Trim reference material so prompts fit the window")
    judge_context_window: int = Field(
        default=4096, gt=0, description="Context window in tokens when the endpoint does not report max_model_len"
    )
    judge_chars_per_token: float = Field(
        default=3.0, gt=0, description="Characters per token of the estimate when the endpoint cannot count tokens"
    )
    # Probability-weighted verdicts: ask the judge for token log-probabilities and store each score's expected
    # value over the scale beside the integer (judges.score_logprobs). Off: verdicts are read as integers only.
    judge_logprobs: bool = Field(default=False, description="Store probability-weighted scores beside the integers")
    judge_top_logprobs: int = Field(default=20, ge=1, le=20, description="Alternatives asked for per token position")

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
        default=0.5,
        ge=0,
        le=1,
        description="A run that scores less than this share of the rows it read (quarantined rows included) fails",
    )

    review_share: float = 0.10
    double_label_share: float = 0.10
    lease_seconds: int = 600
    # Review app logins: failures allowed per account / per address within the window, then a lockout.
    login_account_failures: int = Field(default=5, ge=1)
    login_address_failures: int = Field(default=20, ge=1)
    login_window_s: float = Field(default=900.0, gt=0)
    login_lockout_s: float = Field(default=900.0, gt=0)

    calibration_webhook_url: str | None = Field(default=None, description="POSTed a JSON body per new drift alert")

    # Judge trust (judgewatch.trust.policy.TrustPolicy): the minimum a judge must reach before a gate rests on it.
    trust_criterion: str = "faithfulness"
    trust_min_auroc: float = 0.70
    trust_max_unscored_rate: float = 0.2
    trust_min_items: int = 20

    @property
    def effective_database_url(self) -> str:
        if self.database_url:
            return self.database_url
        return f"sqlite:///{self.data_dir / 'judgewatch.db'}"


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()
