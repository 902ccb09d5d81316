"""`judgewatch dataset promote`: reviewed traffic items whose scores people settled become a versioned golden set the
gate can use at once (PII scrubbed again); promoting more items writes the next minor version with the union."""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError
from sqlmodel import Session

from judgewatch.contract.messages import ChatMessage, is_conversation
from judgewatch.workbench.items import ItemFilter, ItemRow, LabelStatus, find_items

PEOPLE = ("ui", "replay")  # LabelVia values that are people's work
_CJK = re.compile(r"[\u4e00-\u9fff]")
_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")


class PromoteError(ValueError):
    """The promotion cannot run (bad name, nothing qualifies)."""


@dataclass
class PromoteResult:
    name: str
    folder: Path
    version: str | None  # None: nothing new, nothing written
    added: int
    already: int
    skipped: dict[str, int] = field(default_factory=dict)  # reason -> items left out


def settled_scores(row: ItemRow) -> dict[str, int] | None:
    """The scores people settled for this item, or None when they have not."""
    if row.final_scores:
        return {k: int(v) for k, v in row.final_scores.items() if v is not None}
    people = [label.scores for label in row.labels if label.via in PEOPLE and label.scores]
    if len(people) >= 2 and all(scores == people[0] for scores in people):
        return dict(people[0])
    return None


def golden_id(row: ItemRow) -> str:
    return f"traffic-{row.interaction.id[:16]}"


def _language(row: ItemRow) -> str:
    lang = row.interaction.language
    if lang in ("en", "zh"):
        return lang
    return "zh" if _CJK.search(row.interaction.question + row.interaction.answer) else "en"


def _conversation(messages: list[dict[str, Any]] | None) -> list[ChatMessage]:
    """The stored turns when they make a conversation (a golden row then carries them), else none."""
    try:
        turns = [ChatMessage.model_validate(m) for m in messages or ()]
    except ValidationError:  # turns stored before they were checked: the row keeps its question only
        return []
    return turns if is_conversation(turns) else []


def golden_row(row: ItemRow, scores: dict[str, int], *, criterion: str, good_at: int, bad_at: int) -> dict[str, Any]:
    from judgewatch.contract.pii import Scrubber, scrub_messages

    scrubber = Scrubber()
    counts: Counter[str] = Counter()
    clean = partial(scrubber.scrub_into, counts=counts)
    i = row.interaction
    answer = clean(i.answer)
    score = scores.get(criterion)
    turns = _conversation(i.messages)
    return {
        "id": golden_id(row),
        "question": clean(i.question),
        **({"messages": [t.model_dump() for t in scrub_messages(turns, scrubber, counts)]} if turns else {}),
        "reference_answer": clean(i.reference_answer) if i.reference_answer else None,
        "reference_facts": [clean(f) for f in i.reference_facts],
        "context": [clean(c) for c in i.context],
        "language": _language(row),
        "good_answers": [answer] if score is not None and score >= good_at else [],
        "bad_answers": [answer] if score is not None and score <= bad_at else [],
        "metadata": {
            "interaction_id": i.id,
            "source": i.source,
            "tier": i.tier,
            "release": i.release,
            "settled_scores": scores,
            "settled_by": "adjudication" if row.final_scores else "agreeing labels",
            "reviewers": sorted({label.reviewer for label in row.labels if label.via in PEOPLE}),
            "pii_replaced": dict(counts),
        },
    }


def _read_existing(folder: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    data, readme = folder / "data.jsonl", folder / "README.md"
    if not data.is_file():
        return [], {}
    rows = [json.loads(line) for line in data.read_text(encoding="utf-8").splitlines() if line.strip()]
    match = re.match(r"---\n(.*?)\n---", readme.read_text(encoding="utf-8"), re.DOTALL) if readme.is_file() else None
    return rows, (yaml.safe_load(match.group(1)) if match else {}) or {}


def _next_version(card: dict[str, Any]) -> str:
    if not card:
        return "1.0.0"
    major, minor = [*str(card.get("version") or "1.0").split("."), "0"][:2]
    return f"{int(major)}.{int(minor) + 1}.0"


def _write(folder: Path, rows: list[dict[str, Any]], card: dict[str, Any]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    body = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    (folder / "data.jsonl").write_text(body, encoding="utf-8")
    front = yaml.safe_dump(card, sort_keys=False, allow_unicode=True)
    text = (
        f"---\n{front}---\n\n# {card['name']} (promoted from reviewed traffic)\n\n"
        "Items of production traffic whose scores people settled (adjudicated, or two or more agreeing labels), "
        "promoted with `judgewatch dataset promote`. Known-good and known-bad answers come from those scores; every "
        "text was scrubbed for PII again. Licence: internal traffic; not for publication. Each row's `metadata` "
        "names its interaction, source, reviewers and settled scores.\n"
    )
    (folder / "README.md").write_text(text, encoding="utf-8")


def promote(
    session: Session,
    name: str,
    *,
    datasets_dir: Path,
    filt: ItemFilter | None = None,
    interaction_ids: list[str] | None = None,
    criterion: str = "faithfulness",
    good_at: int = 4,
    bad_at: int = 2,
) -> PromoteResult:
    if not _NAME.match(name):
        raise PromoteError(f"set name {name!r}: use lower-case letters, digits, '-' and '_' (at most 64)")
    rows, _ = find_items(session, filt or ItemFilter(), limit=None)
    if interaction_ids is not None:
        wanted = set(interaction_ids)
        rows = [r for r in rows if r.interaction.id in wanted]
        if missing := wanted - {r.interaction.id for r in rows}:
            raise PromoteError(f"no current verdict for interaction(s) {', '.join(sorted(missing)[:5])}")
    folder = datasets_dir / name
    existing, card = _read_existing(folder)
    have = {r["id"] for r in existing}
    skipped: Counter[str] = Counter()
    new: dict[str, dict[str, Any]] = {}
    already = 0
    for row in rows:
        if row.interaction.source.startswith(("release:", "pairwise:", "golden:")):
            skipped["not traffic"] += 1
            continue
        scores = settled_scores(row)
        if scores is None:
            skipped["not settled by people" if row.status is not LabelStatus.disagreed else "labels disagree"] += 1
            continue
        gid = golden_id(row)
        if gid in have:
            already += 1
        elif gid not in new:
            new[gid] = golden_row(row, scores, criterion=criterion, good_at=good_at, bad_at=bad_at)
    if not new:
        return PromoteResult(name, folder, None, 0, already, dict(skipped))
    version = _next_version(card)
    all_rows = existing + [new[k] for k in sorted(new)]
    card = {
        "name": name,
        "pretty_name": f"{name} (promoted from reviewed traffic)",
        "version": version,
        "language": sorted({r["language"] for r in all_rows}),
        "license": ["internal traffic"],
        "source": {"kind": "judgewatch dataset promote", "criterion": criterion, "good_at": good_at, "bad_at": bad_at},
        "size": len(all_rows),
        "files": ["data.jsonl"],
        "history": [*card.get("history", []), {"version": version, "added": len(new)}],
    }
    _write(folder, all_rows, card)
    return PromoteResult(name, folder, version, len(new), already, dict(skipped))
