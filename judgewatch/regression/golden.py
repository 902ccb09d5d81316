"""Golden regression sets: load one from datasets/ (or the HF hub), validate every row, hand out JudgeItems.

A broken row stops the load with a message naming the set, the row and the field, because a regression
gate that silently skips rows would compare different sets from one release to the next.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import logging
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError, model_validator
from pydantic_core import ErrorDetails

from judgewatch.contract.items import JudgeItem, Language
from judgewatch.contract.messages import ChatMessage, content_text, error_field
from judgewatch.contract.raw_rows import (
    BOM,
    InputFileError,
    RowError,
    json_object,
    json_type_name,
    oversize_field,
    sniff_jsonl_file,
    strip_nul,
)
from judgewatch.settings import get_settings

logger = logging.getLogger(__name__)

_DOWNLOAD_COUNTS = "HF_UPDATE_DOWNLOAD_COUNTS"  # datasets' S3 ping per load

Text = Annotated[str, StringConstraints(pattern=r"\S")]

_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*$")
_EXPECTED = {
    "id": "a non-empty string",
    "question": "a non-empty string",
    "reference_answer": "a string or null",
    "reference_facts": "a list of strings",
    "context": "a list of strings",
    "good_answers": "a list of strings",
    "bad_answers": "a list of strings",
    "language": "'en' or 'zh'",
    "category": "a string or null",
    "metadata": "an object",
    "messages": "a list of chat messages",
}


class GoldenSetError(Exception):
    """A golden set that cannot be used; `problems` holds every message found, the first is the exception text."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        more = f" (and {len(problems) - 1} more problems)" if len(problems) > 1 else ""
        super().__init__(problems[0] + more)


