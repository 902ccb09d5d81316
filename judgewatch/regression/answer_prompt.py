"""The prompt a live tier answers a golden question with: the built-in one, or the product's own Jinja template
(docs/release_gate.md, "prompt_template"). Golden data is trusted: passed as is, not neutralized.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import jinja2
from jinja2 import meta
from jinja2.sandbox import ImmutableSandboxedEnvironment

from judgewatch.contract.sandbox import TEMPLATE_OPTIONS

TEMPLATE_VARIABLES = frozenset({"question", "reference_facts", "context", "language"})
SYSTEM_BLOCK = "system"
USER_BLOCK = "user"

SYSTEM_PROMPTS = {
    "en": "Answer the question using only the context. Answer in one or two short sentences.",
    "zh": "请只根据资料回答问题，用一两句简短的话作答。",
}
_USER_TEMPLATES = {
    "en": "Context:\n{facts}\n\nQuestion: {question}",
    "zh": "资料：\n{facts}\n\n问题：{question}",
}


class TemplateError(ValueError):
    """A tier prompt template that cannot be used; the message names the file and line."""


def answer_messages(question: str, facts: Sequence[str], language: str) -> list[dict[str, str]]:
    """The built-in prompt: a short system prompt, the reference facts as context, the question."""
    lang = language if language in SYSTEM_PROMPTS else "en"
    listed = "\n".join(f"- {fact}" for fact in facts) or "-"
    return [
        {"role": "system", "content": SYSTEM_PROMPTS[lang]},
        {"role": "user", "content": _USER_TEMPLATES[lang].format(facts=listed, question=question)},
    ]


@lru_cache(maxsize=1)
def environment() -> ImmutableSandboxedEnvironment:
    """The sandbox tier templates render in: no attribute tricks, no mutation of the values passed in."""
    return ImmutableSandboxedEnvironment(**TEMPLATE_OPTIONS)


@dataclass(frozen=True)
class AnswerTemplate:
    """A tier's prompt template: its file name (for reports), its text and the text's hash."""

    name: str
    text: str

    @property
    def hash(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()[:16]

    @classmethod
    def load(cls, path: Path) -> AnswerTemplate:
        """Read and check a template file: syntax, known variables, and either both blocks or none."""
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise TemplateError(f"{path}: cannot read the prompt template: {exc.strerror or exc}") from exc
        except UnicodeDecodeError as exc:
            raise TemplateError(f"{path}: the prompt template is not valid UTF-8") from exc
        template = cls(name=path.name, text=text)
        template.check(str(path))
        return template

    def check(self, where: str) -> None:
        try:
            ast = environment().parse(self.text)
            compiled = _compiled(self.text)
        except jinja2.TemplateSyntaxError as exc:
            raise TemplateError(f"{where}: template syntax error line {exc.lineno}: {exc.message}") from exc
        unknown = set(meta.find_undeclared_variables(ast)) - TEMPLATE_VARIABLES
        if unknown:
            allowed = ", ".join(sorted(TEMPLATE_VARIABLES))
            raise TemplateError(f"{where}: unknown template variable(s) {sorted(unknown)} (allowed: {allowed})")
        blocks = set(compiled.blocks)
        if blocks and USER_BLOCK not in blocks:
            raise TemplateError(f"{where}: a template with blocks needs a '{USER_BLOCK}' block (got {sorted(blocks)})")
        if extra := blocks - {SYSTEM_BLOCK, USER_BLOCK}:
            raise TemplateError(f"{where}: unknown block(s) {sorted(extra)} (use '{SYSTEM_BLOCK}' and '{USER_BLOCK}')")

    def render(
        self, *, question: str, reference_facts: Sequence[str], context: Sequence[str], language: str
    ) -> list[dict[str, str]]:
        """The chat messages for one golden item: [system?, user]; an empty system block sends no system message."""
        compiled = _compiled(self.text)
        values = {
            "question": question,
            "reference_facts": list(reference_facts),
            "context": list(context),
            "language": language,
        }
        try:
            if not compiled.blocks:
                return [{"role": "user", "content": compiled.render(values).strip()}]
            parts = {
                name: "".join(compiled.blocks[name](compiled.new_context(values))).strip()
                for name in (SYSTEM_BLOCK, USER_BLOCK)
                if name in compiled.blocks
            }
        except jinja2.UndefinedError as exc:
            raise TemplateError(f"{self.name}: undefined template variable: {exc}") from exc
        except jinja2.exceptions.SecurityError as exc:
            raise TemplateError(f"{self.name}: template not allowed in the sandbox: {exc}") from exc
        messages = [{"role": "system", "content": parts[SYSTEM_BLOCK]}] if parts.get(SYSTEM_BLOCK) else []
        return [*messages, {"role": "user", "content": parts[USER_BLOCK]}]


@lru_cache(maxsize=32)
def _compiled(text: str) -> jinja2.Template:
    """Compile once per template text, not once per golden item."""
    return environment().from_string(text)
