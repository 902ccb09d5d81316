"""Build the shipped golden regression sets in datasets/ from the upstream HaluEval and HalluQA files.

Deterministic (no timestamps, upstream order kept): a re-run that changes a file means the inputs or this script
changed, and the set's `version` must be bumped. Each source folder holds the upstream files at their upstream
paths, its `LICENSE`, and a card (`README.md` or `SOURCE.md`) naming the commit they were copied from.

    .venv/bin/python scripts/build_golden_sets.py --halueval datasets/halueval_upstream \
        --halluqa datasets/halluqa_upstream [--out datasets]
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
from collections import Counter
from pathlib import Path
from statistics import median
from typing import Any

import yaml

REPO_ROOT = Path(__file__).resolve().parent.parent
MINI_SIZE = 40

HALUEVAL: dict[str, Any] = {
    "repository": "https://github.com/RUCAIBox/HaluEval",
    "commit": "b7253db3cdaa0ab2c382f92b26b390109174f77e",
    "files": ["generation/qa/qa_one-turn_data.json", "generation/qa/qa_multi-turn_data.json"],
}
HALLUQA: dict[str, Any] = {
    "repository": "https://github.com/OpenMOSS/HalluQA",
    "commit": "7e5c67398d7fee013c37ec1d6afafa76f9836180",
    "files": ["HalluQA.json"],
}

# Words that end with a period without ending the sentence ("Dr. Who", "St. Louis", "Trad. Chinese").
_ABBREVIATIONS = frozenset(
    re.findall(
        r"\w+",
        """mr mrs ms dr st jr sr no nos vs mt ft gen col lt sgt capt rev inc co ltd corp jan feb mar apr jun jul aug
        sep sept oct nov dec op vol pp ca approx est univ dept bros prof gov sen rep pres ave blvd etc fr ste pt
        cf al trad simp lit""",
    )
)
_BOUNDARY = re.compile(r"(?<=[.!?])([\"\u201d')]?)(\s*)(?=[\"\u201c('A-Z0-9])")
FIELD_TABLE = """| field | type | meaning |
|---|---|---|
| `id` | string | stable id, `<set>-NNNN` |
| `question` | string | the question put to the model under test |
| `reference_answer` | string | the reference answer given to the judge |
| `reference_facts` | list of strings | facts the answer must agree with |
| `context` | list of strings | retrieved context; empty in this set |
| `language` | `"en"` or `"zh"` | language of the item |
| `good_answers` | list of strings | known-correct answers (for measuring a judge before human labels exist) |
| `bad_answers` | list of strings | known-wrong answers (same use) |
| `category` | string, optional | upstream category, when the source has one |
| `metadata` | object | upstream bookkeeping (see below) |
"""


def split_facts(text: str) -> list[str]:
    """Split HaluEval `knowledge` into sentences.

    The upstream field is HotpotQA's supporting sentences concatenated, often with no space between them
    ("...in the USA.First for Women is..."), so both "." + space and "." + capital are boundaries, except
    after abbreviations, initials ("J.R.R."), single letters and before digits ("No. 5", "Ala. 2002").
    """
    text = text.strip()
    facts: list[str] = []
    start = 0
    for match in _BOUNDARY.finditer(text):
        end = match.end(1)
        quotes_open = text[start : match.start()].count('"') % 2 == 1
        if match.group(1) == '"' and not quotes_open:
            end = match.start()  # the quote opens the next sentence
        elif not match.group(1) and text[match.end() : match.end() + 1] == '"' and quotes_open:
            continue  # the quote closes this sentence: the boundary is after it
        word_match = re.search(r"(\S+?)[.!?][\"\u201d')]?$", text[start:end])
        word = word_match.group(1) if word_match else ""
        bare = word.lower().lstrip("(\"'\u201c")
        following = text[end:].lstrip()[:1]
        if not match.group(2):
            if re.fullmatch(r"[a-z]", bare) or re.search(r"\.[A-Za-z]$", word):
                continue
            if word[-1:].isdigit() and following.isdigit():
                continue
        elif (
            bare in _ABBREVIATIONS
            or re.fullmatch(r"[a-z]", bare)
            or re.fullmatch(r"(?:[a-z]\.)+[a-z]", bare)
            or following.isdigit()
        ):
            continue
        if sentence := text[start:end].strip():
            facts.append(sentence)
        start = end
    if tail := text[start:].strip():
        facts.append(tail)
    return facts


def _read_json_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _check_source(folder: Path, commit: str) -> None:
    """Refuse to build from a copy whose card names another commit: the golden sets' cards would lie."""
    cards = [folder / name for name in ("README.md", "SOURCE.md") if (folder / name).is_file()]
    if not any(commit in card.read_text(encoding="utf-8") for card in cards):
        raise SystemExit(f"{folder}: no README.md or SOURCE.md naming commit {commit}: update this script first")