class GoldenItem(BaseModel):
    """One golden row. Unknown top-level keys are kept in `metadata` rather than rejected or lost."""

    model_config = ConfigDict(strict=True, frozen=True, extra="forbid")

    id: Text
    question: Text  # given, or the last user turn of `messages`
    # A conversation: the turns up to the question (and any tool calls after it); the tier answers the last.
    messages: list[ChatMessage] | None = None
    reference_answer: str | None = None
    reference_facts: list[Text] = Field(default_factory=list)
    context: list[Text] = Field(default_factory=list)
    language: Language
    # Known-good and known-bad answers are optional: they let `judgewatch judges validate` measure a judge.
    good_answers: list[Text] = Field(default_factory=list)
    bad_answers: list[Text] = Field(default_factory=list)
    category: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _extras_into_metadata(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        row = {key: value for key, value in data.items() if key in cls.model_fields}
        if row.get("metadata", {}) is None:  # Arrow fills a column missing from some rows with null
            del row["metadata"]
        for optional in ("reference_facts", "context", "good_answers", "bad_answers"):
            if optional in row and row[optional] is None:
                del row[optional]
        if row.get("messages") and row.get("question") is None:  # the question is the last user turn
            users = [m for m in row["messages"] if isinstance(m, dict) and m.get("role") == "user"]
            if users and isinstance(text := content_text(users[-1].get("content")), str):
                row["question"] = text
        extras = {key: value for key, value in data.items() if key not in cls.model_fields}
        if extras and isinstance(row.get("metadata", {}), dict):
            row["metadata"] = {**extras, **row.get("metadata", {})}
        return row

    def to_judge_item(self, answer: str, *, item_id: str | None = None) -> JudgeItem:
        return JudgeItem(
            id=item_id or self.id, question=self.question, answer=answer, messages=self.messages,
            reference_answer=self.reference_answer, reference_facts=self.reference_facts, context=self.context,
            language=self.language,
        )  # fmt: skip


@dataclass(frozen=True)
class GoldenSet:
    """A validated golden set. `revision` is the sha256 of its data (first 16 hex): it changes iff the data does."""

    name: str
    revision: str
    items: list[GoldenItem]
    card: dict[str, Any] = field(default_factory=dict)
    path: Path | None = None

    def __len__(self) -> int:
        return len(self.items)

    @property
    def scrub_pii(self) -> bool | None:
        """False when the card declares the set free of personal data (`pii: none`): judging runs over it skip
        the PII scrubber. None otherwise: the `pii_scrub` setting decides."""
        return False if str(self.card.get("pii", "")).strip().lower() == "none" else None


@dataclass(frozen=True)
class GoldenSetSummary:
    """What `judgewatch dataset list` shows, read without validating the rows."""

    name: str
    path: Path
    items: int
    size_bytes: int
    version: str | None
    language: str | None


def load_golden_set(
    name_or_path: str | Path, *, datasets_dir: Path | str | None = None, split: str = "train"
) -> GoldenSet:
    """Load and validate a golden set. `name_or_path`: a set name under `datasets_dir` (default: the settings'), a
    folder or `.jsonl` file path, or an HF hub id `owner/name` (loaded with `datasets.load_dataset(id, split=split)`;
    only when no such local path exists)."""
    source = _resolve(name_or_path, datasets_dir)
    golden = _load_hub(str(name_or_path), split) if source is None else _load_local(source)
    logger.info("loaded golden set %s (%d items, revision %s)", golden.name, len(golden.items), golden.revision)
    return golden


def check_golden_set(name_or_path: str | Path, *, datasets_dir: Path | str | None = None) -> list[str]:
    """Every problem that stops `load_golden_set`, as messages; empty when the set is usable."""
    try:
        load_golden_set(name_or_path, datasets_dir=datasets_dir)
    except GoldenSetError as exc:
        return exc.problems
    return []


def list_golden_sets(*, datasets_dir: Path | str | None = None) -> list[GoldenSetSummary]:
    """The sets found under `datasets_dir` with their sizes (rows counted, not validated)."""
    root = Path(datasets_dir) if datasets_dir is not None else get_settings().datasets_dir
    folders = sorted(path for path in root.iterdir() if path.is_dir()) if root.is_dir() else []
    summaries = []
    for folder in folders:
        try:
            card = _read_card(folder)
            files = _data_files(folder, card)
        except GoldenSetError:
            continue
        language = card.get("language")
        summaries.append(
            GoldenSetSummary(
                name=str(card.get("name") or folder.name),
                path=folder,
                items=sum(1 for path in files for line in path.read_bytes().splitlines() if line.strip()),
                size_bytes=sum(path.stat().st_size for path in files),
                version=str(card["version"]) if card.get("version") is not None else None,
                language=",".join(map(str, language)) if isinstance(language, list) else language,
            )
        )
    return summaries


def _resolve(name_or_path: str | Path, datasets_dir: Path | str | None) -> Path | None:
    """The local folder or file to load, or None for a hub id. Never guesses a hub id from a bare name."""
    text = str(name_or_path)
    if isinstance(name_or_path, str) and text and not any(sep in text for sep in "/\\") and not text.startswith("."):
        root = Path(datasets_dir) if datasets_dir is not None else get_settings().datasets_dir
        if (root / text).is_dir():
            return root / text
        available = ", ".join(summary.name for summary in list_golden_sets(datasets_dir=root)) or "none"
        raise GoldenSetError([f"{text}: no golden set of that name in {root} (available: {available})"])
    path = Path(name_or_path).expanduser()
    if path.is_dir() or (path.is_file() and path.suffix == ".jsonl"):
        return path
    if isinstance(name_or_path, str) and _HUB_ID.match(text) and not path.exists() and not path.parent.is_dir():
        return None  # "owner/name" with no local "owner/" folder: a hub id, not a mistyped path
    raise GoldenSetError([f"{text}: not a golden set folder, a .jsonl file or a hub id (owner/name)"])


def _read_card(folder: Path) -> dict[str, Any]:
    """`card.yaml`, else the YAML front matter of `README.md` (the HF dataset-card convention), else {}."""
    if (folder / "card.yaml").is_file():
        where, text = "card.yaml", _card_text(folder, "card.yaml")
    elif (folder / "README.md").is_file():
        readme = _card_text(folder, "README.md")
        match = re.match(r"---\r?\n(.*?)\r?\n---\s*(?:\n|$)", readme, re.DOTALL)
        if not match:
            return {}
        where, text = "README.md front matter", match.group(1)
    else:
        return {}
    try:
        card = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise GoldenSetError([f"{folder.name}: {where}: invalid YAML: {exc}"]) from exc
    if card is None:
        return {}
    if not isinstance(card, dict):
        raise GoldenSetError([f"{folder.name}: {where}: expected a mapping, got {json_type_name(card)}"])
    return card


def _card_text(folder: Path, name: str) -> str:
    """A card file as text (a UTF-8 byte-order mark dropped), or GoldenSetError naming it when it is not UTF-8."""
    try:
        return (folder / name).read_bytes().decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        raise GoldenSetError([f"{folder.name}: {name}: not valid UTF-8 ({exc.reason} at byte {exc.start})"]) from None


def _data_files(folder: Path, card: Mapping[str, Any]) -> list[Path]:
    name = str(card.get("name") or folder.name)
    listed = card.get("files")
    if listed is None:
        files = sorted(folder.glob("*.jsonl"))
    elif isinstance(listed, list) and all(isinstance(entry, str) for entry in listed):
        files = [folder / entry for entry in listed]
    else:
        raise GoldenSetError([f"{name}: card field 'files': expected a list of file names"])
    if not files:
        raise GoldenSetError([f"{name}: no data files (*.jsonl) in {folder}"])
    for path in files:
        if path.suffix != ".jsonl" or not path.is_file():
            raise GoldenSetError([f"{name}: data file {path.name} is missing or not a .jsonl file"])
    return files


def _load_local(source: Path) -> GoldenSet:
    card = _read_card(source) if source.is_dir() else {}
    files = _data_files(source, card) if source.is_dir() else [source]
    name = str(card.get("name") or (source.name if source.is_dir() else source.stem))
    rows, problems = _scan_jsonl(name, files)
    _, invalid = _validate(name, rows)  # every bad row named, not only those that fail to parse
    problems += invalid
    if not problems and not rows:
        problems = [f"{name}: no items"]
    if problems:
        raise GoldenSetError(problems)
    hf_rows = _hf_rows("json", data_files=[str(path) for path in files], split="train", quiet=True)
    if len(hf_rows) != len(rows):
        raise GoldenSetError([f"{name}: HF datasets read {len(hf_rows)} rows, the files hold {len(rows)}"])
    items, problems = _validate(name, [(label, hf_row) for (label, _), hf_row in zip(rows, hf_rows, strict=True)])
    if problems:  # the raw rows passed, so HF's Arrow conversion changed something
        raise GoldenSetError(problems)
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.read_bytes())
    return GoldenSet(name=name, revision=digest.hexdigest()[:16], items=items, card=card, path=source)


