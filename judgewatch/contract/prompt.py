"""Rubric + item -> chat messages, through one sandboxed Jinja2 environment with StrictUndefined.

Templates render in the bounded immutable sandbox (`contract.sandbox`) with no globals but the variables passed,
and no prompt longer than MAX_PROMPT_CHARS; any failure is a RubricError naming file and field. The rubric's
instructions are the system message (the same for every item: vLLM's prefix cache reuses it); the judged content
comes last, in the user message, delimited and neutralized.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

import jinja2
from jinja2.sandbox import SecurityError

from judgewatch.contract.items import JudgeItem, Language
from judgewatch.contract.messages import ChatMessage, conversation_parts
from judgewatch.contract.rubric import Criterion, Rubric, RubricError
from judgewatch.contract.sandbox import TEMPLATE_OPTIONS, BoundedSandbox

# A rendered prompt (system and user message together) longer than this is refused: judged fields are at most
# 256 KiB each by default, and no judge's context window comes near a few million characters.
MAX_PROMPT_CHARS = 4_000_000

SYSTEM_BLOCK = "system"
USER_BLOCK = "user"

# The only names a template may use; `judgewatch rubric check` rejects any other.
TEMPLATE_VARIABLES = frozenset({
    "rubric", "criteria", "scale", "reason_max_chars", "question", "answer", "reference_answer", "reference_facts",
    "context", "to_score", "not_applicable", "turns", "steps",
})  # fmt: skip

# A pairwise rubric's templates also get the two answers to compare (and `answer` is empty).
PAIRWISE_VARIABLES = TEMPLATE_VARIABLES | {"answer_a", "answer_b"}

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    """The one Jinja environment: sandboxed and immutable, StrictUndefined, no autoescape (a prompt, not HTML), and
    without Jinja's default globals (`range`, `dict`, `cycler`...): a template sees only what it is rendered with."""
    env = BoundedSandbox(**TEMPLATE_OPTIONS)
    env.globals.clear()
    return env


def neutralize(text: str) -> str:
    """Make judged text inert inside the prompt's <tag> delimiters: it cannot open or close any tag. Angle brackets
    become their full-width look-alikes, so the judge still reads the text, but no `</answer>` or `<system>` in an
    answer can end the data section or start a new one."""
    text = _CONTROL.sub("", unicodedata.normalize("NFC", text))
    return text.replace("<", "\uff1c").replace(">", "\uff1e")


def _criterion_view(criterion: Criterion, lang: Language) -> dict[str, object]:
    anchors = criterion.anchors_zh if lang == "zh" and criterion.anchors_zh else criterion.anchors
    description = criterion.description_zh if lang == "zh" and criterion.description_zh else criterion.description
    return {
        "name": criterion.name,
        "description": description,
        "needs_reference": criterion.needs_reference,
        "anchors": sorted(anchors.items()),
    }


@lru_cache(maxsize=64)
def _compiled(text: str) -> jinja2.Template:
    """Compiling a template costs milliseconds: do it once per template text, not once per item."""
    return environment().from_string(text)


def _compile(rubric: Rubric, lang: Language) -> jinja2.Template:
    text = rubric.template_texts.get(lang)
    if text is None:
        raise RubricError(f"{rubric.path}: field 'templates': no template for language '{lang}'")
    try:
        return _compiled(text)
    except jinja2.TemplateSyntaxError as exc:
        raise RubricError(
            f"{rubric.path}: field 'templates.{lang}': template syntax error line {exc.lineno}: {exc.message}"
        ) from exc


def template_language(rubric: Rubric, item: JudgeItem) -> Language:
    lang = item.lang
    return lang if lang in rubric.template_texts else next(iter(rubric.template_texts))


def render_messages(rubric: Rubric, item: JudgeItem, to_score: list[str]) -> list[dict[str, str]]:
    """The chat messages for one item: [system: rubric instructions, user: the neutralized content]."""
    return _render(rubric, item, to_score, {})


