"""The regression flow's input step as a plain function (no Prefect server): every problem found, as messages.

`load_inputs` is a Prefect task; `.fn` is the function it wraps, so the gate's could-not-evaluate inputs (exit 2)
are checked here without running the flow.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from flows.regression_tasks import load_inputs
from judgewatch.regression.golden import load_golden_set
from judgewatch.regression.serving import write_recorded_answers
from judgewatch.settings import REPO_ROOT, Settings

MINI = "halueval_qa_mini"
OTHER = "halluqa_mini"


def write_answers(path: Path, answers: list[tuple[str, str]]) -> Path:
    write_recorded_answers(path, answers)
    return path


LIVE = "full=http://127.0.0.1:9/v1#my-model"  # parsed only: load_inputs calls no endpoint


@pytest.fixture
def settings() -> Settings:
    return Settings(rubrics_dir=REPO_ROOT / "rubrics", datasets_dir=REPO_ROOT / "datasets")


def test_valid_inputs_load_the_sets_tiers_and_rubric(settings: Settings) -> None:
    inputs, problems = load_inputs.fn([MINI, MINI], [LIVE], [], "answer_quality", settings)
    assert problems == []
    assert inputs is not None
    assert [g.name for g in inputs.golden] == [MINI]  # a set named twice is loaded once
    assert [t.name for t in inputs.tiers] == ["full"] and inputs.rubric.name == "answer_quality"


def test_no_dataset_is_a_problem_not_an_empty_pass(settings: Settings) -> None:
    inputs, problems = load_inputs.fn([], [LIVE], [], "answer_quality", settings)
    assert inputs is None
    assert problems == ["no dataset given (pass --dataset NAME at least once)"]


def test_every_problem_is_reported_at_once(settings: Settings) -> None:
    inputs, problems = load_inputs.fn(["no_such_set"], ["full"], [], "no_such_rubric", settings)
    assert inputs is None
    assert len(problems) == 3, problems
    tier, rubric, dataset = problems
    assert tier.startswith("--tier 'full': expected NAME=URL#MODEL")
    assert rubric.startswith("rubric invalid: unknown rubric 'no_such_rubric'")
    assert dataset.startswith("dataset no_such_set invalid:")


def test_an_item_id_in_two_sets_is_a_problem_naming_both(settings: Settings, tmp_path: Path) -> None:
    source = REPO_ROOT / "datasets" / MINI / "data.jsonl"
    first, second = tmp_path / "first.jsonl", tmp_path / "second.jsonl"
    shutil.copyfile(source, first)
    shutil.copyfile(source, second)
    inputs, problems = load_inputs.fn([str(first), str(second)], [LIVE], [], "answer_quality", settings)
    assert inputs is None
    assert len(problems) == 1 and "is in both" in problems[0] and "ids must be unique" in problems[0]


def test_recorded_answers_that_are_missing_name_the_tier(settings: Settings, tmp_path: Path) -> None:
    missing = tmp_path / "nowhere.jsonl"
    inputs, problems = load_inputs.fn([MINI], [], [f"quantized={missing}"], "answer_quality", settings)
    assert inputs is None
    assert problems == [f"tier quantized: {missing}: cannot read the answers file: No such file or directory"]


def test_a_file_answering_part_of_a_set_loads_and_names_the_items_it_lacks(settings: Settings, tmp_path: Path) -> None:
    items = load_golden_set(MINI, datasets_dir=settings.datasets_dir).items
    part = write_answers(tmp_path / "part.jsonl", [(i.id, "an answer") for i in items[:25]])
    inputs, problems = load_inputs.fn([MINI], [], [f"quantized={part}"], "answer_quality", settings)
    assert problems == [] and inputs is not None
    assert inputs.answered("quantized") == {i.id for i in items[:25]}
    assert inputs.unanswered == {"quantized": {MINI: sorted(i.id for i in items[25:])}}


def test_a_file_answering_no_item_of_a_set_is_a_one_line_problem_naming_tier_file_and_set(
    settings: Settings, tmp_path: Path
) -> None:
    items = load_golden_set(MINI, datasets_dir=settings.datasets_dir).items
    only_mini = write_answers(tmp_path / "mini.jsonl", [(i.id, "an answer") for i in items])
    inputs, problems = load_inputs.fn([MINI, OTHER], [], [f"quantized={only_mini}"], "answer_quality", settings)
    total = len(load_golden_set(OTHER, datasets_dir=settings.datasets_dir).items)
    assert inputs is None
    assert problems == [f"tier quantized: {only_mini}: answers no item of golden set {OTHER} ({total} items)"]
