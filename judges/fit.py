"""Fit one item's prompt to the judge's context window instead of losing its verdict (the order: docs/judging.md).

Passage relevance is `judges._text.share` with the answer; the final prompt is counted exactly and trimmed from the
least relevant end until it fits.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from judges._text import share, tokenize
from judges.window import TokenCounter, Window, tokens_bound
from judgewatch.contract.items import JudgeItem
from judgewatch.contract.messages import conversation_parts
from judgewatch.contract.prompt import neutralize, render_messages
from judgewatch.contract.rubric import Rubric
from judgewatch.contract.verdicts import PromptTrim

PASSAGE_OVERHEAD = 4  # tokens of a passage's list marker and line break, estimated high
SENTENCE_JOIN = " … "  # marks where a passage kept in part lost sentences
_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+|(?<=[。！？；])|\n+")


@dataclass(frozen=True)
class Passage:
    """One piece of reference material: where it sits in the item, its text and its relevance rank key."""

    kind: str  # "reference_answer" | "fact" | "context"
    index: int
    text: str
    relevance: float

    def sentences(self) -> list[str]:
        return [s.strip() for s in _SENTENCE_END.split(self.text) if s.strip()]


@dataclass(frozen=True)
class Fitted:
    """The messages to send, and what was left out (None: the whole item fits)."""

    messages: list[dict[str, str]]
    trimmed: PromptTrim | None = None


@dataclass(frozen=True)
class TooLong:
    """Rubric, question and answer alone exceed the budget (or no reference material fits beside them)."""

    detail: str
    prompt_tokens: int


@dataclass
class _Selection:
    """Kept passages (whole, or as some of their sentences), in the order they were chosen."""

    whole: list[Passage] = field(default_factory=list)
    parts: dict[Passage, list[int]] = field(default_factory=dict)  # passage -> kept sentence numbers
    order: list[tuple[Passage, int | None]] = field(default_factory=list)  # (passage, sentence or None)

    def drop_last(self) -> None:
        passage, sentence = self.order.pop()
        if sentence is None:
            self.whole.remove(passage)
            return
        self.parts[passage].remove(sentence)
        if not self.parts[passage]:
            del self.parts[passage]

    def text_of(self, passage: Passage) -> str | None:
        if passage in self.whole:
            return passage.text
        kept = sorted(self.parts.get(passage, []))
        if not kept:
            return None
        sentences = passage.sentences()
        return SENTENCE_JOIN.join(sentences[k] for k in kept)

    def item(self, item: JudgeItem, passages: list[Passage]) -> JudgeItem:
        """`item` with only the kept reference material, in its given order."""
        texts = {(p.kind, p.index): self.text_of(p) for p in passages}
        facts = [t for (kind, _), t in texts.items() if kind == "fact" and t]
        context = [t for (kind, _), t in texts.items() if kind == "context" and t]
        kept = {"reference_answer": texts.get(("reference_answer", 0)), "reference_facts": facts, "context": context}
        return item.model_copy(update=kept)


def relevance_to(item: JudgeItem) -> Callable[[str], float]:
    """Relevance of a text to the item's answer: the answer's overlap with it; the question's breaks ties."""
    answer, question = tokenize(item.answer), tokenize(item.question)

    def relevance(text: str) -> float:
        tokens = tokenize(text)
        return (share(answer, tokens) or 0.0) + 1e-3 * (share(question, tokens) or 0.0)

    return relevance


def passages(item: JudgeItem, relevance: Callable[[str], float]) -> list[Passage]:
    """The item's reference material in its given order; the reference answer ranks first."""
    found: list[Passage] = []
    if item.reference_answer:
        found.append(Passage("reference_answer", 0, item.reference_answer, math.inf))
    found += [Passage("fact", k, t, relevance(t)) for k, t in enumerate(item.reference_facts)]
    found += [Passage("context", k, t, relevance(t)) for k, t in enumerate(item.context)]
    return found


def earlier_turns(item: JudgeItem) -> int:
    """How many turns come before the question: what the fitter may drop, oldest first (0 for a question)."""
    return len(conversation_parts(item.messages).earlier) if item.is_conversation else 0


