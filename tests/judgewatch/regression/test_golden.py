"""Golden sets: the shipped sets load and are what their cards say; broken rows fail loudly and precisely."""

from __future__ import annotations

import hashlib
import importlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from judgewatch.cli.dataset_cmd import app
from judgewatch.contract.items import JudgeItem
from judgewatch.regression.golden import GoldenSet, GoldenSetError, check_golden_set, load_golden_set
from judgewatch.testing.conversations import weather_row

REPO_ROOT = Path(__file__).resolve().parents[3]
DATASETS_DIR = REPO_ROOT / "datasets"
# By name: tools run from the repo root take the `datasets/` data folder for the HF package.
hf_datasets = importlib.import_module("datasets")
SHIPPED = [("halueval_qa", "en", 500), ("halluqa", "zh", 450)]


@pytest.fixture(autouse=True)
def no_hub_and_private_cache(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Only local JSON loads may reach HF `datasets`; its cache goes to a temporary folder."""
    real_load = hf_datasets.load_dataset

    def local_only(path: str, *args: Any, **kwargs: Any) -> Any:
        assert path == "json", f"a test tried to load {path!r} from the hub"
        return real_load(path, *args, **kwargs)

    monkeypatch.setattr(hf_datasets, "load_dataset", local_only)
    monkeypatch.setattr(hf_datasets.config, "HF_DATASETS_CACHE", tmp_path_factory.getbasetemp() / "hf-cache")


def row(number: int, **changes: Any) -> dict[str, Any]:
    base = {
        "id": f"bad-{number:04d}",
        "question": f"Question {number}?",
        "reference_answer": "Paris",
        "reference_facts": ["Paris is the capital of France."],
        "context": [],
        "language": "en",
        "good_answers": ["Paris"],
        "bad_answers": ["Lyon"],
    }
    return {**base, **changes}


def write_set(root: Path, lines: list[str | dict[str, Any]], name: str = "bad") -> Path:
    folder = root / name
    folder.mkdir(parents=True, exist_ok=True)
    text = "".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines)
    (folder / "data.jsonl").write_text(text, encoding="utf-8")
    return folder


def load_error(root: Path, name: str = "bad") -> GoldenSetError:
    with pytest.raises(GoldenSetError) as caught:
        load_golden_set(name, datasets_dir=root)
    return caught.value


@pytest.mark.parametrize(("name", "language", "size"), SHIPPED)
def test_shipped_set_loads_with_unique_ids_and_known_good_and_bad_answers(name: str, language: str, size: int) -> None:
    golden = load_golden_set(name, datasets_dir=DATASETS_DIR)

    assert golden.name == name
    assert len(golden.items) == size >= 200
    assert len({item.id for item in golden.items}) == size
    assert {item.language for item in golden.items} == {language}
    for item in golden.items:
        assert item.reference_answer and item.reference_facts and item.good_answers and item.bad_answers
        assert item.reference_answer == item.good_answers[0]
        assert not set(item.good_answers) & set(item.bad_answers), item.id
    assert golden.card["version"] and golden.card["language"] == [language] and golden.card["files"] == ["data.jsonl"]
    assert (DATASETS_DIR / name / "LICENSE").is_file()


@pytest.mark.parametrize("name", [name for name, _language, _size in SHIPPED])
def test_revision_is_the_data_hash_and_stable_across_loads(name: str) -> None:
    expected = hashlib.sha256((DATASETS_DIR / name / "data.jsonl").read_bytes()).hexdigest()[:16]

    assert load_golden_set(name, datasets_dir=DATASETS_DIR).revision == expected
    assert load_golden_set(DATASETS_DIR / name).revision == expected


def test_halluqa_keeps_category_and_upstream_join_key() -> None:
    golden = load_golden_set("halluqa", datasets_dir=DATASETS_DIR)
    first = golden.items[0]

    assert {item.category for item in golden.items} == {"Knowledge", "Misleading", "Misleading-hard"}
    assert first.id == "halluqa-0001" and first.metadata["question_id"] == 1
    assert first.reference_facts == first.good_answers and len(first.bad_answers) == 4


@pytest.mark.parametrize("name", ["halueval_qa", "halluqa"])
def test_mini_set_is_the_first_40_items_of_its_full_set(name: str) -> None:
    mini = load_golden_set(f"{name}_mini", datasets_dir=DATASETS_DIR)
    full = load_golden_set(name, datasets_dir=DATASETS_DIR)

    assert mini.items == full.items[:40]
    assert mini.card["subset_of"] == name
    assert mini.revision != full.revision


def test_datasets_folder_holds_no_python_that_could_shadow_hf_datasets() -> None:
    assert not list(DATASETS_DIR.rglob("*.py"))


def test_build_script_reproduces_the_shipped_files_byte_for_byte(tmp_path: Path) -> None:
    script = REPO_ROOT / "scripts" / "build_golden_sets.py"
    sources = ["--halueval", DATASETS_DIR / "halueval_upstream", "--halluqa", DATASETS_DIR / "halluqa_upstream"]
    subprocess.run([sys.executable, script, *sources, "--out", tmp_path], check=True, capture_output=True)

    built = sorted(path.relative_to(tmp_path) for path in tmp_path.rglob("*") if path.is_file())
    assert len(built) == 12
    for relative in built:
        assert (tmp_path / relative).read_bytes() == (DATASETS_DIR / relative).read_bytes(), relative


def test_wrong_type_names_dataset_row_id_and_field(tmp_path: Path) -> None:
    rows: list[str | dict[str, Any]] = [row(n, id=f"halueval_qa-{n:04d}") for n in range(1, 21)]
    rows[16] = row(17, id="halueval_qa-0017", reference_facts=5)
    write_set(tmp_path, rows, name="halueval_qa")

    error = load_error(tmp_path, "halueval_qa")

    assert str(error) == (
        "halueval_qa: row 17 (id halueval_qa-0017): field 'reference_facts': expected a list of strings, got int"
    )


def test_missing_field_is_named(tmp_path: Path) -> None:
    incomplete = row(2)
    del incomplete["question"]
    write_set(tmp_path, [row(1), incomplete])

    assert str(load_error(tmp_path)) == "bad: row 2 (id bad-0002): field 'question': missing"


def test_known_answers_and_references_are_optional(tmp_path: Path) -> None:
    bare = {"id": "bare-0001", "question": "What is 2 + 2?", "language": "en"}
    write_set(tmp_path, [bare], name="bare")
    golden = load_golden_set("bare", datasets_dir=tmp_path)
    assert golden.items[0].bad_answers == [] and golden.items[0].reference_answer is None


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        (
            {"good_answers": ["Paris", 3]},
            "field 'good_answers': expected a list of strings, got a list with int at item 2",
        ),
        ({"context": [""]}, "field 'context': expected a list of strings, got a list with an empty string at item 1"),
        ({"language": "fr"}, "field 'language': expected 'en' or 'zh', got 'fr'"),
        ({"question": " "}, "field 'question': expected a non-empty string, got an empty string"),
        ({"reference_answer": 42}, "field 'reference_answer': expected a string or null, got int"),
    ],
)
def test_invalid_values_are_described(tmp_path: Path, changes: dict[str, Any], message: str) -> None:
    write_set(tmp_path, [row(1, **changes)])

    assert str(load_error(tmp_path)) == f"bad: row 1 (id bad-0001): {message}"


def test_row_without_usable_id_is_named_by_line_only(tmp_path: Path) -> None:
    write_set(tmp_path, [row(1), row(2, id=7)])

    assert str(load_error(tmp_path)) == "bad: row 2: field 'id': expected a non-empty string, got int"


def test_bad_json_line_is_reported_with_its_line_number(tmp_path: Path) -> None:
    write_set(tmp_path, [row(1), "", '{"id": "bad-0003" "question": "q"}', "[1, 2]"])

    error = load_error(tmp_path)

    assert error.problems == [
        "bad: row 3: not valid JSON: Expecting ',' delimiter (column 19)",
        "bad: row 4: expected a JSON object, got list",
    ]
    assert str(error) == "bad: row 3: not valid JSON: Expecting ',' delimiter (column 19) (and 1 more problems)"


def test_duplicate_id_points_at_the_first_occurrence(tmp_path: Path) -> None:
    write_set(tmp_path, [row(1), row(2), row(1, question="Again?")])

    assert str(load_error(tmp_path)) == "bad: row 3 (id bad-0001): field 'id': duplicate of row 1"


def test_check_reports_every_problem_and_nothing_for_a_good_set(tmp_path: Path) -> None:
    write_set(tmp_path, [row(1, language="de"), row(2, bad_answers="Lyon"), row(2)])
    write_set(tmp_path, [row(1), row(2)], name="good")

    assert check_golden_set("bad", datasets_dir=tmp_path) == [
        "bad: row 1 (id bad-0001): field 'language': expected 'en' or 'zh', got 'de'",
        "bad: row 2 (id bad-0002): field 'bad_answers': expected a list of strings, got str",
        "bad: row 3 (id bad-0002): field 'id': duplicate of row 2",
    ]
    assert check_golden_set("good", datasets_dir=tmp_path) == []


def test_empty_set_and_unknown_name_are_errors_not_hub_lookups(tmp_path: Path) -> None:
    write_set(tmp_path, [])

    assert check_golden_set("bad", datasets_dir=tmp_path) == ["bad: no items"]
    assert check_golden_set("missing", datasets_dir=tmp_path) == [
        f"missing: no golden set of that name in {tmp_path} (available: bad)"
    ]
    assert check_golden_set(str(tmp_path / "nowhere" / "x")) == [
        f"{tmp_path / 'nowhere' / 'x'}: not a golden set folder, a .jsonl file or a hub id (owner/name)"
    ]


def test_extra_keys_are_kept_in_metadata_and_card_front_matter_is_read(tmp_path: Path) -> None:
    folder = write_set(tmp_path, [row(1, difficulty="hard", metadata={"source": "x"}), row(2, difficulty="easy")])
    (folder / "README.md").write_text("---\nname: custom\nversion: 2.1.0\nfiles: [data.jsonl]\n---\n\n# Custom\n")

    golden = load_golden_set(folder)

    assert golden.name == "custom" and golden.card["version"] == "2.1.0"
    assert golden.items[0].metadata == {"difficulty": "hard", "source": "x"}
    assert golden.items[1].metadata["difficulty"] == "easy"


def test_hub_id_is_passed_to_load_dataset_with_the_split(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[str, dict[str, Any]]] = []

    class FakeDataset:
        def to_list(self) -> list[dict[str, Any]]:
            return [row(1), row(2)]

    def fake_load(path: str, **kwargs: Any) -> FakeDataset:
        calls.append((path, kwargs))
        return FakeDataset()

    monkeypatch.setattr(hf_datasets, "load_dataset", fake_load)

    golden = load_golden_set("someorg/golden-qa", split="test")

    assert calls == [("someorg/golden-qa", {"split": "test"})]
    assert golden.name == "someorg/golden-qa" and len(golden.items) == 2 and len(golden.revision) == 16


def golden_pair(tmp_path: Path) -> GoldenSet:
    write_set(tmp_path, [row(1, context=["Paris has 2M people."]), row(2, bad_answers=[])])
    return load_golden_set("bad", datasets_dir=tmp_path)


def test_generated_answers_become_judge_items_under_the_golden_id(tmp_path: Path) -> None:
    golden = golden_pair(tmp_path)

    item = golden.items[0].to_judge_item("It is Paris.")

    assert item == JudgeItem(id="bad-0001", question="Question 1?", answer="It is Paris.", reference_answer="Paris",
                             reference_facts=["Paris is the capital of France."], context=["Paris has 2M people."],
                             language="en")  # fmt: skip


def test_cli_check_exits_2_with_the_problem_for_a_bad_file(tmp_path: Path) -> None:
    write_set(tmp_path, [row(1), row(2, reference_facts=5)])

    result = CliRunner().invoke(app, ["check", "bad", "--datasets-dir", str(tmp_path)])

    assert result.exit_code == 2
    assert "bad: row 2 (id bad-0002): field 'reference_facts': expected a list of strings, got int" in result.output


def test_cli_check_and_list_report_a_good_set(tmp_path: Path) -> None:
    write_set(tmp_path, [row(1), row(2)], name="good")
    revision = hashlib.sha256((tmp_path / "good" / "data.jsonl").read_bytes()).hexdigest()[:16]
    runner = CliRunner()

    checked = runner.invoke(app, ["check", "good", "--datasets-dir", str(tmp_path)])
    listed = runner.invoke(app, ["list", "--datasets-dir", str(DATASETS_DIR)])

    assert checked.exit_code == 0 and checked.output.strip() == f"ok: good (2 items, revision {revision})"
    assert listed.exit_code == 0
    lines = {line.split()[0]: line.split() for line in listed.output.splitlines()[1:]}
    assert lines["halueval_qa"][1] == "500" and lines["halluqa"][1] == "450" and lines["halluqa_mini"][1] == "40"


def test_a_utf16_or_cr_only_golden_file_gets_one_message(tmp_path: Path) -> None:
    row = json.dumps({"id": "a", "question": "q?", "language": "en"})
    for encoded, message in (((row + "\n" + row).encode("utf-16"), "UTF-16"), ((row + "\r" + row).encode(), "CR-only")):
        path = tmp_path / "set.jsonl"
        path.write_bytes(encoded)
        problems = check_golden_set(path)
        assert len(problems) == 1 and message in problems[0]


def test_a_golden_conversation_is_judged_with_its_turns_and_a_bad_turn_is_named(tmp_path: Path) -> None:
    turns = weather_row()["messages"]
    write_set(tmp_path, [{"id": "c1", "language": "en", "messages": turns, "good_answers": ["18 °C."]}], name="conv")
    golden = load_golden_set("conv", datasets_dir=tmp_path)
    item = golden.items[0].to_judge_item(golden.items[0].good_answers[0])
    assert item.question == "What is the weather in Paris right now?"
    assert item.is_conversation and item.messages is not None and item.messages[4].tool_calls[0].name == "get_weather"
    broken = [*turns[:2], {"role": "robot", "content": "x"}]
    write_set(tmp_path, [{"id": "c1", "language": "en", "messages": broken}])
    assert "row 1 (id c1): field 'messages[2].role': Input should be" in str(load_error(tmp_path))
