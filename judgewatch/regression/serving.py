"""Serving tiers of a release: a live OpenAI-compatible endpoint (`NAME=URL#MODEL`, or a tiers file:
`tier_config`) or a JSONL file of recorded answers (`{"id", "answer"}` per golden item it answered;
docs/release_gate.md, "Tiers that answered different items").
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlparse

from pydantic import BaseModel, ConfigDict, Field, field_validator

from judgewatch.contract.raw_rows import RowError, json_object
from judgewatch.redact import mask_url, mask_urls_in
from judgewatch.regression.answer_prompt import AnswerTemplate
from judgewatch.url_secrets import hide


class TierError(ValueError):
    """A tier specification or an answers file that cannot be used; the message says which and why."""


# Request fields a tier's `extra_body` may not set: judgewatch sends them itself, or they are named params.
RESERVED_BODY_FIELDS = frozenset(
    {"model", "messages", "stream", "n", "temperature", "top_p", "max_tokens", "max_completion_tokens", "seed", "stop"}
)


class TierParams(BaseModel):
    """A live tier's generation settings; None means judgewatch's default (temperature 0, the gate's seed and
    max_tokens). `extra_body` is passed through into the request body as is (e.g. `top_k`, `repetition_penalty`).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    temperature: float | None = Field(default=None, ge=0.0, le=2.0)
    top_p: float | None = Field(default=None, gt=0.0, le=1.0)
    max_tokens: int | None = Field(default=None, ge=1)
    seed: int | None = None
    stop: list[str] | None = None
    extra_body: dict[str, Any] = Field(default_factory=dict)

    @field_validator("stop", mode="before")
    @classmethod
    def _one_stop_is_a_list(cls, value: object) -> object:
        return [value] if isinstance(value, str) else value

    @field_validator("extra_body")
    @classmethod
    def _no_reserved_fields(cls, body: dict[str, Any]) -> dict[str, Any]:
        if reserved := sorted(set(body) & RESERVED_BODY_FIELDS):
            raise ValueError(f"{reserved} cannot be set here (use params.<name>, or leave them to judgewatch)")
        return body

    def request(self, *, max_tokens: int, seed: int) -> dict[str, Any]:
        """The effective request parameters: this tier's settings over the gate's defaults, extra body last."""
        out: dict[str, Any] = {
            "temperature": self.temperature if self.temperature is not None else 0.0,
            "max_tokens": self.max_tokens if self.max_tokens is not None else max_tokens,
            "seed": self.seed if self.seed is not None else seed,
        }
        if self.top_p is not None:
            out["top_p"] = self.top_p
        if self.stop is not None:
            out["stop"] = list(self.stop)
        return {**out, **self.extra_body}


class TierSpec(BaseModel):
    """One tier of the release under test: where its answers come from and, for a live tier, how it is asked.
    `api_key_env` names the environment variable holding the key (the key itself is never in a spec) and `headers` keep
    their `${VAR}` references unexpanded: a spec can be logged, hashed and reported safely."""

    model_config = ConfigDict(frozen=True)

    name: str = Field(pattern=r"^[A-Za-z0-9][\w.-]*$")
    kind: Literal["live", "recorded"]
    base_url: str | None = None
    model: str | None = None
    answers_path: Path | None = None
    api_key_env: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    template: AnswerTemplate | None = None
    params: TierParams = TierParams()
    concurrency: int | None = None
    origin: str | None = None  # the tiers file (or Prefect variable) the tier was read from
    baseline: bool = False  # the tier the others of the release are compared with (`baseline: true`)

    @property
    def source(self) -> str:
        """What produced the answers: `live:<url>#<model>` or `recorded:<file>` (stored with every answer)."""
        if self.kind == "live":
            return f"live:{mask_url(self.base_url or '')}#{self.model}"
        return f"recorded:{self.answers_path}"

    def describe(self) -> str:
        if self.kind == "live":
            return f"{self.name} ({self.model} at {mask_url(self.base_url or '')})"
        return f"{self.name} ({self.source})"