def without_oldest_turns(item: JudgeItem, dropped: int) -> JudgeItem:
    """`item` without the `dropped` oldest of its turns before the question."""
    return item.model_copy(update={"messages": (item.messages or [])[dropped:] or None})


async def _fits(messages: list[dict[str, str]], counter: TokenCounter, budget: int) -> int | None:
    """The prompt's tokens when it fits the budget, else None (counted only when the cheap bound is not enough)."""
    if tokens_bound(messages) <= budget:
        return 0
    tokens = await counter.messages(messages)
    return tokens if tokens <= budget else None


async def _drop_turns(
    item: JudgeItem, rubric: Rubric, to_score: list[str], counter: TokenCounter, budget: int
) -> tuple[int, list[dict[str, str]] | None]:
    """(the fewest oldest turns to drop, the messages then) when dropping turns alone makes the item fit, else
    (every earlier turn, None). A binary search: dropping more never makes the prompt longer."""
    given = earlier_turns(item)
    if not given or await _fits(render_messages(rubric, without_oldest_turns(item, given), to_score),
                                counter, budget) is None:  # fmt: skip
        return given, None
    low, high = 1, given  # `high` fits
    while low < high:
        middle = (low + high) // 2
        if await _fits(render_messages(rubric, without_oldest_turns(item, middle), to_score), counter, budget) is None:
            low = middle + 1
        else:
            high = middle
    return high, render_messages(rubric, without_oldest_turns(item, high), to_score)


def with_shots(messages: list[dict[str, str]], shots: Sequence[dict[str, str]]) -> list[dict[str, str]]:
    """Few-shot turns between the system message and the judged item."""
    return [messages[0], *shots, *messages[1:]]


async def _most_shots(
    full: list[dict[str, str]], shots: Sequence[dict[str, str]], counter: TokenCounter, budget: int
) -> int | None:
    """The most example pairs (the first ones) that fit beside the whole item; None when the item alone does not."""
    given = len(shots) // 2
    if await _fits(with_shots(full, shots), counter, budget) is not None:
        return given
    if not given or await _fits(full, counter, budget) is None:
        return None
    low, high = 0, given  # `low` pairs fit, `high` do not: more examples never make the prompt shorter
    while high - low > 1:
        middle = (low + high) // 2
        if await _fits(with_shots(full, shots[: 2 * middle]), counter, budget) is None:
            high = middle
        else:
            low = middle
    return low


async def fit_messages(
    item: JudgeItem,
    rubric: Rubric,
    to_score: list[str],
    counter: TokenCounter,
    window: Window,
    shots: Sequence[dict[str, str]] = (),
) -> Fitted | TooLong:
    """The item's messages cut to `window`'s budget, or why they cannot be. Few-shot `shots` (user and assistant
    turns, `judges.alignment`) are dropped, the last first, before anything of the item itself."""
    full = render_messages(rubric, item, to_score)
    given = len(shots) // 2
    kept = await _most_shots(full, shots, counter, window.budget)
    if kept == given:
        return Fitted(with_shots(full, shots))  # the whole item and every example
    examples = {"examples_given": given, "examples_dropped": given - (kept or 0)}
    if kept is not None:
        messages = with_shots(full, shots[: 2 * kept])
        every, sent = await counter.messages(with_shots(full, shots)), await counter.messages(messages)
        references = len(passages(item, lambda _: 0.0))
        trim = _prompt_trim(window, every, sent, earlier_turns(item), 0, references, references)
        return Fitted(messages, trim.model_copy(update=examples))
    fitted = await _fit_item(item, rubric, to_score, counter, window, full)
    if isinstance(fitted, TooLong) or fitted.trimmed is None:
        return fitted
    return Fitted(fitted.messages, fitted.trimmed.model_copy(update=examples))


