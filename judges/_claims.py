"""What an answer claims, and the reference judge's faithfulness-model inputs computed from it (docs/judges.md,
section 1): its own words, not its quotes; small talk told from a claim; only claim sentences recall, so padding
cannot raise it. `word_recall` is the plain baseline the fitted model is measured against.
"""

from __future__ import annotations

import re

from judges._evidence import Evidence, evidence, sentences, without_preamble
from judges._text import Tokens, is_bare_yes_no, negated, tokenize, union
from judges._text import share as _share
from judgewatch.contract.items import JudgeItem

POLARITY_FACTOR = 0.5  # completeness: answer says no/not and the reference answer does not, or the reverse
CLAIM_MIN_SUPPORT = 0.5  # a sentence counts for completeness when the references support this share of it
CLAIM_MAX_ECHO = 0.8  # ...and at most this share of it is the question's words
_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s*")
# A quote: an answer sentence that restates a reference sentence of at least QUOTE_MIN_TOKENS content tokens (it
# holds >= QUOTE_RECALL of that sentence's weight, and that sentence holds >= QUOTE_PRECISION of its own).
QUOTE_MIN_TOKENS = 4
QUOTE_RECALL = 0.8
QUOTE_PRECISION = 0.6
# Words of small talk: an answer whose content words are all among these makes no factual claim (BEGIN's
# "Generic" responses: "i agree!", "hello, how are you?", "haha yes", "thanks for the chat!").
_SMALL_TALK_TEXT = """
    agree agreed true right correct yeah yea yep yup nope ok okay sure totally definitely absolutely exactly
    indeed doubt sense makes hello hi hey bye goodbye see ya thank thanks welcome haha hahaha lol lmao oh ah
    wow wait well chat talk talking fun nice good great cool day today idea know think don't didn't realize
    please sorry guess maybe probably really lot people god hmm u does
"""
SMALL_TALK = frozenset(token for word in _SMALL_TALK_TEXT.split() for token in tokenize(word).weights)
# Words that attribute a quote to the references ("as the references say:", "according to the passage,"): they
# point at the quote and claim nothing themselves, so they go with it.
_ATTRIBUTION = re.compile(
    r"\b(?:as|according to) (?:the |my |your )?(?:references?|sources?|passages?|context|documents?|facts?|knowledge)"
    r"(?: (?:say|says|said|state|states|show|shows))?\s*[:,]?"
    r"|(?:根据|如|正如)?(?:参考资料|资料|参考)(?:所)?(?:说|显示|表明|指出)?[：:，,]?",
    re.IGNORECASE,
)
_QUESTION_END = re.compile(r"[?？]\W*$")
# A capitalized word inside a sentence ("And There's More", "Oh my God"): a name or title, so a claim.
_INNER_CAPITAL = re.compile(r"(?<![.!?]\s)(?<![.!?])(?<=\s)(?!I\b|I['’])[A-Z][\w'’]*")
_YES_NO_QUESTION = re.compile(
    r"^\W*(?:is|are|was|were|am|do|does|did|can|could|will|would|shall|should|has|have|had|may|might|must)\b"
    r"|[吗么][？?]?\W*$|是否|有没有|是不是",
    re.IGNORECASE,
)


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
    """The sentences of `text` that make a supported claim of their own (the best supported one if none does). A
    sentence that mostly restates the question, or that the references mostly do not support ("I hope this helps."), is
    left out; a one-sentence answer, or one that only restates the question, is kept whole."""
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


def own_words(answer: str, texts: list[str]) -> str:
    """The answer minus what it quotes of the references (docs/judges.md, section 1), when other sentences remain:
    support for restated facts must not outweigh the answer's own claim. A reference restated inside the answer's
    own sentence is kept ("Ming's wall is 8,851 km long." against "8,851 km long.")."""
    references = {s for text in texts for s in (text, *sentences(text)) if tokenize(s).weights}
    long = [s for s in references if len(tokenize(s).weights) >= QUOTE_MIN_TOKENS]
    rest = answer
    for start, end in reversed(_bracketed(answer)):
        part = answer[start:end]
        if _ATTRIBUTION.search(part) or any(quote in part for quote in long):
            rest = rest[:start] + " " + rest[end:]
    parts = sentences(rest)
    quoting = [part for part in parts if any(_quotes(tokenize(part), tokenize(s)) for s in references)]
    own = [part for part in parts if part not in quoting]
    return " ".join(own) if quoting and own else rest


