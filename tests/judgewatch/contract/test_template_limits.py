"""Templates have resource limits: no operation builds a huge value, no prompt passes MAX_PROMPT_CHARS, and a
template that fails in any way is one line naming the file and field, in `rubric check` and when judging."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from judgewatch.cli import get_app
from judgewatch.contract.items import JudgeItem
from judgewatch.contract.prompt import MAX_PROMPT_CHARS, render_messages
from judgewatch.contract.rubric import RubricError, load_rubric
from judgewatch.contract.rubric_check import check_rubric_file
from judgewatch.contract.sandbox import MAX_VALUE_CHARS

from .conftest import rubric_with


@pytest.mark.parametrize(
    ("injected", "expected"),
    [
        ("{{ 'x' * 200000000 }}", "200,000,000"),
        ("{{ [1, 2, 3] * 1000000000 }}", "3,000,000,000"),
        ("{{ 2 ** 100000000 }}", "exponent"),
        ("{{ 'x'.ljust(300000000) }}", "ljust()"),
        ("{{ 'x'|center(300000000) }}", "filter 'center'"),
        ("{{ '{:>300000000}'.format(1) }}", "format()"),
        ("{{ '%300000000s' % 1 }}", "operator '%'"),
        ("{{ ('x' * 1000000) ~ ('x' * 1000000) ~ 'y' }}", "operator '~'"),
        ("{{ ('x' * 100)|join('y' * 1000000) }}", "filter 'join'"),
        ("{{ ('x' * 2000)|replace('', 'y' * 2000) }}", "filter 'replace'"),
        ("{{ ('a\\n' * 500000)|indent(100) }}", "filter 'indent'"),
    ],
)
def test_rubric_check_refuses_an_operation_that_would_build_a_huge_value(
    tmp_path: Path, injected: str, expected: str
) -> None:
    problems = check_rubric_file(rubric_with(tmp_path, injected))
    assert len(problems) == 1 and "templates.en" in problems[0], problems
    assert "unsafe template refused" in problems[0] and expected in problems[0], problems


@pytest.mark.parametrize(
    ("injected", "expected"),
    [
        ("{% include 'other.j2' %}", "{% include %}"),
        ("{% import 'other.j2' as m %}", "{% import %}"),
        ("{% set big %}{{ answer }}{{ answer }}{% endset %}", "{% set %} block"),
        ("{% macro m() %}x{% endmacro %}", "{% macro %}"),
        ("{{ self.user() }}", "'self'"),
    ],
)
def test_constructs_without_a_size_limit_or_loading_files_are_refused_in_one_line(
    tmp_path: Path, injected: str, expected: str
) -> None:
    result = CliRunner().invoke(get_app(), ["rubric", "check", str(rubric_with(tmp_path, injected))])
    assert result.exit_code == 1, result.output
    assert expected in result.output and "not allowed in a rubric template" in result.output
    assert isinstance(result.exception, SystemExit)  # a one-line error, not a traceback


def test_a_template_that_raises_while_rendering_is_one_line_in_rubric_check(tmp_path: Path) -> None:
    result = CliRunner().invoke(get_app(), ["rubric", "check", str(rubric_with(tmp_path, "{{ 1/0 }}"))])
    assert result.exit_code == 1
    assert "templates.en" in result.output and "ZeroDivisionError: division by zero" in result.output
    assert isinstance(result.exception, SystemExit)


def test_the_rendered_prompt_is_bounded_even_when_each_value_is_within_the_limit(tmp_path: Path) -> None:
    # Each printed value is under MAX_VALUE_CHARS; together they pass MAX_PROMPT_CHARS.
    each = MAX_VALUE_CHARS - 1
    loop = "{% for c in criteria %}{{ 'x' * " + str(each) + " }}{% endfor %}"
    rubric = load_rubric(rubric_with(tmp_path, loop + loop), tmp_path)
    item = JudgeItem(id="1", question="q", answer="a", reference_facts=["f"])
    with pytest.raises(RubricError, match=f"over the limit of {MAX_PROMPT_CHARS:,} characters"):
        render_messages(rubric, item, ["relevance"])


def test_a_template_multiplying_the_answer_fails_on_a_long_answer_only(tmp_path: Path) -> None:
    """What `rubric check`'s short samples cannot show: the limit holds for every real item too."""
    rubric = load_rubric(rubric_with(tmp_path, "{{ answer * 1000 }}"), tmp_path)
    short = JudgeItem(id="1", question="q", answer="Paris.", reference_facts=["f"])
    long = short.model_copy(update={"answer": "x" * 100_000})
    assert "Paris." * 1000 in render_messages(rubric, short, ["relevance"])[0]["content"]
    with pytest.raises(RubricError, match=r"unsafe template refused.*100,000,000"):
        render_messages(rubric, long, ["relevance"])
