"""Rubric templates are data, not code: a template that tries to leave the sandbox is refused and runs nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from judgewatch.cli import get_app
from judgewatch.contract.items import JudgeItem
from judgewatch.contract.prompt import render_messages
from judgewatch.contract.rubric import RubricError, load_rubric
from judgewatch.contract.rubric_check import check_rubric_file
from judgewatch.settings import REPO_ROOT

from .conftest import rubric_with

RUBRICS = REPO_ROOT / "rubrics"
ITEM = JudgeItem(id="1", question="Who wrote Hamlet?", answer="Shakespeare.", reference_facts=["Shakespeare."])


def test_lipsum_globals_payload_is_rejected_by_rubric_check_and_writes_nothing(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    payload = "{{ lipsum.__globals__['os'].popen('touch " + str(marker) + "').read() }}"
    path = rubric_with(tmp_path, payload)

    result = CliRunner().invoke(get_app(), ["rubric", "check", str(path)])

    assert result.exit_code != 0
    assert "answer_quality.en.j2:3" in result.output  # file and line of the payload
    assert "'__globals__'" in result.output and "'lipsum'" in result.output
    assert not marker.exists()


def test_rendering_a_payload_never_runs_it_even_without_the_check(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    rubric = load_rubric(rubric_with(tmp_path, ""), tmp_path)
    for payload in (
        "{{ lipsum.__globals__['os'].popen('touch " + str(marker) + "').read() }}",
        "{{ question.__class__.__mro__[1].__subclasses__() }}",
    ):
        rubric.template_texts["en"] = rubric.template_texts["en"].replace(
            "{% block system %}", "{% block system %}" + payload, 1
        )
        with pytest.raises(RubricError):
            render_messages(rubric, ITEM, ["relevance"])
    assert not marker.exists()


@pytest.mark.parametrize(
    ("injected", "expected"),
    [
        ("{{ question.__class__.__mro__ }}", "attribute '__class__'"),
        ("{{ question['__class__'] }}", "key '__class__'"),
        ("{{ question|attr('__class__') }}", "attribute filter"),
        ("{{ cycler }}", "name 'cycler'"),
    ],
)
def test_rubric_check_names_file_and_line_of_each_escape_route(tmp_path: Path, injected: str, expected: str) -> None:
    problems = check_rubric_file(rubric_with(tmp_path, injected))
    assert any(expected in p and "answer_quality.en.j2:3" in p for p in problems), problems


def test_template_cannot_mutate_what_it_is_given(tmp_path: Path) -> None:
    rubric = load_rubric(rubric_with(tmp_path, ""), tmp_path)
    rubric.template_texts["en"] = rubric.template_texts["en"].replace(
        "{% block system %}", "{% block system %}{{ criteria.append(1) }}", 1
    )
    with pytest.raises(RubricError, match="unsafe template"):
        render_messages(rubric, ITEM, ["relevance"])


def test_shipped_templates_still_pass_with_the_sandbox() -> None:
    for file in sorted(RUBRICS.glob("*.yaml")):
        assert check_rubric_file(file) == [], file


def test_a_passed_check_is_remembered_until_the_rubric_changes_and_a_failed_one_never(tmp_path: Path) -> None:
    """`judge` checks its rubric before the first call; a rubric that passed is not checked again until its YAML or a
    template changes, and a failing rubric is checked (and refused) every time."""
    from judgewatch.contract import rubric_check

    cache = tmp_path / "checks"
    for name in ("good", "bad"):
        (tmp_path / name).mkdir()
    good = rubric_with(tmp_path / "good", "")
    assert rubric_check.check_rubric_cached(load_rubric(good, good.parent), cache) == []
    assert len(list(cache.iterdir())) == 1
    calls: list[Path] = []
    real = rubric_check.check_rubric_file

    def counted(path: Path) -> list[str]:
        calls.append(path)
        return real(path)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(rubric_check, "check_rubric_file", counted)
        assert rubric_check.check_rubric_cached(load_rubric(good, good.parent), cache) == []
        assert calls == []  # remembered
        template = good.parent / "answer_quality.en.j2"
        template.write_text(template.read_text(encoding="utf-8") + "\n{# changed #}\n", encoding="utf-8")
        assert rubric_check.check_rubric_cached(load_rubric(good, good.parent), cache) == []
        assert calls == [good]  # a changed template is checked again
        bad = rubric_with(tmp_path / "bad", "{{ lipsum }}")
        for _ in range(2):
            assert rubric_check.check_rubric_cached(load_rubric(bad, bad.parent), cache)
        assert calls[1:] == [bad, bad]  # never remembered
    assert len(list(cache.iterdir())) == 2
