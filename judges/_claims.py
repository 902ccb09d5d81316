"""What an answer claims, and the reference judge's faithfulness-model inputs computed from it.

`claims` keeps the sentences of an answer that make a supported claim of their own (filler and restated questions
are left out, so padding cannot raise completeness or recall); `features` (word-segmented text: evidence and slot,
judges/_evidence.py and judges/_slot.py) and `unsegmented_features` (Chinese: support, polarity, recall of the
reference texts) are the inputs of judges/reference_model.py's two models. `item_evidence` and `item_unsegmented`
compute them from an item alone, as judges/reference.coverage does, for scripts/fit_reference_judge.py.
"""

from __future__ import annotations

import re

from judges._evidence import Evidence, evidence, without_preamble
from judges._slot import Slot, slot
from judges._text import Tokens, negated, tokenize, union
from judges._text import share as _share
from judgewatch.contract.items import JudgeItem

POLARITY_FACTOR = 0.5  # completeness: answer says no/not and the reference answer does not, or the reverse
CLAIM_MIN_SUPPORT = 0.5  # a sentence counts for completeness when the references support this share of it
CLAIM_MAX_ECHO = 0.8  # ...and at most this share of it is the question's words
_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s*")


def recall(target_text: str, answer: Tokens, question: Tokens, flip: bool) -> float:
    """How much of one reference text the answer covers, ignoring what the question already says."""
    target = tokenize(target_text)
    recall = _share(target, answer, exclude=question)
    if recall is None:
        recall = _share(target, answer)
    if recall is None:  # a bare "yes"/"no" reference: only the polarity can agree
        return 0.0 if flip else 1.0
    return recall * (POLARITY_FACTOR if flip else 1.0)


def claims(text: str, question: Tokens, references: Tokens) -> str:
    """The sentences of `text` that make a supported claim of their own (the best supported one if none does).

    A sentence that mostly restates the question, or that the references mostly do not support ("I hope this
    helps."), is left out; a one-sentence answer, or one that only restates the question, is kept whole.
    """
    sentences = [part.strip() for part in _SENTENCE_END.split(text) if part.strip()]
    if len(sentences) < 2:
        return text
    scored = []
    for sentence in sentences:
        tokens = tokenize(sentence)
        echo = _share(tokens, question)
        if echo is not None and echo <= CLAIM_MAX_ECHO:
            scored.append((_share(tokens, references) or 0.0, sentence))
    if not scored:
        return text
    kept = [sentence for support, sentence in scored if support >= CLAIM_MIN_SUPPORT]
    return " ".join(kept) if kept else max(scored, key=lambda pair: pair[0])[1]


def reference_texts(item: JudgeItem) -> list[str]:
    """Every reference text of the item: reference answer, facts, context."""
    return [text for text in (item.reference_answer, *item.reference_facts, *item.context) if text]


def features(ev: Evidence, sl: Slot) -> dict[str, float]:
    """The faithfulness model's inputs (see judges/reference_model.py)."""
    return {
        "sentence_support": ev.sentence_support,
        "span_support": ev.span_support,
        "consistency": ev.consistency,
        "shared_negation": ev.shared_negation,
        "slot_entity": sl.entity_consistency,
        "slot_quantity": sl.quantity_consistency,
    }


def item_evidence(item: JudgeItem) -> tuple[Evidence, Slot]:
    """The evidence and slot check of an item with references, as `coverage` computes them (for the refit script)."""
    answer_text = without_preamble(item.answer)
    question = tokenize(item.question)
    texts = reference_texts(item)
    claim_text = claims(answer_text, question, union(texts))
    return evidence(answer_text, claim_text, texts), slot(item.question, claim_text, texts)


def item_unsegmented(item: JudgeItem) -> dict[str, float]:
    """The `zh` model's inputs of an item with references, as `coverage` computes them (for the refit script)."""
    answer_text = without_preamble(item.answer)
    answer, question = tokenize(answer_text), tokenize(item.question)
    references = union(reference_texts(item))
    claim_text = claims(answer_text, question, references)
    flip = bool(item.reference_answer) and negated(claim_text) != negated(item.reference_answer or "")
    support = 1.0 if not answer else (_share(answer, references) or 0.0)
    return unsegmented_features(support, flip, fact_recall(item, tokenize(claim_text), question))


def unsegmented_features(support: float, flip: bool, recalled: float) -> dict[str, float]:
    """The `zh` model's inputs (see judges/reference_model.py)."""
    return {"support": support, "polarity": 0.0 if flip else 1.0, "fact_recall": recalled}


def fact_recall(item: JudgeItem, claimed: Tokens, question: Tokens) -> float:
    """Mean share of each reference answer and fact (minus the question's words) that the answer's claims recall:
    1.0 without them (context says what is true, not what an answer must say)."""
    targets = list(dict.fromkeys(text for text in (item.reference_answer, *item.reference_facts) if text))
    if not targets:
        return 1.0
    return sum(recall(text, claimed, question, False) for text in targets) / len(targets)
