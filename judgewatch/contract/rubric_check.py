"""Validate rubric files and their templates: every problem named by file, field and what is wrong."""

from __future__ import annotations

from pathlib import Path

from judgewatch.contract.items import JudgeItem
from judgewatch.contract.prompt import render_messages, render_pair_messages, undeclared_variables
from judgewatch.contract.rubric import RubricError, load_rubric

_SAMPLES = (
    JudgeItem(
        id="check-en",
        question="What is the capital of France?",
        answer="Paris.",
        reference_answer="Paris",
        reference_facts=["Paris is the capital of France."],
        context=["France's capital city is Paris."],
        language="en",
    ),
    JudgeItem(id="check-zh", question="法国的首都是哪里？", answer="巴黎。", language="zh"),
)


def rubric_files(path: Path) -> list[Path]:
    if path.is_dir():
        return sorted(path.glob("*.yaml")) + sorted(path.glob("*.yml"))
    return [path]


def check_rubric_file(path: Path) -> list[str]:
    """Problems in one rubric file and its templates; an empty list means it is usable."""
    try:
        rubric = load_rubric(path, path.parent)
    except RubricError as exc:
        return str(exc).splitlines()
    problems: list[str] = []
    for lang in rubric.template_texts:
        field = f"templates.{lang}"
        try:
            unknown = undeclared_variables(rubric, lang)
        except Exception as exc:  # a syntax error surfaces here first
            problems.append(f"{path}: field '{field}': template does not parse: {exc}")
            continue
        if unknown:
            problems.append(f"{path}: field '{field}': undefined template variable(s) {sorted(unknown)}")
            continue
        for sample in _SAMPLES:
            item = sample.model_copy(update={"language": lang})
            to_score = [c.name for c in rubric.applicable(item.has_references)] or [rubric.criteria[0].name]
            try:
                if rubric.kind == "pairwise":
                    messages = render_pair_messages(rubric, item, item.answer, "Answer B.")
                else:
                    messages = render_messages(rubric, item, to_score)
            except RubricError as exc:
                problems.append(str(exc))
                break
            if not all(m["content"] for m in messages):
                problems.append(f"{path}: field '{field}': a block renders empty")
                break
    return problems


def check_rubrics(path: Path) -> dict[Path, list[str]]:
    return {file: check_rubric_file(file) for file in rubric_files(path)}