async def _fit_item(
    item: JudgeItem,
    rubric: Rubric,
    to_score: list[str],
    counter: TokenCounter,
    window: Window,
    full: list[dict[str, str]],
) -> Fitted | TooLong:
    """The item alone (no example) cut to `window`'s budget: oldest turns, then reference material."""
    budget = window.budget
    if tokens_bound(full) <= budget:
        return Fitted(full)  # fits whatever the tokenizer counts: nothing to ask the endpoint
    full_tokens = await counter.messages(full)
    if full_tokens <= budget:
        return Fitted(full)
    turns_given = earlier_turns(item)
    dropped, shorter = await _drop_turns(item, rubric, to_score, counter, budget)
    if shorter is not None:
        references = len(passages(item, lambda _: 0.0))
        sent = await counter.messages(shorter)
        return Fitted(shorter, _prompt_trim(window, full_tokens, sent, turns_given, dropped, references, references))
    item = without_oldest_turns(item, dropped)
    bare = item.model_copy(update={"reference_answer": None, "reference_facts": [], "context": []})
    bare_tokens = await counter.messages(render_messages(rubric, bare, to_score))
    limits = f"the window is {window.size} tokens, {window.reply_tokens} kept for the reply: {budget} for the prompt"
    without_turns = f" after dropping all {dropped} earlier turns" if dropped else ""
    if bare_tokens > budget:
        return TooLong(
            f"rubric, question and answer alone take {bare_tokens} prompt tokens{without_turns} "
            f"({full_tokens} with the reference material); {limits}",
            bare_tokens,
        )
    relevance = relevance_to(item)
    given = passages(item, relevance)
    ranked = sorted(given, key=lambda p: -p.relevance)  # stable: equal relevance keeps the given order
    chosen = await _choose(ranked, relevance, counter, budget - bare_tokens)
    while True:
        if not chosen.order:
            return TooLong(
                f"rubric, question and answer take {bare_tokens} prompt tokens{without_turns} and no passage or "
                f"sentence of the reference material fits beside them ({full_tokens} with all of it); {limits}",
                full_tokens,
            )
        messages = render_messages(rubric, chosen.item(item, given), to_score)
        sent_tokens = await counter.messages(messages)
        if sent_tokens <= budget:
            break
        chosen.drop_last()  # the estimate per passage was short: drop the least relevant piece and count again
    kept = _prompt_trim(
        window, full_tokens, sent_tokens, turns_given, dropped, len(given), len(chosen.whole), len(chosen.parts)
    )
    return Fitted(messages, kept)


def _prompt_trim(
    window: Window, full: int, sent: int, turns_given: int, turns_dropped: int, given: int, kept: int, partial: int = 0
) -> PromptTrim:
    """What fitting left out: turns dropped, reference passages kept whole or in part, tokens before and after."""
    return PromptTrim(
        passages_given=given, passages_kept=kept, passages_partial=partial, prompt_tokens_full=full,
        prompt_tokens_sent=sent, window=window.size, reply_tokens=window.reply_tokens, exact=window.exact,
        turns_given=turns_given, turns_dropped=turns_dropped,
    )  # fmt: skip


async def _choose(
    ranked: list[Passage], relevance: Callable[[str], float], counter: TokenCounter, room: int
) -> _Selection:
    """Whole passages by relevance while they fit, then the best sentences of the others."""
    chosen = _Selection()
    sizes = dict(zip(ranked, await counter.texts([neutralize(p.text) for p in ranked]), strict=True))
    for passage in ranked:
        cost = sizes[passage] + PASSAGE_OVERHEAD
        if cost <= room:
            chosen.whole.append(passage)
            chosen.order.append((passage, None))
            room -= cost
    candidates: list[tuple[float, int, Passage, int, int]] = []
    for rank, passage in enumerate(p for p in ranked if p not in chosen.whole):
        first = 1.0 if passage.kind == "reference_answer" else 0.0  # its sentences still come first
        for k, sentence in enumerate(passage.sentences()):
            # Tokens of a sentence: its share of the passage's exact count, rounded up (checked at the end).
            estimate = math.ceil(sizes[passage] * len(sentence) / max(1, len(passage.text))) + 1
            candidates.append((-(first + relevance(sentence)), rank, passage, k, estimate))
    for _, _, passage, k, estimate in sorted(candidates, key=lambda c: (c[0], c[1], c[3])):
        cost = estimate + (0 if passage in chosen.parts else PASSAGE_OVERHEAD)
        if cost <= room:
            chosen.parts.setdefault(passage, []).append(k)
            chosen.order.append((passage, k))
            room -= cost
    return chosen