def build_halueval_qa(folder: Path) -> list[dict[str, Any]]:
    """One row per HaluEval QA question; both strategies' hallucinated answers become known-bad answers."""
    _check_source(folder, HALUEVAL["commit"])
    one_turn, multi_turn = (_read_json_lines(folder / name) for name in HALUEVAL["files"])
    assert len(one_turn) == len(multi_turn) == 500, "expected the 500-question HaluEval QA candidates"
    rows = []
    for number, (first, second) in enumerate(zip(one_turn, multi_turn, strict=True), start=1):
        for key in ("knowledge", "question", "right_answer"):
            assert first[key] == second[key], f"upstream row {number}: files disagree on {key}"
        facts = split_facts(first["knowledge"])
        assert re.sub(r"\s+", "", "".join(facts)) == re.sub(r"\s+", "", first["knowledge"]), number
        strategies: dict[str, list[str]] = {}
        for strategy, record in (("one-turn", first), ("multi-turn", second)):
            strategies.setdefault(record["hallucinated_answer"].strip(), []).append(strategy)
        right = first["right_answer"].strip()
        rows.append(
            {
                "id": f"halueval_qa-{number:04d}",
                "question": first["question"].strip(),
                "reference_answer": right,
                "reference_facts": facts,
                "context": [],
                "language": "en",
                "good_answers": [right],
                "bad_answers": list(strategies),
                "metadata": {
                    "upstream_row": number,
                    "bad_answer_strategies": ["+".join(names) for names in strategies.values()],
                },
            }
        )
    return rows


def _answers(record: dict[str, Any], prefix: str) -> list[str]:
    """Non-empty answers `prefix`1..4, stripped, duplicates dropped, upstream order kept."""
    values = (record.get(f"{prefix}{i}") for i in range(1, 5))
    return list(dict.fromkeys(v.strip() for v in values if isinstance(v, str) and v.strip()))


def build_halluqa(folder: Path) -> list[dict[str, Any]]:
    """One row per HalluQA question: human correct answers are good, human wrong answers are bad."""
    _check_source(folder, HALLUQA["commit"])
    records = json.loads((folder / "HalluQA.json").read_text(encoding="utf-8"))
    assert len(records) == 450, "expected the 450 HalluQA questions"
    rows = []
    for record in records:
        good, bad = _answers(record, "Best Answer"), _answers(record, "Wrong_Answer")
        assert good and bad and not set(good) & set(bad), record["question_id"]
        pattern = record.get("Question Pattern")
        rows.append(
            {
                "id": f"halluqa-{record['question_id']:04d}",
                "question": record["Question"].strip(),
                "reference_answer": good[0],
                "reference_facts": good,
                "context": [],
                "language": "zh",
                "good_answers": good,
                "bad_answers": bad,
                "category": record["Category"],
                "metadata": {
                    "question_id": record["question_id"],
                    "class": record["Class"],
                    "question_pattern": pattern.strip() if pattern else None,
                    "source": record["Source"].strip(),
                },
            }
        )
    assert len({row["id"] for row in rows}) == len(rows)
    return rows


def shorter_is_good_auroc(rows: list[dict[str, Any]]) -> float:
    """AUROC of the length-only rule "the shorter answer is the good one" over all good vs bad answers."""
    good = [len(answer) for row in rows for answer in row["good_answers"]]
    bad = [len(answer) for row in rows for answer in row["bad_answers"]]
    wins = sum(1.0 if g < b else 0.5 if g == b else 0.0 for g in good for b in bad)
    return wins / (len(good) * len(bad))


