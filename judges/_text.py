"""Content tokens of English, Chinese and mixed text for the reference judge: no model, no jieba.

English: lowercase words minus stopwords, crude plurals and possessives, numbers weighted (a wrong number is the
typical hallucination), capitalized words weighted as names. Chinese: character unigrams and bigrams. Cached.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from itertools import pairwise
from types import MappingProxyType

from judges._numbers import UNIT_WORDS, spelled_dates

# Token weights: a number or a name the references do not contain is what a hallucination usually looks like.
NUMBER_WEIGHT = 3.0
NAME_WEIGHT = 2.0
WORD_WEIGHT = 1.0
CJK_BIGRAM_WEIGHT = 1.0
CJK_UNIGRAM_WEIGHT = 0.5

_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_TOKEN_RE = re.compile(
    rf"(?P<cjk>[{_CJK}]+)"
    r"|(?P<date>\d{4}-\d{2}(?:-\d{2})?)"  # written by judges._numbers.spelled_dates
    r"|(?P<num>\d+(?:[.,]\d+)*)(?:(?:st|nd|rd|th|s)(?![A-Za-z]))?"
    rf"|(?P<word>(?:(?![{_CJK}])[^\W\d_])+(?:['’](?:(?![{_CJK}])[^\W\d_])+)*)"
)
_THOUSANDS_RE = re.compile(r"^\d{1,3}(?:,\d{3})+(?:\.\d+)?$")

_STOPWORDS_TEXT = """
    a an the and or but if then else than so as of at by for from in into on onto to with within without about
    over under between through during before after above below up down out off again further once here there
    when where why how what which who whom whose this that these those is are was were be been being am do does
    did doing have has had having i me my mine we us our ours you your yours he him his she her hers it its
    they them their theirs myself yourself himself herself itself ourselves themselves can could would should
    will shall may might must also just only very too any all both each few more most other some such own same
    s t d ll m re ve o let lets get got yes no
"""
ENGLISH_STOPWORDS = frozenset(_STOPWORDS_TEXT.split())
# "yes"/"no" carry polarity, not content: `negated` compares it with the reference answer. "not"/"never" stay
# content words, so a negation the references lack counts as unsupported.

_NUMBER_NAMES = ("two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve")
_NUMBER_WORDS = {word: str(n) for n, word in enumerate(_NUMBER_NAMES, start=2)}

# Function characters that carry no content alone; Chinese runs are split at them before making bigrams.
CHINESE_STOP_CHARS = frozenset(
    "的了是在和与及也都而之其这那个我你他她它们吗呢吧啊呀就被把对从等为以于或并且即很还又着过得地所"
)


@dataclass(frozen=True, slots=True)
class Tokens:
    """The content tokens of one text: token -> weight (unique tokens), the numbers, and the names seen
    (normalized token -> the word as written, for reasons)."""

    weights: Mapping[str, float]
    numbers: frozenset[str]
    names: Mapping[str, str]

    def __bool__(self) -> bool:
        return bool(self.weights)


EMPTY = Tokens(MappingProxyType({}), frozenset(), MappingProxyType({}))


def normalize_word(word: str) -> str:
    """Lowercase, drop a possessive, strip a plural crudely ("cities" -> "city", "boxes" -> "box")."""
    w = word.lower().replace("’", "'").removesuffix("'s").rstrip("'")
    if len(w) > 4 and w.endswith("ies"):
        return w[:-3] + "y"
    if len(w) > 4 and w.endswith(("ches", "shes", "sses", "xes", "zes")):
        return w[:-2]
    if len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "us", "is", "ous")):
        return w[:-1]
    return w


def _numbers(raw: str) -> list[str]:
    """ "1,000" -> ["1000"]; "1,2,3" (a list) -> ["1", "2", "3"]; "3.5" stays one number."""
    if _THOUSANDS_RE.match(raw):
        return [raw.replace(",", "")]
    return [part for part in raw.split(",") if part]


@lru_cache(maxsize=16384)
def latin_words(text: str) -> tuple[str, ...]:
    """The text's Latin-script content words and numbers in order, normalized as `tokenize` does (no CJK)."""
    words: list[str] = []
    for match in _TOKEN_RE.finditer(spelled_dates(text)):
        if date := match.group("date"):
            words.append(date)
        elif num := match.group("num"):
            words.extend(_numbers(num))
        elif word := match.group("word"):
            token = normalize_word(word)
            token = UNIT_WORDS.get(token, _NUMBER_WORDS.get(token, token))
            if token and token not in ENGLISH_STOPWORDS:
                words.append(token)
    return tuple(words)