def _load_hub(hub_id: str, split: str) -> GoldenSet:
    hf_rows = _hf_rows(hub_id, split=split, quiet=False)
    items, problems = _validate(hub_id, [(f"row {number}", row) for number, row in enumerate(hf_rows, start=1)])
    if not problems and not items:
        problems = [f"{hub_id}: no items"]
    if problems:
        raise GoldenSetError(problems)
    digest = hashlib.sha256()
    for row in hf_rows:
        digest.update((json.dumps(row, sort_keys=True, ensure_ascii=False, default=str) + "\n").encode("utf-8"))
    card = {"name": hub_id, "hub_id": hub_id, "split": split}
    return GoldenSet(name=hub_id, revision=digest.hexdigest()[:16], items=items, card=card)


def _hf_rows(path: str, *, quiet: bool, **kwargs: Any) -> list[dict[str, Any]]:
    """Rows read through HF `datasets` (slow to import: imported here, by name, as type checkers run from the repo
    root resolve `datasets` to our data folder)."""
    hf = _import_datasets()
    hide_bars = quiet and hf.is_progress_bar_enabled()
    if hide_bars:
        hf.disable_progress_bars()
    try:
        dataset = hf.load_dataset(path, **kwargs)
    except Exception as exc:  # HF raises many kinds; the caller needs one readable error
        raise GoldenSetError([f"{path}: HF datasets could not load it: {type(exc).__name__}: {exc}"]) from exc
    finally:
        if hide_bars:
            hf.enable_progress_bars()
    return list(dataset.to_list())