def render_pair_messages(rubric: Rubric, item: JudgeItem, answer_a: str, answer_b: str) -> list[dict[str, str]]:
    """A pairwise rubric's messages: the item's question and references, then answers A and B (neutralized)."""
    extra: dict[str, object] = {"answer_a": neutralize(answer_a), "answer_b": neutralize(answer_b)}
    return _render(rubric, item.model_copy(update={"answer": ""}), [c.name for c in rubric.criteria], extra)


def conversation_view(item: JudgeItem) -> dict[str, list[dict[str, object]]]:
    """A conversation's turns for a template, neutralized: `turns` before the question (the last user turn) and `steps`
    between it and the answer (tool calls and results); both empty for a single question, whose prompt is unchanged."""
    if not item.is_conversation:
        return {"turns": [], "steps": []}
    parts = conversation_parts(item.messages)
    names = {c.id: c.name for m in item.messages or () for c in m.tool_calls if c.id}

    def view(turn: ChatMessage) -> dict[str, object]:
        tool = turn.name or names.get(turn.tool_call_id or "", "") if turn.role == "tool" else ""
        return {
            "role": turn.role,
            "content": neutralize(turn.content),
            "tool_calls": [{"name": neutralize(c.name), "arguments": neutralize(c.arguments)} for c in turn.tool_calls],
            "tool": neutralize(tool),
        }

    return {"turns": [view(t) for t in parts.earlier], "steps": [view(t) for t in parts.steps]}


def _render(rubric: Rubric, item: JudgeItem, to_score: list[str], extra: dict[str, object]) -> list[dict[str, str]]:
    lang = template_language(rubric, item)
    template = _compile(rubric, lang)
    applicable = set(to_score)
    context = {
        "rubric": {"name": rubric.name, "version": rubric.version, "description": rubric.description},
        "criteria": [_criterion_view(c, lang) for c in rubric.criteria],
        "scale": {"min": rubric.scale.min, "max": rubric.scale.max},
        "reason_max_chars": rubric.reason_max_chars,
        "question": neutralize(item.question),
        "answer": neutralize(item.answer),
        "reference_answer": neutralize(item.reference_answer) if item.reference_answer else "",
        "reference_facts": [neutralize(f) for f in item.reference_facts],
        "context": [neutralize(c) for c in item.context],
        **conversation_view(item),
        "to_score": [c for c in (x.name for x in rubric.criteria) if c in applicable],
        "not_applicable": [c.name for c in rubric.criteria if c.name not in applicable],
        **extra,
    }
    missing = [b for b in (SYSTEM_BLOCK, USER_BLOCK) if b not in template.blocks]
    if missing:
        raise RubricError(f"{rubric.path}: field 'templates.{lang}': template lacks block(s) {missing}")
    where = f"{rubric.path}: field 'templates.{lang}'"
    try:
        parts = _render_blocks(template, context)
    except jinja2.UndefinedError as exc:
        raise RubricError(f"{where}: undefined template variable: {exc}") from exc
    except SecurityError as exc:
        raise RubricError(f"{where}: unsafe template refused: {exc}") from exc
    except RubricError as exc:
        raise RubricError(f"{where}: {exc}") from exc
    except Exception as exc:  # templates are data: whatever fails while rendering is the template's error
        raise RubricError(f"{where}: template failed to render: {type(exc).__name__}: {exc}") from exc
    return [{"role": "system", "content": parts[SYSTEM_BLOCK]}, {"role": "user", "content": parts[USER_BLOCK]}]


def _render_blocks(template: jinja2.Template, context: dict[str, object]) -> dict[str, str]:
    """Both blocks' text, refused (RubricError) as soon as the output passes MAX_PROMPT_CHARS."""
    total = 0
    parts: dict[str, str] = {}
    for block in (SYSTEM_BLOCK, USER_BLOCK):
        pieces = []
        for piece in template.blocks[block](template.new_context(context)):
            total += len(piece)
            if total > MAX_PROMPT_CHARS:
                raise RubricError(f"the rendered prompt is over the limit of {MAX_PROMPT_CHARS:,} characters")
            pieces.append(piece)
        parts[block] = "".join(pieces).strip()
    return parts
