"""A traffic source's YAML config: where the rows are, how their fields map, how to sample and scrub them."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import (
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from judgewatch.contract.pii import PiiKind
from judgewatch.yaml_files import read_yaml

FieldPath = str | list[str]  # a dotted path ("response.choices.0.message.content"), or fallbacks tried in order
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_ONE_US = timedelta(microseconds=1)


def micros_of(at: datetime) -> int:
    """An aware datetime as exact epoch microseconds (`at.timestamp()` is this over 10**6, as a float): the
    instants the time filters compare, row by row or on a block's array of them."""
    return (at - EPOCH) // _ONE_US


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class FieldMapping(_Strict):
    """Where each `TrafficRow` field lives in a source row. Defaults read an OpenAI-compatible gateway log."""

    id: FieldPath | None = "id"  # files fall back to "path:line" when the row has none
    messages: FieldPath | None = "request.messages"
    question: FieldPath | None = None  # default: the last user message of `messages`
    answer: FieldPath = "response.choices.0.message.content"
    model: FieldPath | None = ["model", "response.model", "request.model"]
    tier: FieldPath | None = "metadata.tier"  # when absent, `tiers` maps the model name
    release: FieldPath | None = "metadata.release"
    route: FieldPath | None = "metadata.route"
    department: FieldPath | None = "metadata.department"
    timestamp: FieldPath | None = ["timestamp", "created", "response.created"]
    prompt_tokens: FieldPath | None = "response.usage.prompt_tokens"
    completion_tokens: FieldPath | None = "response.usage.completion_tokens"
    cached_tokens: FieldPath | None = "response.usage.prompt_tokens_details.cached_tokens"
    reference_answer: FieldPath | None = "reference.answer"
    reference_facts: FieldPath | None = "reference.facts"
    context: FieldPath | None = "reference.context"
    language: FieldPath | None = "metadata.language"


class DedupConfig(_Strict):
    """Identical request+response seen again within the window counts as a duplicate, not a new call."""

    enabled: bool = True
    window_rows: int = Field(default=50_000, ge=1)  # memory bound: at most this many content hashes kept
    window_seconds: float | None = Field(default=3600.0, gt=0)


class SamplingConfig(_Strict):
    """Rates per stratum (tier, or "tier/route" when stratify_by_route); the salt makes samples independent."""

    salt: str = "judgewatch"
    default_rate: float = Field(default=0.01, ge=0.0, le=1.0)
    rates: dict[str, float] = Field(default_factory=dict)
    stratify_by_route: bool = False
    dedup: DedupConfig = DedupConfig()

    @field_validator("rates")
    @classmethod
    def _rates_are_probabilities(cls, rates: dict[str, float]) -> dict[str, float]:
        if bad := {k: v for k, v in rates.items() if not 0.0 <= v <= 1.0}:
            raise ValueError(f"rates must be between 0 and 1, got {bad}")
        return rates


class FilterConfig(_Strict):
    """Rows outside these bounds are counted as filtered and never sampled. Route/department take globs."""

    routes: list[str] | None = None
    exclude_routes: list[str] = Field(default_factory=list)
    departments: list[str] | None = None
    exclude_departments: list[str] = Field(default_factory=list)
    since: AwareDatetime | None = None
    until: AwareDatetime | None = None  # exclusive
    min_answer_chars: int = Field(default=0, ge=0)
    max_answer_chars: int | None = Field(default=None, ge=0)

    def out_of_bounds(self, micros: Any, answer_chars: Any) -> tuple[Any, Any]:
        """(outside [since, until), outside [min, max] answer characters) of a row's time in epoch microseconds
        and its answer's length (None: not bounded), or of a block's numpy arrays of them: the one rule."""
        early = micros < micros_of(self.since) if self.since is not None else False
        late = micros >= micros_of(self.until) if self.until is not None else False
        if answer_chars is None:
            return early | late, False
        short = answer_chars < self.min_answer_chars
        long = answer_chars > self.max_answer_chars if self.max_answer_chars is not None else False
        return early | late, short | long


class PiiConfig(_Strict):
    enabled: bool = True
    kinds: list[PiiKind] = Field(default_factory=lambda: list(PiiKind))


