"""Serving tiers of a release: a live OpenAI-compatible endpoint (`full=URL#MODEL`) or a file of recorded answers.

Recorded answers are JSONL, one `{"id": ..., "answer": ...}` per golden item. A malformed line, a duplicate,
an unknown id or a golden id without an answer is an error naming the file, the line and the id: a gate that
silently dropped items would compare different sets from one release to the next.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Collection, Iterable, Sequence
from pathlib import Path
from typing import Literal
from urllib.parse import urlparse

from pydantic import BaseModel, ConfigDict, Field

from judgewatch.redact import mask_url, mask_urls_in

logger = logging.getLogger(__name__)

_MAX_LISTED = 5


class TierError(ValueError):
    """A tier specification or an answers file that cannot be used; the message says which and why."""


class TierSpec(BaseModel):
    """One tier of the release under test: where its answers come from."""

    model_config = ConfigDict(frozen=True)

    name: str = Field(pattern=r"^[A-Za-z0-9][\w.-]*$")
    kind: Literal["live", "recorded"]
    base_url: str | None = None
    model: str | None = None
    answers_path: Path | None = None

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
    return _spec(name=name, kind="live", base_url=url.rstrip("/"), model=model, option=f"--tier {shown!r}")


def parse_answers(text: str) -> TierSpec:
    """`NAME=FILE` -> a tier whose answers are read from a recorded JSONL file (checked when loaded)."""
    name, value = _split_assignment(text, "--answers", "TIER=FILE (e.g. quantized=answers.jsonl)")
    return _spec(name=name, kind="recorded", answers_path=Path(value).expanduser(), option=f"--answers {text!r}")


def _spec(*, option: str, **fields: object) -> TierSpec:
    try:
        return TierSpec.model_validate(fields)
    except ValueError as exc:
        raise TierError(f"{option}: tier name must be letters, digits, '.', '_' or '-' ({exc})") from exc


def parse_tiers(tiers: Sequence[str] = (), answers: Sequence[str] = ()) -> list[TierSpec]:
    """Every tier from `--tier` and `--answers` options, in the order given; a name may appear only once."""
    specs = [parse_tier(t) for t in tiers] + [parse_answers(a) for a in answers]
    seen: set[str] = set()
    for spec in specs:
        if spec.name in seen:
            raise TierError(f"tier {spec.name!r} is given more than once (use either --tier or --answers for it)")
        seen.add(spec.name)
    if not specs:
        raise TierError("no tier given: pass --tier NAME=URL#MODEL or --answers NAME=FILE at least once")
    return specs


def _fmt_ids(ids: Iterable[str]) -> str:
    listed = sorted(ids)
    more = f" (and {len(listed) - _MAX_LISTED} more)" if len(listed) > _MAX_LISTED else ""
    return ", ".join(listed[:_MAX_LISTED]) + more


def load_recorded_answers(path: Path, expected_ids: Collection[str] | None = None) -> dict[str, str]:
    """The answers of a recorded JSONL file by golden id.

    With `expected_ids` (every golden item under test), an id outside them and an expected id without an
    answer are errors too. Every error names the file, and the line and id when there is one.
    """
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
            row = json.loads(line.decode("utf-8"))
        except UnicodeDecodeError as exc:
            raise TierError(f"{where}: not valid UTF-8") from exc
        except json.JSONDecodeError as exc:
            raise TierError(f"{where}: invalid JSON: {exc.msg} (column {exc.colno})") from exc
        if not isinstance(row, dict):
            raise TierError(f"{where}: expected a JSON object with 'id' and 'answer', got {type(row).__name__}")
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
    if expected_ids is not None and (missing := set(expected_ids) - set(answers)):
        raise TierError(f"{path}: no answer for {len(missing)} golden id(s): {_fmt_ids(missing)}")
    return answers


def write_recorded_answers(path: Path, answers: Iterable[tuple[str, str]]) -> int:
    """Write (id, answer) pairs as a recorded answers file; returns the number written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    count = 0
    with path.open("w", encoding="utf-8") as out:
        for item_id, answer in answers:
            out.write(json.dumps({"id": item_id, "answer": answer}, ensure_ascii=False) + "\n")
            count += 1
    return count


SYSTEM_PROMPTS = {
    "en": "Answer the question using only the context. Answer in one or two short sentences.",
    "zh": "请只根据资料回答问题，用一两句简短的话作答。",
}
_USER_TEMPLATES = {
    "en": "Context:\n{facts}\n\nQuestion: {question}",
    "zh": "资料：\n{facts}\n\n问题：{question}",
}


def answer_messages(question: str, facts: Sequence[str], language: str) -> list[dict[str, str]]:
    """The prompt a live tier answers: a short system prompt, the reference facts as context, the question."""
    lang = language if language in SYSTEM_PROMPTS else "en"
    listed = "\n".join(f"- {fact}" for fact in facts) or "-"
    return [
        {"role": "system", "content": SYSTEM_PROMPTS[lang]},
        {"role": "user", "content": _USER_TEMPLATES[lang].format(facts=listed, question=question)},
    ]
