"""Where in the references an answer is supported: one sentence per source, with its stance.

Overlap with the references as one bag cannot see an entity swap ("Stanford is in Chestnut Hill" when the facts
name each in another sentence), so support is measured in the best sentence of each reference text, those pooled;
stance is whether the answer says no as the short (answer-like) references do. A leading hedge ("I am not certain,
but") is left out first: a hedge is not a negation, and confidence is not evidence.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import pairwise

from judges._text import Tokens, latin_words, merged, negated, share, tokenize

_SPLIT_RE = re.compile(
    r"(?<=[.!?])(?=\s*[\"“(]?[A-Z\u4e00-\u9fff])"  # "...century.First for Women", "... city. The"
    r"|(?<=[.!?][\"”’])(?=\s+[A-Z])"  # '... "Hi." Then'
    r"|(?<=[a-z][.!?])(?=\d)|(?<=[a-z]{2}[.!?])(?=[a-z])"  # passages glued together: "City.101", "Board.from"
    r"|(?<=[。！？；])"
)
_ABBREVIATIONS = (
    "st|mr|mrs|ms|dr|jr|sr|inc|ltd|co|corp|bros|vs|mt|ft|no|gen|col|lt|sgt|prof|rev|sen|gov|ave"
    "|jan|feb|aug|sept|oct|nov|dec"
)
# A piece ending in an initial ("J."), a dotted abbreviation ("S.A.", "U.S.") or a title ("St.") goes on.
_ABBREVIATION_END_RE = re.compile(r"(?:(?:^|[\s(])[A-Za-z]|[A-Za-z]\.[A-Za-z]|(?:^|\W)(?i:" + _ABBREVIATIONS + r"))\.$")
_PREAMBLE_RE = re.compile(
    r"^\s*(?:(?:i am|i'm|i’m) not (?:entirely |completely |quite |very |100% )?(?:certain|sure)"
    r"|i (?:think|believe|guess)|as is (?:well[- ])?(?:established|known)|it is (?:well[- ])?known that"
    r"|perhaps|probably|maybe)[,:]?\s*(?:but\s+|that\s+)?"
    r"|^\s*(?:我不太确定|我不确定|我不能确定|我认为|我觉得|众所周知)[，,：:]?(?:但是?)?",
    re.IGNORECASE,
)


@lru_cache(maxsize=16384)
def sentences(text: str) -> tuple[str, ...]:
    """The sentences of an English, Chinese or mixed text (abbreviations and initials do not end one)."""
    out: list[str] = []
    for piece in _SPLIT_RE.split(text):
        if not piece.strip():
            continue
        if out and _ABBREVIATION_END_RE.search(out[-1].rstrip()):
            out[-1] += piece
        else:
            out.append(piece)
    return tuple(part.strip() for part in out)


def without_preamble(answer: str) -> str:
    """The answer minus a leading hedge or confidence formula, which qualifies the claim but asserts nothing."""
    stripped = _PREAMBLE_RE.sub("", answer, count=1)
    return stripped if stripped.strip() else answer


SPAN_GAP = 2  # a reference sentence may put this many content words between two consecutive words of the answer


@lru_cache(maxsize=16384)
def ordered_pairs(text: str) -> frozenset[tuple[str, str]]:
    """Content-word pairs in the text's order, at most SPAN_GAP content words apart ("in Paris" may intervene)."""
    words = latin_words(text)
    return frozenset((a, b) for i, a in enumerate(words) for b in words[i + 1 : i + 2 + SPAN_GAP])


def order(words: Sequence[str], sentence: str) -> float:
    """Share of the links between consecutive answer words found in `sentence` that the sentence has in the same
    order, at most SPAN_GAP words apart; 1.0 with fewer than two such words (a missing word costs support, not
    order). "Lake Erie State Park" against "...state park ... Lake Erie": 2 of 3 links."""
    present = set(latin_words(sentence))
    found = [word for word in words if word in present]
    links = [(a, b) for a, b in pairwise(found) if a != b]
    if not links:
        return 1.0
    pairs = ordered_pairs(sentence)
    return sum(1 for link in links if link in pairs) / len(links)


@dataclass(frozen=True)
class Evidence:
    """How one answer is supported by its references, sentence by sentence."""

    sentence_support: float  # share of the answer in the pooled best sentence of each reference text
    consistency: float  # 1 - |answer says no - share of the short references saying no|; 1 without short references
    best_sentence: str  # the sentence that supports the most of the answer, then in its word order (for the reason)


def evidence(answer: str, claim_text: str, references: Sequence[str]) -> Evidence:
    """Sentence support and stance of `answer` (its claims: `claim_text`) against `references`."""
    tokens = tokenize(answer)
    words = latin_words(answer)
    best_per_text: list[Tokens] = []
    best_sentence, best = "", (-1.0, -1.0)
    for text in references:
        text_best: Tokens | None = None
        text_share = -1.0
        for sentence in sentences(text):
            sentence_tokens = tokenize(sentence)
            value = share(tokens, sentence_tokens) or 0.0
            if value > text_share:
                text_best, text_share = sentence_tokens, value
            if value >= best[0] and (value, in_order := order(words, sentence)) > best:
                best_sentence, best = sentence, (value, in_order)
        if text_best is not None:
            best_per_text.append(text_best)
    # Without content words ("No.") there is nothing to find: the stance alone speaks.
    sentence_support = (share(tokens, merged(best_per_text)) or 0.0) if tokens and best_per_text else 1.0
    says_no = negated(claim_text)
    short = [text for text in references if len(sentences(text)) <= 1]
    negating = sum(1 for text in short if negated(text)) / len(short) if short else float(says_no)
    return Evidence(sentence_support, 1.0 - abs(says_no - negating), best_sentence)
