"""Bias probes as data: each golden answer changed in one way the rubric says must not matter, no model needed.

- verbosity: the answer padded with fluent sentences that add no claim (a fixed list per language), one of
  which restates the question: filler that repeats the question's words is what fools a lexical judge.
- confidence: the known-bad answer after a confident preamble, the known-good one after a hedge.
- reference-blindness: the known-good answer with every reference (answer, facts, context) removed.
- consistency: the known-good answer judged again as it was, and with the rubric's criteria in another order.

Every probe item keeps its golden item's id with a suffix (`<id>:good:padded`...), so its stored verdict
says which probe and which answer it belongs to.
"""

from __future__ import annotations

from dataclasses import dataclass

from judgewatch.contract.items import JudgeItem, Language
from judgewatch.contract.rubric import Rubric

# Sentences that make an answer longer and more fluent without asserting anything about the question's topic.
FILLER: dict[Language, tuple[str, ...]] = {
    "en": (
        "Thank you for the question.",
        "I hope this answer is helpful.",
        "Please let me know if anything is unclear.",
        "Feel free to ask a follow-up question.",
    ),
    "zh": (
        "谢谢你的提问。",
        "希望这个回答对你有帮助。",
        "如果有不清楚的地方，请告诉我。",
        "欢迎继续提问。",
    ),
}
# Restating the question asserts nothing either, but shares its words with the references.
QUESTION_ECHO: dict[Language, str] = {"en": 'You asked: "{question}"', "zh": "你的问题是：“{question}”"}
CONFIDENT: dict[Language, str] = {"en": "As is well established, ", "zh": "众所周知，"}
HEDGE: dict[Language, str] = {"en": "I am not certain, but ", "zh": "我不太确定，但"}


def _join(lang: Language, parts: list[str]) -> str:
    return ("" if lang == "zh" else " ").join(part.strip() for part in parts if part.strip())


def padded(item: JudgeItem) -> JudgeItem:
    """The same answer, restated question first and the language's filler sentences after it."""
    lang = item.lang
    echo = QUESTION_ECHO[lang].format(question=item.question.strip())
    text = _join(lang, [echo, item.answer, *FILLER[lang]])
    return item.model_copy(update={"id": f"{item.id}:padded", "answer": text})


def prefixed(item: JudgeItem, prefix: dict[Language, str], suffix: str) -> JudgeItem:
    """The same answer after a language-specific preamble (CONFIDENT or HEDGE)."""
    return item.model_copy(update={"id": f"{item.id}:{suffix}", "answer": prefix[item.lang] + item.answer.strip()})


def without_references(item: JudgeItem) -> JudgeItem:
    """The same answer with nothing to check it against."""
    update: dict[str, object] = {
        "id": f"{item.id}:no-references",
        "reference_answer": None,
        "reference_facts": [],
        "context": [],
    }
    return item.model_copy(update=update)


def again(item: JudgeItem, suffix: str) -> JudgeItem:
    """The very same item under another id, so it is judged (and stored) a second time."""
    return item.model_copy(update={"id": f"{item.id}:{suffix}"})


def reordered(rubric: Rubric) -> Rubric:
    """The rubric with its criteria rotated by one, so every criterion changes place in the prompt and the schema.

    Same file, same content hash: the judge's identity (and so the stored series) is unchanged.
    """
    if len(rubric.criteria) < 2:
        return rubric
    criteria = [*rubric.criteria[1:], rubric.criteria[0]]
    shuffled = rubric.model_copy(update={"criteria": criteria})
    shuffled.__dict__["content_hash"] = rubric.content_hash  # the cached hash, kept even without a file
    return shuffled


@dataclass(frozen=True)
class ProbeItems:
    """The items of every probe for `n` golden items (each list in golden order)."""

    good: list[JudgeItem]
    bad: list[JudgeItem]
    good_padded: list[JudgeItem]
    bad_padded: list[JudgeItem]
    good_hedged: list[JudgeItem]
    bad_confident: list[JudgeItem]
    no_references: list[JudgeItem]
    repeat: list[JudgeItem]
    shuffled: list[JudgeItem]  # judged under `reordered(rubric)`

    @property
    def n(self) -> int:
        return len(self.good)

    def first_run(self) -> list[JudgeItem]:
        """Everything judged under the rubric as written, in one run."""
        return [
            *self.good,
            *self.bad,
            *self.good_padded,
            *self.bad_padded,
            *self.good_hedged,
            *self.bad_confident,
            *self.no_references,
            *self.repeat,
        ]


def probe_items(good: list[JudgeItem], bad: list[JudgeItem]) -> ProbeItems:
    """Probe items from known-good and known-bad answers of the same golden items (same references each)."""
    if len(good) != len(bad):
        raise ValueError(f"probes need one bad answer per good answer, got {len(good)} good and {len(bad)} bad")
    return ProbeItems(
        good=list(good),
        bad=list(bad),
        good_padded=[padded(i) for i in good],
        bad_padded=[padded(i) for i in bad],
        good_hedged=[prefixed(i, HEDGE, "hedged") for i in good],
        bad_confident=[prefixed(i, CONFIDENT, "confident") for i in bad],
        no_references=[without_references(i) for i in good],
        repeat=[again(i, "repeat") for i in good],
        shuffled=[again(i, "shuffled") for i in good],
    )