def _add(weights: dict[str, float], token: str, weight: float) -> None:
    weights[token] = max(weights.get(token, 0.0), weight)


def _add_cjk(weights: dict[str, float], run: str) -> None:
    piece: list[str] = []
    for ch in [*run, ""]:
        if ch and ch not in CHINESE_STOP_CHARS:
            piece.append(ch)
            continue
        for c in piece:
            _add(weights, c, CJK_UNIGRAM_WEIGHT)
        for a, b in pairwise(piece):
            _add(weights, a + b, CJK_BIGRAM_WEIGHT)
        piece = []


@lru_cache(maxsize=16384)
def tokenize(text: str) -> Tokens:
    """Content tokens of `text` (cached: references are shared by many answers)."""
    weights: dict[str, float] = {}
    numbers: set[str] = set()
    names: dict[str, str] = {}
    for match in _TOKEN_RE.finditer(spelled_dates(text)):
        if cjk := match.group("cjk"):
            _add_cjk(weights, cjk)
        elif date := match.group("date"):
            numbers.add(date)
            _add(weights, date, NUMBER_WEIGHT)
        elif num := match.group("num"):
            for token in _numbers(num):
                numbers.add(token)
                _add(weights, token, NUMBER_WEIGHT)
        elif word := match.group("word"):
            token = normalize_word(word)
            token = UNIT_WORDS.get(token, token)
            if token in _NUMBER_WORDS:
                token = _NUMBER_WORDS[token]
                numbers.add(token)
                _add(weights, token, NUMBER_WEIGHT)
            elif token and token not in ENGLISH_STOPWORDS:
                # Crude named-entity signal: a capitalized word that is not a stopword.
                if word[0].isupper() and len(token) > 1:
                    names.setdefault(token, re.sub(r"['’]s?$", "", word))
                    _add(weights, token, NAME_WEIGHT)
                else:
                    _add(weights, token, WORD_WEIGHT)
    return Tokens(MappingProxyType(weights), frozenset(numbers), MappingProxyType(names))


def merged(parts: Iterable[Tokens]) -> Tokens:
    """Several texts' content tokens as one: each token at its highest weight, every number and name."""
    weights: dict[str, float] = {}
    numbers: set[str] = set()
    names: dict[str, str] = {}
    for tokens in parts:
        for token, weight in tokens.weights.items():
            _add(weights, token, weight)
        numbers |= tokens.numbers
        for token, word in tokens.names.items():
            names.setdefault(token, word)
    return Tokens(MappingProxyType(weights), frozenset(numbers), MappingProxyType(names))


@lru_cache(maxsize=4096)
def _union_cached(texts: tuple[str, ...]) -> Tokens:
    return merged(tokenize(text) for text in texts)


def share(tokens: Tokens, within: Tokens, *, exclude: Tokens = EMPTY) -> float | None:
    """Weighted share of `tokens` (minus `exclude`) present in `within`; None when nothing is left to share."""
    total = found = 0.0
    for token, weight in tokens.weights.items():
        if token in exclude.weights:
            continue
        total += weight
        if token in within.weights:
            found += weight
    return found / total if total else None


def union(texts: Iterable[str | None]) -> Tokens:
    """Content tokens of several texts together (cached per tuple of texts)."""
    kept = tuple(t for t in texts if t)
    return _union_cached(kept) if kept else EMPTY


_NEGATION_RE = re.compile(
    r"不(?!仅|但|过|少|同|断|久)|没|无(?!论|数)|非(?!常)|否(?!则)|未(?!来)|别(?!人|的)"
    r"|\b(?:no|not(?! only)|never|none|nobody|nothing|neither|nor|cannot)\b|n['’]t\b",
    re.IGNORECASE,
)


@lru_cache(maxsize=16384)
def negated(text: str) -> bool:
    """Whether the text says no / not (English or Chinese); a flip against the reference answer is a contradiction."""
    return _NEGATION_RE.search(text) is not None


_BARE_YES_NO_RE = re.compile(r"^[\W_]*(?:yes|no|是的?|不是|对|不对|没有)[\W_]*$", re.IGNORECASE)


def is_bare_yes_no(text: str) -> bool:
    """A whole answer that is just yes or no ("No.", "是的。"): it has no content words but does answer."""
    return _BARE_YES_NO_RE.match(text) is not None