class SourceConfig(_Strict):
    """One traffic source. `name` is part of every interaction id: renaming a source re-keys its rows."""

    name: str = Field(min_length=1)
    kind: Literal["jsonl", "parquet", "sql", "otlp"]  # otlp: collector files, or `judgewatch ingest serve`
    # globs; relative ones are relative to the config file; s3://, gs://, az:// URLs read objects (object_store)
    paths: list[str] = Field(default_factory=list)
    url: str | None = None
    url_env: str | None = None  # name of an environment variable holding the URL (keeps passwords out)
    table: str | None = None
    order_by: Literal["id", "time"] = "id"
    batch_size: int = Field(default=1000, ge=1, le=100_000)
    mapping: FieldMapping = FieldMapping()
    tiers: dict[str, str] = Field(default_factory=dict)  # model name (or name prefix) -> tier
    default_tier: str = "unknown"
    timezone: str = "UTC"  # applied to timestamps that carry no offset
    max_row_bytes: int = Field(default=1_000_000, ge=64)
    # A single text field over this is quarantined as oversize; None: the settings' max_field_bytes.
    max_field_bytes: int | None = Field(default=None, gt=0)
    sampling: SamplingConfig = SamplingConfig()
    filters: FilterConfig = FilterConfig()
    pii: PiiConfig = PiiConfig()

    @field_validator("paths")
    @classmethod
    def _relative_to_config(cls, paths: list[str], info: ValidationInfo) -> list[str]:
        base = (info.context or {}).get("base_dir")
        if base is None:
            return paths
        return [p if Path(p).is_absolute() or "://" in p else str(Path(base) / p) for p in paths]

    @field_validator("timezone")
    @classmethod
    def _known_timezone(cls, name: str) -> str:
        try:
            ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError) as exc:
            raise ValueError(f"unknown timezone {name!r}") from exc
        return name

    @model_validator(mode="after")
    def _kind_has_its_location(self) -> SourceConfig:
        if self.kind in ("jsonl", "parquet") and not self.paths:
            raise ValueError(f"a {self.kind} source needs `paths`")
        if self.kind == "sql":
            if not (self.url or self.url_env) or not self.table:
                raise ValueError("a sql source needs `url` (or `url_env`) and `table`")
            if self.mapping.id is None or not isinstance(self.mapping.id, str):
                raise ValueError("a sql source needs `mapping.id`: one column to order and key rows by")
        return self

    def database_url(self) -> str:
        """The SQL URL, read from `url_env` at call time when configured so."""
        if self.url_env:
            value = os.environ.get(self.url_env)
            if not value:
                raise SourceConfigError(f"source {self.name!r}: environment variable {self.url_env} is not set")
            return value
        if not self.url:
            raise SourceConfigError(f"source {self.name!r} has no url")
        return self.url

    def tier_for(self, model: str | None) -> str:
        """The tier of a model name: exact entry, else the longest entry the name starts with."""
        if model is None:
            return self.default_tier
        if model in self.tiers:
            return self.tiers[model]
        best = max((k for k in self.tiers if model.startswith(k)), key=len, default=None)
        return self.tiers[best] if best is not None else self.default_tier


class SourceConfigError(ValueError):
    """A config that cannot be used; the message names the file and the field."""


def parse_source_config(data: object, *, origin: str = "<config>", base_dir: Path | None = None) -> SourceConfig:
    """Validate a mapping (e.g. from YAML); errors name `origin` and each bad field."""
    try:
        return SourceConfig.model_validate(data, context={"base_dir": base_dir})
    except ValidationError as exc:
        lines = (f"{origin}: {'.'.join(map(str, err['loc'])) or '(top level)'}: {err['msg']}" for err in exc.errors())
        raise SourceConfigError("\n".join(lines)) from None


def load_source_config(path: str | Path) -> SourceConfig:
    """Read and validate a source YAML file; relative `paths` resolve against the file's folder."""
    path = Path(path)
    data = read_yaml(path, SourceConfigError, "source config")
    if not isinstance(data, dict):
        raise SourceConfigError(f"{path}: expected a mapping at the top level")
    return parse_source_config(data, origin=str(path), base_dir=path.resolve().parent)