def write_set(
    out: Path, name: str, rows: list[dict[str, Any]], front: dict[str, Any], body: str, licence: Path
) -> None:
    folder = out / name
    folder.mkdir(parents=True, exist_ok=True)
    data = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows).encode("utf-8")
    assert len(data) < 5_000_000, f"{name}: data.jsonl is {len(data)} bytes"
    (folder / "data.jsonl").write_bytes(data)
    card_front = {"name": name, **front, "size": len(rows), "files": ["data.jsonl"]}
    card_front["configs"] = [{"config_name": "default", "data_files": [{"split": "test", "path": "data.jsonl"}]}]
    card = "---\n" + yaml.safe_dump(card_front, sort_keys=False, allow_unicode=True, width=120) + "---\n\n" + body
    (folder / "README.md").write_bytes(card.encode("utf-8"))
    shutil.copyfile(licence, folder / "LICENSE")


def _card_front(name: str, n_rows: int, subset_of: str | None, **fields: Any) -> tuple[dict[str, Any], str]:
    """A card's front matter (`fields`: language, license, source) and, for a subset, the line saying so."""
    front: dict[str, Any] = {
        "pretty_name": f"{name} (judgewatch golden set)" + (" - mini subset" if subset_of else ""),
        "version": "1.0.0",
        **fields,
        # Public benchmark text, no personal data: judging runs skip the PII scrubber on it (its names are public
        # figures, and scrubbing them would judge other text than the file holds).
        "pii": "none",
    }
    if not subset_of:
        return front, ""
    front["subset_of"] = subset_of
    return front, (
        f"**Subset:** the first {n_rows} items of `{subset_of}`, unchanged, for fast tests. "
        f"Use `{subset_of}` for real regression runs.\n\n"
    )


def halueval_card(rows: list[dict[str, Any]], subset_of: str | None = None) -> tuple[dict[str, Any], str]:
    bad = sum(len(row["bad_answers"]) for row in rows)
    right_median = median(len(row["reference_answer"]) for row in rows)
    length_auroc = shorter_is_good_auroc(rows)
    facts = Counter(len(row["reference_facts"]) for row in rows)
    front, subset = _card_front(
        "HaluEval QA", len(rows), subset_of, language=["en"], license=["mit", "cc-by-sa-4.0"], source=HALUEVAL
    )
    body = f"""# {front["pretty_name"]}

{subset}English multi-hop questions with reference facts, one human-written right answer and one or two
ChatGPT-written hallucinated answers, for judgewatch's regression runs and for measuring how well a judge separates
known-good from known-bad answers. Built by `scripts/build_golden_sets.py` (deterministic).

## Source and licence
- [RUCAIBox/HaluEval]({HALUEVAL["repository"]}) at commit `{HALUEVAL["commit"]}`, files
  `{HALUEVAL["files"][0]}` and `{HALUEVAL["files"][1]}` (the 500 pre-filter QA candidates, same questions in both).
- HaluEval is MIT-licensed (`LICENSE`, copied from the repository root). The questions, supporting facts and right
  answers come from HotpotQA, released under CC BY-SA 4.0: keep the attribution and share derived sets alike.

## How it was derived
- One row per upstream row (`metadata.upstream_row`, 1-based), in upstream order; `id` = `halueval_qa-NNNN`.
- `knowledge` is split into sentences as `reference_facts` (HotpotQA supporting sentences are concatenated upstream,
  often without a space); the facts joined back give the original text, whitespace aside.
  Facts per item: {dict(sorted(facts.items()))}.
- `right_answer` -> `reference_answer` and `good_answers`. The one-turn and multi-turn `hallucinated_answer`s ->
  `bad_answers` (identical ones kept once; `metadata.bad_answer_strategies` says which strategy wrote each).
- Text is stripped of surrounding whitespace; nothing else is changed.

## Fields
{FIELD_TABLE}
`metadata`: `upstream_row` (int), `bad_answer_strategies` (list of strings, aligned with `bad_answers`).

## Size
{len(rows)} items, {len(rows)} good answers, {bad} bad answers. No `category` (the source has none).

## Known caveats
- **Length confound.** Right answers are short HotpotQA spans (median {right_median:g} characters), hallucinated
  answers are full sentences: the rule "the shorter answer is right" alone reaches AUROC {length_auroc:.3f} on this
  set. A judge's good-vs-bad separation here proves little unless it beats that baseline; prefer HalluQA
  (where length points the other way) or human labels for trust.
- **Unfiltered bad answers.** These are HaluEval's candidates before its ChatGPT filtering step, so a few
  "hallucinated" answers are in fact right (e.g. `halueval_qa-0318`'s multi-turn answer restates the right answer).
  Treat `bad_answers` as mostly wrong, not as ground truth.
- Sentence splitting is heuristic; a few facts are fragments (e.g. `halueval_qa-0082`, around the band name
  "Portugal. The Man", which the upstream text already cuts).
- The right answers are terse: a judge rewarding fluent, complete sentences is biased against them.
"""
    return front, body


