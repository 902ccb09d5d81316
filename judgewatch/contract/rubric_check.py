"""Validate rubric files and their templates: every problem named by file, field and what is wrong.

Templates are checked statically before any sample is rendered: one that reaches an attribute or key
beginning with `_` (the way out of a sandbox: `__globals__`, `__class__`) or a name judgewatch does not
provide (`lipsum`, `cycler`, ...) is rejected with its template file and line, and never rendered.
"""

from __future__ import annotations

import contextlib
import hashlib
from pathlib import Path

from jinja2 import nodes

from judgewatch.contract.items import JudgeItem, Language
from judgewatch.contract.prompt import (
    PAIRWISE_VARIABLES,
    TEMPLATE_VARIABLES,
    environment,
    render_messages,
    render_pair_messages,
)
from judgewatch.contract.rubric import Rubric, RubricError, load_rubric

# fmt: off
_SAMPLES = (
    JudgeItem(
        id="check-en", question="What is the capital of France?", answer="Paris.", reference_answer="Paris",
        reference_facts=["Paris is the capital of France."], context=["France's capital city is Paris."], language="en",
    ),
    JudgeItem(id="check-zh", question="法国的首都是哪里？", answer="巴黎。", language="zh"),
    JudgeItem.model_validate(  # a conversation with a tool call: `turns` and `steps` render too
        {
            "id": "check-conversation",
            "messages": [
                {"role": "user", "content": "I am in France."},
                {"role": "assistant", "content": "How can I help?"},
                {"role": "user", "content": "What is the capital?"},
                {"role": "assistant", "tool_calls": [{"id": "c1", "function": {"name": "lookup", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "c1", "content": "Paris"},
            ],
            "answer": "Paris.",
        }
    ),
)
# fmt: on


def template_path(rubric: Rubric, lang: Language) -> Path:
    """The file a language's template was read from (for messages naming file and line)."""
    return rubric.path.parent / rubric.templates[lang] if rubric.path else Path(rubric.templates[lang])


def unsafe_constructs(rubric: Rubric, lang: Language) -> list[str]:
    """`<template file>:<line>: ...` for every private attribute, private key or unknown global the template uses.
    Raises jinja2.TemplateSyntaxError when the template does not parse."""
    ast = environment().parse(rubric.template_texts[lang])
    where = template_path(rubric, lang)
    allowed = PAIRWISE_VARIABLES if rubric.kind == "pairwise" else TEMPLATE_VARIABLES
    local = {n.name for n in ast.find_all(nodes.Name) if n.ctx in ("store", "param")}
    problems: list[str] = []
    for node in ast.find_all((nodes.Getattr, nodes.Getitem, nodes.Filter, nodes.Name)):
        if isinstance(node, nodes.Getattr) and node.attr.startswith("_"):
            problems.append(f"{where}:{node.lineno}: attribute {node.attr!r} begins with '_': not allowed")
        elif isinstance(node, nodes.Getitem) and _private_const(node.arg):
            problems.append(f"{where}:{node.lineno}: key {node.arg.value!r} begins with '_': not allowed")  # type: ignore[attr-defined]
        elif isinstance(node, nodes.Filter) and node.name == "attr" and node.args and _private_const(node.args[0]):
            problems.append(f"{where}:{node.lineno}: attribute filter on a name beginning with '_': not allowed")
        elif (
            isinstance(node, nodes.Name) and node.ctx == "load" and node.name not in allowed and node.name not in local
        ):
            problems.append(
                f"{where}:{node.lineno}: name {node.name!r} is not one judgewatch provides "
                f"(allowed: {', '.join(sorted(allowed))})"
            )
    return problems


def _private_const(node: nodes.Node) -> bool:
    return isinstance(node, nodes.Const) and isinstance(node.value, str) and node.value.startswith("_")


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
            unsafe = unsafe_constructs(rubric, lang)
        except Exception as exc:  # a syntax error surfaces here first
            problems.append(f"{path}: field '{field}': template does not parse: {exc}")
            continue
        if unsafe:  # never render a template that tries to leave its data
            problems.extend(f"{path}: field '{field}': {problem}" for problem in unsafe)
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


# The code a check's verdict depends on: a passed check is remembered only for these files as they are now.
_CHECKER_SOURCES = ("rubric_check.py", "prompt.py", "sandbox.py", "rubric.py")


def check_rubric_cached(rubric: Rubric, cache_dir: Path) -> list[str]:
    """`check_rubric_file` for a loaded rubric, remembered when it passes: a marker file in `cache_dir` named by
    the rubric's full content digest (its YAML and templates) and the checker's own source, so a changed rubric or
    a changed checker is checked again. Problems are never remembered: a failing rubric is checked every time."""
    if rubric.path is None:
        return []
    digest = hashlib.sha256(rubric.content_digest.encode())
    here = Path(__file__).parent
    for name in _CHECKER_SOURCES:
        digest.update((here / name).read_bytes())
    marker = cache_dir / f"{digest.hexdigest()}.passed"
    if marker.exists():
        return []
    problems = check_rubric_file(rubric.path)
    if not problems:
        with contextlib.suppress(OSError):  # a read-only data folder: the check simply runs again next time
            cache_dir.mkdir(parents=True, exist_ok=True)
            marker.write_text(f"{rubric.path}\n", encoding="utf-8")
    return problems


def check_rubrics(path: Path) -> dict[Path, list[str]]:
    """Problems per rubric file: of `path`, or of every rubric file in that folder."""
    files = sorted(path.glob("*.yaml")) + sorted(path.glob("*.yml")) if path.is_dir() else [path]
    return {file: check_rubric_file(file) for file in files}