def _split_assignment(text: str, option: str, example: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    name, value = name.strip(), value.strip()
    if not sep or not name or not value:
        raise TierError(f"{option} {text!r}: expected {example}")
    return name, value


def parse_tier(text: str) -> TierSpec:
    """`NAME=URL#MODEL`, e.g. `full=http://127.0.0.1:8000/v1#Qwen/Qwen2.5-7B` -> a live tier (split at the first #)."""
    shown = mask_urls_in(text)  # error messages and the stored option never carry a password
    name, value = _split_assignment(text, "--tier", "NAME=URL#MODEL (e.g. full=http://127.0.0.1:8000/v1#my-model)")
    url, sep, model = value.partition("#")
    url, model = url.strip(), model.strip()
    if not sep or not url or not model:
        raise TierError(f"--tier {shown!r}: missing '#MODEL' after the URL (expected NAME=URL#MODEL)")
    parsed = urlparse(url)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise TierError(f"--tier {shown!r}: {url!r} is not an http(s) URL")
    # Where a tier URL enters: carried masked from here on; the chat client reveals it to connect.
    return _spec(name=name, kind="live", base_url=hide(url).rstrip("/"), model=model, option=f"--tier {shown!r}")


def parse_answers(text: str) -> TierSpec:
    """`NAME=FILE` -> a tier whose answers are read from a recorded JSONL file (checked when loaded)."""
    name, value = _split_assignment(text, "--answers", "TIER=FILE (e.g. quantized=answers.jsonl)")
    return _spec(name=name, kind="recorded", answers_path=Path(value).expanduser(), option=f"--answers {text!r}")


def _spec(*, option: str, **fields: object) -> TierSpec:
    try:
        return TierSpec.model_validate(fields)
    except ValueError as exc:
        raise TierError(f"{option}: tier name must be letters, digits, '.', '_' or '-' ({exc})") from exc


def parse_tiers(
    tiers: Sequence[str] = (), answers: Sequence[str] = (), configured: Sequence[TierSpec] = ()
) -> list[TierSpec]:
    """Every tier from a tiers file (`configured`), `--tier` and `--answers`, in that order; a name only once."""
    specs = [*configured, *(parse_tier(t) for t in tiers), *(parse_answers(a) for a in answers)]
    seen: set[str] = set()
    for spec in specs:
        if spec.name in seen:
            raise TierError(
                f"tier {spec.name!r} is given more than once (define it once: in the tiers file, --tier or --answers)"
            )
        seen.add(spec.name)
    if not specs:
        raise TierError(
            "no tier given: pass --tiers FILE, --tier NAME=URL#MODEL or --answers NAME=FILE at least once "
            "(flow parameters: tiers_file or tiers_variable, tiers, answers)"
        )
    return specs


def load_recorded_answers(path: Path, expected_ids: Collection[str] | None = None) -> dict[str, str]:
    """The answers of a recorded JSONL file by golden id. With `expected_ids` (every golden item under test), an id
    outside them is an error too; an expected id without an answer is not (see `answer_coverage`). Every error names the
    file, and the line and id when there is one."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise TierError(f"{path}: cannot read the answers file: {exc.strerror or exc}") from exc
    answers: dict[str, str] = {}
    first_line: dict[str, int] = {}
    for number, line in enumerate(raw.split(b"\n"), start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            row = json_object(line)
        except RowError as exc:
            raise TierError(f"{where}: {exc} (one object per line with 'id' and 'answer')") from None
        item_id, answer = row.get("id"), row.get("answer")
        if isinstance(item_id, int) and not isinstance(item_id, bool):
            item_id = str(item_id)
        if not isinstance(item_id, str) or not item_id.strip():
            raise TierError(f"{where}: missing or empty 'id'")
        if not isinstance(answer, str):
            got = "missing" if answer is None else f"a {type(answer).__name__}"
            raise TierError(f"{where}: id {item_id}: 'answer' must be a string, got {got}")
        if item_id in first_line:
            raise TierError(f"{where}: id {item_id}: duplicate of line {first_line[item_id]}")
        if expected_ids is not None and item_id not in expected_ids:
            raise TierError(f"{where}: id {item_id}: unknown id (not in the golden sets under test)")
        first_line[item_id] = number
        answers[item_id] = answer
    if not answers:
        raise TierError(f"{path}: no answers (expected one JSON object per line with 'id' and 'answer')")
    return answers


def answer_coverage(
    path: Path, answers: Collection[str], golden: Mapping[str, Collection[str]]
) -> dict[str, list[str]]:
    """Per golden set (name -> its item ids), the ids a recorded file did not answer (sets it answered fully are
    left out). A set with no answered item at all is an error naming the file and the set."""
    out: dict[str, list[str]] = {}
    for name, ids in golden.items():
        missing = sorted(set(ids) - set(answers))
        if ids and len(missing) == len(ids):
            raise TierError(f"{path}: answers no item of golden set {name} ({len(ids)} items)")
        if missing:
            out[name] = missing
    return out


def write_recorded_answers(path: Path, answers: Iterable[tuple[str, str]]) -> int:
    """Write (id, answer) pairs as a recorded answers file; returns the number written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps({"id": item_id, "answer": answer}, ensure_ascii=False) + "\n" for item_id, answer in answers]
    path.write_text("".join(lines), encoding="utf-8")
    return len(lines)