def _bracketed(text: str) -> list[tuple[int, int]]:
    """(start, end) of every outermost bracketed part of `text`, brackets included (an unclosed one runs to the end)."""
    spans: list[tuple[int, int]] = []
    depth, start = 0, 0
    for i, char in enumerate(text):
        if char in "(（[":
            if depth == 0:
                start = i
            depth += 1
        elif char in ")）]" and depth:
            depth -= 1
            if depth == 0:
                spans.append((start, i + 1))
    if depth:
        spans.append((start, len(text)))
    return spans


def _quotes(part: Tokens, reference: Tokens) -> bool:
    if part.weights and part.weights.keys() == reference.weights.keys():
        return True
    if len(reference.weights) < QUOTE_MIN_TOKENS:
        return False
    return (_share(reference, part) or 0.0) >= QUOTE_RECALL and (_share(part, reference) or 0.0) >= QUOTE_PRECISION


def makes_claim(answer: str, item: JudgeItem) -> bool:
    """Whether the answer claims anything the references could support: a content word beyond small talk, a
    capitalized word inside a sentence (a name or title), or a bare yes/no to a question (it affirms or denies
    what was asked) or where a reference answer gives the polarity to compare with."""
    if any(token not in SMALL_TALK for token in tokenize(answer).weights):
        return True
    if _INNER_CAPITAL.search(" ".join(answer.split())):
        return True
    question = item.question.strip()
    asked = _QUESTION_END.search(question) is not None or _YES_NO_QUESTION.search(question) is not None
    return (asked or bool(item.reference_answer)) and is_bare_yes_no(answer)


def asserts(answer: str) -> float:
    """1.0 unless the answer ends as a question (it asks instead of claiming: nothing the references attribute)."""
    return 0.0 if _QUESTION_END.search(answer.strip()) else 1.0


def word_recall(answer: str, item: JudgeItem) -> float:
    """The plain baseline: the share of the answer's distinct content words found in the references (unweighted;
    1.0 without content words)."""
    words = set(tokenize(without_preamble(answer)).weights)
    found = set(union(reference_texts(item)).weights)
    return len(words & found) / len(words) if words else 1.0


def reference_texts(item: JudgeItem) -> list[str]:
    """Every reference text of the item: reference answer, facts, context."""
    return [text for text in (item.reference_answer, *item.reference_facts, *item.context) if text]


def features(ev: Evidence, answer: str) -> dict[str, float]:
    """The `default` model's inputs (see judges/reference_model.py)."""
    return {"sentence_support": ev.sentence_support, "consistency": ev.consistency, "asserts": asserts(answer)}


def judged_text(item: JudgeItem) -> str:
    """The text the judge grades: the answer minus a leading hedge and minus its quotes of the references (unless
    its own words claim nothing: "I agree. <a sentence of the passage>" claims the passage's sentence)."""
    answer = without_preamble(item.answer)
    own = own_words(answer, reference_texts(item))
    return own if makes_claim(own, item) else answer


def item_features(item: JudgeItem) -> dict[str, float]:
    """The `default` model's inputs of an item with references, as `coverage` computes them (for the refit)."""
    answer_text = judged_text(item)
    question = tokenize(item.question)
    texts = reference_texts(item)
    claim_text = claims(answer_text, question, union(texts))
    return features(evidence(answer_text, claim_text, texts), answer_text)


def item_unsegmented(item: JudgeItem) -> dict[str, float]:
    """The `zh` model's inputs of an item with references, as `coverage` computes them (for the refit script)."""
    answer_text = judged_text(item)
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
