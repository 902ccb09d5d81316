"""Rubrics are data: loading, validation errors that name file and field, the content hash."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from judgewatch.cli import get_app
from judgewatch.contract.rubric import RubricError, load_rubric
from judgewatch.contract.rubric_check import check_rubric_file
from judgewatch.settings import REPO_ROOT

RUBRICS = REPO_ROOT / "rubrics"


@pytest.fixture
def rubric_copy(tmp_path: Path) -> Path:
    for file in RUBRICS.glob("answer_quality*"):
        shutil.copy(file, tmp_path / file.name)
    return tmp_path / "answer_quality.yaml"


def _edit(path: Path, change) -> None:  # type: ignore[no-untyped-def]
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")


def test_answer_quality_has_three_criteria_with_an_anchor_for_every_level() -> None:
    rubric = load_rubric("answer_quality", RUBRICS)
    assert [c.name for c in rubric.criteria] == ["relevance", "faithfulness", "completeness"]
    for criterion in rubric.criteria:
        assert sorted(criterion.anchors) == [1, 2, 3, 4, 5]
        assert criterion.anchors_zh is not None and sorted(criterion.anchors_zh) == [1, 2, 3, 4, 5]
    assert {c.name: c.needs_reference for c in rubric.criteria} == {
        "relevance": False,
        "faithfulness": True,
        "completeness": True,
    }
    assert set(rubric.template_texts) == {"en", "zh"}


def test_shipped_rubrics_pass_the_check() -> None:
    result = CliRunner().invoke(get_app(), ["rubric", "check", str(RUBRICS)])
    assert result.exit_code == 0, result.output
    assert "ok:" in result.output


def test_unknown_key_is_named_with_file_and_field(rubric_copy: Path) -> None:
    _edit(rubric_copy, lambda d: d["criteria"][0].update({"weigth": 2}))
    with pytest.raises(RubricError) as err:
        load_rubric(rubric_copy, rubric_copy.parent)
    assert str(rubric_copy) in str(err.value)
    assert "criteria.0.weigth" in str(err.value)
    assert "unknown key" in str(err.value)


def test_missing_anchor_is_named(rubric_copy: Path) -> None:
    _edit(rubric_copy, lambda d: d["criteria"][1]["anchors"].pop(3))
    problems = check_rubric_file(rubric_copy)
    assert any("faithfulness" in p and "missing anchor for level(s) [3]" in p for p in problems), problems


def test_scale_mismatch_is_named(rubric_copy: Path) -> None:
    _edit(rubric_copy, lambda d: d.update({"scale": {"min": 1, "max": 4}}))
    problems = check_rubric_file(rubric_copy)
    assert any("outside the scale 1-4" in p and "criteria.0.anchors" in p for p in problems), problems


def test_undefined_template_variable_is_named(rubric_copy: Path) -> None:
    template = rubric_copy.parent / "answer_quality.zh.j2"
    template.write_text(template.read_text(encoding="utf-8").replace("{{ question }}", "{{ qestion }}"))
    problems = check_rubric_file(rubric_copy)
    assert any("templates.zh" in p and "qestion" in p for p in problems), problems


def test_missing_template_file_is_named(rubric_copy: Path) -> None:
    (rubric_copy.parent / "answer_quality.en.j2").unlink()
    problems = check_rubric_file(rubric_copy)
    assert any("templates.en" in p and "not found" in p for p in problems), problems


def test_check_command_exits_nonzero_naming_file_and_field(rubric_copy: Path) -> None:
    _edit(rubric_copy, lambda d: d.pop("version"))
    result = CliRunner().invoke(get_app(), ["rubric", "check", str(rubric_copy)])
    assert result.exit_code == 1
    assert f"{rubric_copy}: field 'version': required field is missing" in result.output


def test_content_hash_changes_when_a_template_changes(rubric_copy: Path) -> None:
    before = load_rubric(rubric_copy, rubric_copy.parent).content_hash
    template = rubric_copy.parent / "answer_quality.en.j2"
    template.write_text(template.read_text(encoding="utf-8") + "\n")
    after = load_rubric(rubric_copy, rubric_copy.parent).content_hash
    assert before != after
    assert load_rubric(rubric_copy, rubric_copy.parent).content_hash == after


def test_unknown_rubric_lists_the_known_ones() -> None:
    with pytest.raises(RubricError, match=r"unknown rubric 'nope'.*answer_quality"):
        load_rubric("nope", RUBRICS)


def test_overall_is_the_weighted_mean_of_scored_criteria() -> None:
    rubric = load_rubric("answer_quality", RUBRICS)
    assert rubric.overall({"relevance": 4, "faithfulness": None, "completeness": 2}) == 3.0
    assert rubric.overall({"relevance": None}) is None
