"""A tiers file: the serving tiers of a release as the product runs them (`judgewatch regress --tiers FILE`;
docs/release_gate.md, "Serving tiers as the product runs them", and examples/tiers.yaml).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import yaml
from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic_core import ErrorDetails

from judgewatch.regression.answer_prompt import AnswerTemplate, TemplateError
from judgewatch.regression.serving import TierError, TierParams, TierSpec
from judgewatch.yaml_files import ENV_NAME, error_line, read_yaml, validated

ENV_REFERENCE = re.compile(r"\$\{(" + ENV_NAME + r")\}")
_HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
# Set by the client from `api_key_env`, or by the HTTP layer: a tier's headers may not override them.
_MANAGED_HEADERS = frozenset({"authorization", "content-type", "content-length", "host"})


class TierEntry(BaseModel):
    """One tier as written in a tiers file."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=r"^[A-Za-z0-9][\w.-]*$")
    base_url: str
    model: str = Field(min_length=1)
    api_key_env: str | None = Field(default=None, pattern=f"^{ENV_NAME}$")
    headers: dict[str, str] = Field(default_factory=dict)
    prompt_template: str | None = None
    params: TierParams = TierParams()
    concurrency: int | None = Field(default=None, ge=1, le=1024)
    baseline: bool = False  # the release's other tiers are compared with this one (at most one per file)

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, url: str) -> str:
        parsed = urlparse(url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise ValueError(f"{url!r} is not an http(s) URL")
        if parsed.password is not None:
            raise ValueError("the URL carries a password: put the key in an environment variable (api_key_env)")
        return url.rstrip("/")

    @field_validator("headers")
    @classmethod
    def _valid_headers(cls, headers: dict[str, str]) -> dict[str, str]:
        for name, value in headers.items():
            if not _HEADER_NAME.match(name):
                raise ValueError(f"{name!r} is not a valid HTTP header name")
            if name.lower() in _MANAGED_HEADERS:
                raise ValueError(f"header {name!r} is set by judgewatch (use api_key_env for the bearer key)")
            if "\n" in value or "\r" in value:
                raise ValueError(f"header {name!r}: a value cannot contain a line break")
            if "${" in ENV_REFERENCE.sub("", value):
                raise ValueError(f"header {name!r}: malformed variable reference (write ${{NAME}})")
        return headers


class TiersDocument(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    tiers: list[TierEntry] = Field(min_length=1)


def _error_line(err: ErrorDetails, tiers: list[Any], origin: str) -> str:
    """One validation error as `FILE: tier 'x' (tiers[2]): field 'a.b': message`."""
    loc, where = list(err["loc"]), ""
    if len(loc) >= 2 and loc[0] == "tiers" and isinstance(index := loc[1], int):
        entry = tiers[index] if index < len(tiers) else None
        name = entry.get("name") if isinstance(entry, dict) else None
        where = (f"tier {name!r} (tiers[{index}])" if isinstance(name, str) else f"tiers[{index}]") + ": "
        loc = loc[2:]
    elif loc[:1] == ["tiers"]:
        loc = ["tiers"]
    return error_line(origin, where, loc, err["msg"])


def parse_tiers_document(data: object, *, origin: str, base_dir: Path) -> list[TierSpec]:
    """Validate a tiers document (a mapping with `tiers`, or a bare list); template paths resolve from `base_dir`."""
    data = {"tiers": data} if isinstance(data, list) else data
    if not isinstance(data, dict):
        raise TierError(f"{origin}: expected a list of tiers, or a mapping with 'tiers', at the top level")
    tiers = found if isinstance(found := data.get("tiers"), list) else []
    document = validated(TiersDocument, data, TierError, lambda err: _error_line(err, tiers, origin))
    specs: list[TierSpec] = []
    seen: dict[str, int] = {}
    for index, entry in enumerate(document.tiers):
        label = f"{origin}: tier {entry.name!r} (tiers[{index}])"
        if entry.name in seen:
            raise TierError(f"{label}: field 'name': duplicate of tiers[{seen[entry.name]}]")
        seen[entry.name] = index
        template = None
        if entry.prompt_template is not None:
            path = Path(entry.prompt_template).expanduser()
            try:
                template = AnswerTemplate.load(path if path.is_absolute() else base_dir / path)
            except TemplateError as exc:
                raise TierError(f"{label}: field 'prompt_template': {exc}") from None
        fields = entry.model_dump(exclude={"prompt_template"})
        specs.append(TierSpec(kind="live", template=template, origin=origin, **fields))
    marked = [f"{s.name!r} (tiers[{k}])" for k, s in enumerate(specs) if s.baseline]
    if len(marked) > 1:
        raise TierError(f"{origin}: field 'baseline': only one tier can be the baseline, got {', '.join(marked)}")
    return specs


def load_tiers_file(path: str | Path) -> list[TierSpec]:
    """Read and validate a tiers YAML file; every error names the file (and the tier and field)."""
    path = Path(path).expanduser()
    data = read_yaml(path, TierError, "tiers file")
    return parse_tiers_document(data, origin=str(path), base_dir=path.resolve().parent)


def load_tiers_value(value: Any, *, origin: str, base_dir: Path) -> list[TierSpec]:
    """A tiers document held elsewhere (a Prefect variable): YAML text, or the already parsed list/mapping."""
    if isinstance(value, str):
        try:
            value = yaml.safe_load(value)
        except yaml.YAMLError as exc:
            raise TierError(f"{origin}: not valid YAML: {exc}") from None
    return parse_tiers_document(value, origin=origin, base_dir=base_dir)


def _where(spec: TierSpec) -> str:
    return f"tier {spec.name}" + (f" in {spec.origin}" if spec.origin else "")


def credentials(spec: TierSpec, environ: Mapping[str, str] | None = None) -> tuple[str, dict[str, str]]:
    """(api key, headers with `${VAR}` expanded) read from the environment now; a missing variable is named. Without
    `api_key_env` the key is "EMPTY", as vLLM and most local servers expect."""
    env = os.environ if environ is None else environ
    key = "EMPTY"
    if spec.api_key_env is not None:
        key = env.get(spec.api_key_env, "")
        if not key:
            raise TierError(f"environment variable {spec.api_key_env} is not set (api_key_env of {_where(spec)})")

    def expand(header: str, value: str) -> str:
        def one(match: re.Match[str]) -> str:
            name = match.group(1)
            if name not in env:
                raise TierError(f"environment variable {name} is not set (header {header} of {_where(spec)})")
            return env[name]

        return ENV_REFERENCE.sub(one, value)

    return key, {name: expand(name, value) for name, value in spec.headers.items()}


def baseline_tier(specs: list[TierSpec], asked: str | None = None, default: str | None = None) -> str | None:
    """The tier the release's other tiers are compared with: `asked` (`--baseline-tier`), else the one a tiers
    file marks `baseline: true`, else `default` (the `baseline_tier` setting) when it is a tier of the run, else
    None (no within-release comparison). Never chosen by a tier's name."""
    names = [s.name for s in specs]
    if asked is not None:
        if asked not in names:
            raise TierError(
                f"--baseline-tier {asked!r} is not a tier of this run (tiers: {', '.join(names) or 'none'})"
            )
        return asked
    marked = [s.name for s in specs if s.baseline]
    if len(marked) > 1:
        raise TierError(f"several tiers are marked 'baseline: true': {', '.join(marked)}; mark one")
    if marked:
        return marked[0]
    return default if default in names else None


def load_configured_tiers(
    tiers_file: str | Path | None = None, *, variable: str | None = None, value: Any = None
) -> list[TierSpec]:
    """The tiers of a tiers file and of a tiers document held in a (Prefect) variable, file first. `value` is the
    variable's content, read by the caller; template paths in it resolve from the working directory (a deployment's flow
    runs start at the repository root)."""
    specs = load_tiers_file(tiers_file) if tiers_file else []
    if variable:
        if value is None:
            raise TierError(f"variable {variable!r}: not set (expected a tiers document, as in a tiers file)")
        specs += load_tiers_value(value, origin=f"variable {variable}", base_dir=Path.cwd())
    return specs