def _import_datasets() -> Any:
    """HF `datasets`, kept from pinging S3 to count a download on every load, local files included (offline
    machines would wait on it); set HF_UPDATE_DOWNLOAD_COUNTS=1 to keep the ping. Hub ids still load online."""
    os.environ.setdefault(_DOWNLOAD_COUNTS, "0")
    hf = importlib.import_module("datasets")
    hf.config.HF_UPDATE_DOWNLOAD_COUNTS = (
        os.environ[_DOWNLOAD_COUNTS].upper() in hf.config.ENV_VARS_TRUE_AND_AUTO_VALUES
    )
    return hf


def _scan_jsonl(name: str, files: list[Path]) -> tuple[list[tuple[str, dict[str, Any]]], list[str]]:
    """Parse the files line by line, so bad JSON is reported with its line (HF's parse errors name none)."""
    rows: list[tuple[str, dict[str, Any]]] = []
    problems = []
    limit = get_settings().max_field_bytes
    for path in files:
        prefix = f"{path.name} " if len(files) > 1 else ""
        try:
            sniff_jsonl_file(path, allow_empty=True)  # an empty set is reported as "no items"
        except InputFileError as exc:  # one message for the file, not one per line
            problems.append(f"{name}: {exc}")
            continue
        for number, raw in enumerate(path.read_bytes().split(b"\n"), start=1):
            label = f"{prefix}row {number}"
            if number == 1:  # a UTF-8 byte-order mark is accepted, as by `judge --input` and traffic files
                raw = raw.removeprefix(BOM)
            if not raw.strip():
                continue
            try:
                value = json_object(raw)
            except RowError as exc:
                problems.append(f"{name}: {label}: {exc}")
                continue
            if problem := oversize_field(value, _EXPECTED, limit) or _nul_field(value):
                problems.append(f"{name}: {label}: {problem}")
                continue
            rows.append((label, value))
    return rows, problems


def _nul_field(row: Mapping[str, Any]) -> str | None:
    """A golden set is curated: a NUL character is a mistake to fix in the file, not to repair silently."""
    _, repair = strip_nul(dict(row), _EXPECTED)
    return f"{repair.describe()}; remove it from the file" if repair else None


def _validate(name: str, rows: Iterable[tuple[str, Mapping[str, Any]]]) -> tuple[list[GoldenItem], list[str]]:
    items: list[GoldenItem] = []
    problems: list[str] = []
    first_label: dict[str, str] = {}
    for label, row in rows:
        raw_id = row.get("id")
        row_id = raw_id if isinstance(raw_id, str) and raw_id.strip() else None
        where = f"{name}: {label}" + (f" (id {row_id})" if row_id else "")
        if row_id is not None:
            if row_id in first_label:
                problems.append(f"{where}: field 'id': duplicate of {first_label[row_id]}")
                continue
            first_label[row_id] = label
        try:
            items.append(GoldenItem.model_validate(row))
        except ValidationError as exc:
            fields = dict.fromkeys(_field_problem(error, row) for error in exc.errors())
            problems.extend(f"{where}: {problem}" for problem in fields)
    return items, problems


def _field_problem(error: ErrorDetails, row: Mapping[str, Any]) -> str:
    """One pydantic error as "field 'x': expected ..., got ...", described from the row's own value."""
    loc = error["loc"]
    if not loc:
        return error["msg"]
    name = str(loc[0])
    if name == "messages" and len(loc) > 1:  # a turn's own problem, e.g. messages[2].role
        return f"field '{error_field(loc)}': {error['msg'].removeprefix('Value error, ')}"
    if error["type"] == "missing":
        return f"field '{name}': missing"
    value = row.get(name)
    expected = _EXPECTED.get(name, "a valid value")
    if len(loc) > 1 and isinstance(loc[1], int) and isinstance(value, list) and loc[1] < len(value):
        item = _describe(value[loc[1]], text_expected=True)
        return f"field '{name}': expected {expected}, got a list with {item} at item {loc[1] + 1}"
    text_expected = not expected.startswith(("a list", "an object"))
    return f"field '{name}': expected {expected}, got {_describe(value, text_expected=text_expected)}"


def _describe(value: Any, *, text_expected: bool) -> str:
    """A string where a string belongs is quoted (its content is the problem); anything else is named by type."""
    if isinstance(value, str) and text_expected:
        return "an empty string" if not value.strip() else repr(value if len(value) <= 40 else value[:37] + "...")
    return json_type_name(value)