def halluqa_card(rows: list[dict[str, Any]], subset_of: str | None = None) -> tuple[dict[str, Any], str]:
    categories = Counter(row["category"] for row in rows)
    good = sum(len(row["good_answers"]) for row in rows)
    bad = sum(len(row["bad_answers"]) for row in rows)
    by_category = {
        name: shorter_is_good_auroc([row for row in rows if row["category"] == name]) for name in sorted(categories)
    }
    front, subset = _card_front("HalluQA", len(rows), subset_of, language=["zh"], license="apache-2.0", source=HALLUQA)
    confound = ", ".join(f"{name} {value:.3f}" for name, value in by_category.items())
    body = f"""# {front["pretty_name"]}

{subset}Chinese adversarial questions (misleading premises and knowledge questions) with human-written correct and
wrong answers, for judgewatch's regression runs and for measuring how well a judge separates known-good from
known-bad answers. Built by `scripts/build_golden_sets.py` (deterministic).

## Source and licence
- [OpenMOSS/HalluQA]({HALLUQA["repository"]}) at commit `{HALLUQA["commit"]}`, file `HalluQA.json`.
- Apache License 2.0 (`LICENSE`, copied from the repository root). Modified by judgewatch: fields renamed and
  regrouped as described below, whitespace stripped, duplicate answers within an item dropped.

## How it was derived
- One row per question, upstream order; `id` = `halluqa-NNNN` from the upstream `question_id` (ids 106 and 215 do
  not exist upstream), so rows join with HalluQA's model outputs in `Chinese_LLMs_outputs/`.
- `Best Answer1..4` (non-empty, deduplicated) -> `reference_facts` and `good_answers`; the first -> `reference_answer`.
- `Wrong_Answer1..4` (non-empty, deduplicated) -> `bad_answers`.
- `Category` -> `category`; `Class`, `Question Pattern`, `Source` and `question_id` -> `metadata`.

## Fields
{FIELD_TABLE}
`metadata`: `question_id` (int), `class` (string, domain such as 历史), `question_pattern` (string or null; null
for Knowledge questions), `source` (string: the annotators' evidence, a URL and/or a short text).

## Size
{len(rows)} items ({", ".join(f"{name} {count}" for name, count in sorted(categories.items()))}), {good} good
answers, {bad} bad answers.

## Known caveats
- **Length cuts both ways.** AUROC of "the shorter answer is right" (0.5 = no signal), by category: {confound}.
  In Misleading questions the correct answer refutes the premise and is longer than the terse wrong answers; in
  Knowledge questions the first wrong answer is usually a long model-style answer and the others are short; in
  Misleading-hard questions the wrong answers are the longer ones. Report a judge's separation per category.
- Knowledge questions mostly have a single correct answer; the evidence in `metadata.source` is not copied into
  `context` (it is often only a URL), so judges see the correct answers as their only reference.
- Some correct answers differ only in script (simplified vs traditional characters).
"""
    return front, body


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--halueval", type=Path, required=True, help="HaluEval files (e.g. datasets/halueval_upstream)")
    parser.add_argument("--halluqa", type=Path, required=True, help="HalluQA files (e.g. datasets/halluqa_upstream)")
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "datasets")
    args = parser.parse_args()
    builds = [
        ("halueval_qa", build_halueval_qa(args.halueval), halueval_card, args.halueval / "LICENSE"),
        ("halluqa", build_halluqa(args.halluqa), halluqa_card, args.halluqa / "LICENSE"),
    ]
    for name, rows, card, licence in builds:
        write_set(args.out, name, rows, *card(rows), licence)
        mini = rows[:MINI_SIZE]
        write_set(args.out, f"{name}_mini", mini, *card(mini, subset_of=name), licence)
        print(f"{name}: {len(rows)} items, {name}_mini: {len(mini)} items")


if __name__ == "__main__":
    main()
