"""What the reference puts in the question's slot, against what the answer puts there: entity swaps and wrong numbers.

An answer can be supported word for word and still be wrong: "directed by who?" answered "Neil Gaiman" when the
facts say "directed by Robert Zemeckis and written by Neil Gaiman". The question's relation words (its content
words next to the wh-word, "directed"; then all its words the answer does not repeat) pick the reference
sentence the question is about, and in that sentence the name nearest the relation is the slot:
- entity: the answer's new words (those the question does not contain) are in that sentence, but another name
  sits nearer the relation (an answer absent from the sentence is not judged: in a two-hop question the right
  answer is often the other hop's name);
- choice: "X or Y?" answered with the option whose reference sentences hold less of the question's relation
  ("which one is in Tennessee?");
- restated: the answer states the question's relation itself with a name next to it ("The ceremony was chaired
  by François Cluzet") and the slot sentence states it with another (2.2.0);
- quantity: a number, date or measure of the answer that no reference states (normalized by judges/_numbers.py:
  "1,200" = "1200" = "一千二百") where a reference sentence (the slot sentence first, then by the question's
  words) states one of the same kind ("answer says 1850, reference says 1852").
Latin-script text only: Chinese questions have no word boundaries to find the slot with.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from judges._evidence import sentences
from judges._numbers import Quantity, quantities
from judges._text import ENGLISH_STOPWORDS, normalize_word, share, tokenize

WH_WORDS = frozenset({"who", "whom", "whose", "what", "which", "where", "when", "how"})
NOT_RELATION = frozenset(
    {"one", "name", "called", "known", "many", "much", "year", "date"}
)  # say what is asked, not the relation
RELATION_WORDS = 2  # content words on one side of the wh-word that make the relation
MIN_RELATION_SHARE = 0.3  # a slot sentence without every relation word must hold this share of the question's rest
STEM = 6
MARGIN = 2  # a name in the sentence conflicts when another sits at least this many content words nearer the relation
_ADJUNCT_RE = re.compile(r"\W*(?:where|when|how)\b", re.IGNORECASE)
_AGENT_RE = re.compile(r"\b(?:by|after|to|from|with|for)\s+(?:who|whom)\W*$", re.IGNORECASE)
_PARENTHESES_RE = re.compile(r"\([^()]*\)")  # "Kelli Ward (née Kaznoski; born 1969) is": asides fill no slot
_WORD_RE = re.compile(r"[^\W_]+(?:['’][^\W_]+)*|[?;:]")


@dataclass(frozen=True)
class Word:
    token: str  # normalized as judges._text does; the wh-word itself, or "" for a clause end
    name: bool = False  # written capitalized and not modifying a noun ("American country artist"): fills a slot
    mark: str = ""  # "wh" for a wh-word, "end" for a clause end ("?", ";", ":"), which a slot does not cross
    text: str = ""  # as written, for reasons
    joined: bool = False  # follows the previous word with only a space, hyphen or initial's dot between


@dataclass(frozen=True)
class Slot:
    """The slot check of one answer; a consistency is 1.0 when nothing contradicts it, 0.0 when the slot does."""

    entity_consistency: float = 1.0
    quantity_consistency: float = 1.0
    answer_says: str = ""  # the answer's value for the slot, as written (for the reason)
    reference_says: str = ""
    relation: str = ""  # the relation word the slot is next to


NO_SLOT = Slot()


@lru_cache(maxsize=16384)
def words(text: str) -> tuple[Word, ...]:
    """Content words in order, with the wh-words and clause ends as marks."""
    out: list[Word] = []
    clean = _PARENTHESES_RE.sub(" ", text)
    end = -1
    for match in _WORD_RE.finditer(clean):
        raw = match.group(0)
        token = normalize_word(raw)
        if raw in "?;:" or token in WH_WORDS:
            out.append(Word("" if raw in "?;:" else token, mark="end" if raw in "?;:" else "wh"))
            end = -1
        elif token and token not in ENGLISH_STOPWORDS:
            joined = end >= 0 and clean[end : match.start()] in (" ", "-", ". ")
            if raw[0].islower() and out and out[-1].name and joined:
                out[-1] = Word(out[-1].token, text=out[-1].text, joined=out[-1].joined)  # it modifies the noun
            out.append(Word(token, raw[0].isupper(), text=raw, joined=joined))
            end = match.end()
        else:
            end = -1  # "Zemeckis and written": a stopword between, no modifier
    if len(out) > 1 and out[0].name and not out[1].name:  # "Founded in 1379 by": capitalized as the first word
        out[0] = Word(out[0].token, text=out[0].text)
        out[1] = Word(out[1].token, out[1].name, text=out[1].text)
    return tuple(out)


def _stem(token: str) -> str:
    """Crude stem for matching relation words: "director" ~ "directed", "performer" ~ "performed"."""
    return token[:STEM] if len(token) > STEM else token


def _run(seq: Sequence[Word]) -> list[str]:
    """The relation words of a run of words, up to the next mark."""
    out: list[str] = []
    for w in seq:
        if w.mark or len(out) == RELATION_WORDS:
            break
        if w.token not in NOT_RELATION:
            out.append(w.token)
    return out


@lru_cache(maxsize=4096)
def relation(question: str) -> tuple[str, ...]:
    """The question's content words next to the wh-word that asks: one at its end ("directed by who?": the words
    before it), else one that opens it ("Who chaired the ceremony"), else the last "which"/"what" followed by
    words ("in the killing of which Irish-American hitman?"); a mid-sentence "who" relates, it does not ask."""
    seq = words(question)
    marks = [i for i, w in enumerate(seq) if w.mark == "wh"]
    if not marks:
        return ()
    last = marks[-1]
    if all(w.mark for w in seq[last + 1 :]) and any(not w.mark for w in seq[:last]):  # "... named after who?"
        return tuple(_run(seq[:last][::-1]))
    if marks[0] <= 1:  # "Who ...", "In what year ..." (a preposition is a stopword, so "In" is not a word)
        return tuple(_run(seq[marks[0] + 1 :]))
    asking = [i for i in marks if seq[i].token in ("which", "what")]
    return tuple(_run(seq[asking[-1] + 1 :]) or _run(seq[: asking[-1]][::-1])) if asking else ()


def _spans(seq: Sequence[Word], skip: frozenset[str]) -> list[tuple[int, int]]:
    """Names written together ("Robert Zemeckis", not "Zemeckis and Neil"), without those holding a word of the
    question ("Subrahmanyan Chandrasekhar" is the question's astrophysicist): what could fill a slot."""
    spans: list[tuple[int, int]] = []
    start = None
    for i, w in enumerate([*seq, Word("", mark="end")]):
        if start is not None and not (w.name and w.joined):
            if not any(seq[j].token in skip for j in range(start, i)):
                spans.append((start, i))
            start = None
        if w.name and start is None:
            start = i
    return spans


def _distance(span: tuple[int, int], anchors: Sequence[int]) -> int:
    return min(min(abs(a - j) for j in range(*span)) for a in anchors)


def _slot_sentence(question: str, answer: str, references: Sequence[str]) -> str:
    """The reference sentence with the most of the question's relation words, then of its words the answer lacks."""
    rel = set(relation(question))
    q_tokens = tokenize(question)
    a_tokens = tokenize(answer).weights
    rest = {t: w for t, w in q_tokens.weights.items() if t not in a_tokens and t not in NOT_RELATION}
    best, best_key = "", (0.0, 0.0)
    for text in references:
        for sentence in sentences(text):
            present = tokenize(sentence).weights
            if not rel & set(present):
                continue
            total = sum(rest.values())
            found = sum(w for t, w in rest.items() if t in present)
            key = (len(rel & set(present)) / len(rel), found / total if total else 0.0)
            if key > best_key:
                best, best_key = sentence, key
    return best if best_key[0] == 1.0 or best_key[1] >= MIN_RELATION_SHARE else ""


def _entity(question: str, answer: str, sentence: str) -> tuple[float, str, str]:
    """(consistency, answer's entity, slot's entity) of the answer's new words against the slot sentence."""
    q = tokenize(question)
    q_tokens = frozenset(q.weights)
    new = [w for w in words(answer) if not w.mark and w.token not in q_tokens]
    if not new or not any(w.name for w in new):  # a number is the quantity check's; a common noun names nothing
        return 1.0, "", ""
    if _ADJUNCT_RE.match(question):  # "Where ...", "When ...": a place or a time, not the name next to the relation
        return 1.0, "", ""
    seq = words(sentence)
    rel = set(relation(question))
    rel_stems = {_stem(t) for t in rel}
    anchors = [i for i, w in enumerate(seq) if not w.mark and _stem(w.token) in rel_stems]
    spans = _spans(seq, q_tokens)
    if anchors and _AGENT_RE.search(question):  # "published by who?": the slot follows the relation
        spans = [span for span in spans if span[0] > min(anchors)]
    if not anchors or not spans:
        return 1.0, "", ""
    new_tokens = {w.token for w in new}
    slot = min(spans, key=lambda span: _distance(span, anchors))
    slot_tokens = {w.token for w in seq[slot[0] : slot[1]]}
    said = " ".join(w.text for w in new if w.name)
    placed = [i for i, w in enumerate(seq) if w.token in new_tokens]
    if slot_tokens & new_tokens:
        return 1.0, said, ""
    slot_words = " ".join(w.text for w in seq[slot[0] : slot[1]])
    if placed:
        if placed[0] == 0:  # the sentence is about the answer: "Kamal Shalorus is an Iranian ... in the Lightweight"
            return 1.0, said, ""
        between = seq[slot[1] : placed[0]] if slot[1] <= placed[0] else seq[placed[-1] + 1 : slot[0]]
        if all(w.name for w in between):  # "Paul Lynde, Ronny Graham and Carol Lawrence": one list, one role
            return 1.0, said, ""
        if _distance(slot, anchors) + MARGIN <= min(abs(a - p) for a in anchors for p in placed):
            return 0.0, said, slot_words
        return 1.0, said, ""
    # An answer absent from the slot sentence says nothing here: in a two-hop question the right answer is often
    # the other hop's name ("Who represents the district that Gawthorpe is in?": the district's sentence names
    # Burnley, the answer is its MP). Measured: this case flagged 12 right held-out answers for 2 wrong ones.
    return 1.0, said, ""


def _nearest_name(seq: Sequence[Word], rel_stems: set[str], skip: frozenset[str]) -> tuple[set[str], int] | None:
    """The name nearest the relation in `seq` (its tokens, its distance in content words), None without either."""
    anchors = [i for i, w in enumerate(seq) if not w.mark and _stem(w.token) in rel_stems]
    spans = _spans(seq, skip)
    if not anchors or not spans:
        return None
    span = min(spans, key=lambda span: _distance(span, anchors))
    return {w.token for w in seq[span[0] : span[1]]}, _distance(span, anchors)


def restated(question: str, answer: str, sentence: str) -> tuple[str, str] | None:
    """(the answer's name, the slot sentence's) when the answer states the question's relation itself with a name
    next to it, and the slot sentence states it with another ("The ceremony was chaired by François Cluzet"
    against "...was chaired by Isabelle Mergault"): the answer has said which name fills the slot, wherever else
    the references mention it. Both names must sit at most MARGIN content words from the relation word."""
    rel_stems = {_stem(t) for t in relation(question)}
    if not rel_stems or not sentence:
        return None
    skip = frozenset(tokenize(question).weights)
    own_seq, their_seq = words(answer), words(sentence)
    own, theirs = _nearest_name(own_seq, rel_stems, skip), _nearest_name(their_seq, rel_stems, skip)
    if own is None or theirs is None or own[1] > MARGIN or theirs[1] > MARGIN or own[0] & theirs[0]:
        return None

    def written(seq: Sequence[Word], tokens: set[str]) -> str:
        return " ".join(dict.fromkeys(w.text for w in seq if w.name and w.token in tokens))

    return written(own_seq, own[0]), written(their_seq, theirs[0])


_NAME = r"[A-Z][\w'’.&-]*(?:\s+(?:of|the|de|del|la|and|&)?\s*[A-Z][\w'’.&-]*)*"
_OPTIONS_RE = re.compile(rf"(?P<a>{_NAME})\s*,?\s+(?P<joint>or|and)\s+(?P<b>{_NAME})")
_CHOICE_RE = re.compile(r"\b(?:or|which one|who|which)\b", re.IGNORECASE)
# "born first", "more members": both options' sentences state the attribute; which wins is computed, not stated
_COMPARATIVE_RE = re.compile(
    r"\b(?:first|second|third|last|more|less|fewer|older|younger|earlier|later|larger|smaller|longer|shorter|higher|lower"
    r"|bigger|taller|newer|greater|closer|further|farther)\b",
    re.IGNORECASE,
)
CHOICE_MARGIN = 0.25  # the other option's sentences hold this much more of the question's relation: a wrong pick


def _options(question: str) -> tuple[frozenset[str], frozenset[str]] | None:
    """The two named options of a choice question ("Boston College or Stanford University"; "X and Y ... which
    one"), as their distinct content tokens."""
    match = _OPTIONS_RE.search(question)
    if match is None or (match.group("joint") == "and" and not re.search(r"\bwhich one\b", question, re.I)):
        return None
    outside = frozenset(tokenize(question[: match.start()] + " " + question[match.end() :]).weights)
    a, b = (frozenset(tokenize(match.group(side)).weights) - outside for side in ("a", "b"))
    a, b = a - b, b - a  # "Stanford University" in "which research university ...": "stanford" names it
    return (a, b) if a and b else None


def _choice(question: str, answer: str, references: Sequence[str]) -> tuple[str, str] | None:
    """(the answer's option, the other) when the answer picks the option whose reference sentences hold less of
    the question's relation ("which one is in Tennessee?": only the other airport's sentence says Tennessee)."""
    if not _CHOICE_RE.search(question) or _COMPARATIVE_RE.search(question) or (options := _options(question)) is None:
        return None
    a_tokens = set(tokenize(answer).weights)
    picked = [o for o in options if o & a_tokens]
    if len(picked) != 1:
        return None
    other = options[1] if picked[0] is options[0] else options[0]
    rest = {t: w for t, w in tokenize(question).weights.items() if t not in options[0] | options[1]}
    total = sum(rest.values())
    if not total:
        return None

    def held(option: frozenset[str]) -> float:
        found = 0.0
        for text in references:
            for sentence in sentences(text):
                present = tokenize(sentence).weights
                if option & set(present):
                    found = max(found, sum(w for t, w in rest.items() if t in present) / total)
        return found

    if held(picked[0]) + CHOICE_MARGIN <= held(other):
        names = {o: " ".join(w.text for w in words(question) if w.token in o) for o in options}
        return names[picked[0]], names[other]
    return None


def _quantity(
    question: str, answer: str, slot_sentence: str, references: Sequence[str]
) -> tuple[Quantity, Quantity] | None:
    """(the answer's, the reference's) number/date/measure for the slot when they disagree, else None."""
    asked = quantities(question)
    stated = [q for text in references for q in quantities(text)]
    claimed = [q for q in quantities(answer) if not any(q.agrees(a) for a in asked)]
    unsupported = [q for q in claimed if not any(q.agrees(r) for r in stated)]
    if not unsupported:
        return None
    # The slot sentence first, then the others by how much of the question they hold: a reference that states
    # a value of the same kind where the answer states one no reference does contradicts it.
    q_tokens = tokenize(question)
    ranked = sorted(
        ((share(q_tokens, tokenize(s)) or 0.0, s) for text in references for s in sentences(text)),
        key=lambda pair: -pair[0],
    )
    for sentence in dict.fromkeys([slot_sentence] * bool(slot_sentence) + [s for _, s in ranked]):
        candidates = [q for q in quantities(sentence) if not any(q.agrees(a) for a in asked)]
        for said in unsupported:
            same_kind = [q for q in candidates if said.comparable(q)]
            if same_kind:
                return said, same_kind[0]
    return None


def slot(question: str, answer: str, references: Sequence[str]) -> Slot:
    """The entity and quantity checks of `answer` (its claim text) against the question's slot in `references`."""
    sentence = _slot_sentence(question, answer, references)
    rel = " ".join(relation(question))
    numbers = _quantity(question, answer, sentence, references)
    entity, said, slot_words = _entity(question, answer, sentence) if sentence else (1.0, "", "")
    if entity == 1.0 and (names := restated(question, answer, sentence)) is not None:
        entity, (said, slot_words) = 0.0, names
    if numbers is not None:
        return Slot(entity, 0.0, numbers[0].text, numbers[1].text, rel)
    if entity < 1.0:
        return Slot(entity, 1.0, said, slot_words, rel)
    if (choice := _choice(question, answer, references)) is not None:
        return Slot(0.0, 1.0, choice[0], choice[1], "")
    return NO_SLOT
