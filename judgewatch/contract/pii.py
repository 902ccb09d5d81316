"""PII scrubbing: personal data replaced with typed placeholders, counted per kind (the kinds and limits: docs/pii.md).

Numbers are validated so order numbers, timestamps and versions survive; patterns are ASCII-bounded so Chinese text
around them stays. `pii_more` holds the SSN, IP, IBAN, address and name recognizers.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from datetime import date, datetime, timedelta
from enum import StrEnum
from typing import TypeVar

from pydantic import BaseModel, ConfigDict, Field

from judgewatch.contract import pii_more
from judgewatch.contract.messages import ChatMessage


class PiiKind(StrEnum):
    email = "email"
    phone = "phone"
    cn_id = "cn_id"
    card = "card"
    secret = "secret"
    ssn = "ssn"
    ip = "ip"
    iban = "iban"
    address = "address"
    name = "name"


PLACEHOLDERS = {kind: f"[{kind.value.upper()}]" for kind in PiiKind}  # [EMAIL], [CN_ID], ...

# Secrets first (keys contain digit runs and '@'), then e-mail, then IDs before cards and phones (an ID is
# 18 digits that could also pass Luhn or contain a mobile number); an IBAN before the numbers inside it; an
# address before the names (a street may be named after a person) and after the numbers.
ORDER = (
    PiiKind.secret, PiiKind.email, PiiKind.iban, PiiKind.cn_id, PiiKind.card, PiiKind.ssn, PiiKind.ip, PiiKind.phone,
    PiiKind.address, PiiKind.name,
)  # fmt: skip

_NOT_WORD_BEFORE = r"(?<![A-Za-z0-9_])"
_NOT_WORD_AFTER = r"(?![A-Za-z0-9_])"

_SECRET_TOKENS = re.compile(
    _NOT_WORD_BEFORE
    + r"(?:"
    + r"sk-(?:proj-|ant-[a-z0-9]+-|live_|test_)?[A-Za-z0-9_\-]{20,}"  # OpenAI / Anthropic / Stripe-like
    + r"|(?:AKIA|ASIA)[0-9A-Z]{16}"  # AWS access key id
    + r"|gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,}"  # GitHub
    + r"|xox[abposr]-[A-Za-z0-9\-]{10,}"  # Slack
    + r"|AIza[0-9A-Za-z_\-]{35}"  # Google API key
    + r"|eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"  # JWT
    + r")"
    + _NOT_WORD_AFTER
)
_PEM = re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?-----END [A-Z ]*PRIVATE KEY-----", re.DOTALL)
_BEARER = re.compile(r"(?i)((?<![A-Za-z0-9_])Bearer\s+)([A-Za-z0-9._~+/\-]{16,}=*)")
# key=value / key: "value" with a long hex/base64-ish value; Chinese key names and full-width colon too.
_KEY_VALUE = re.compile(
    r"(?i)((?:(?<![A-Za-z0-9_])(?:api[_\-]?key|apikey|secret(?:[_\-]?key)?|client[_\-]?secret|access[_\-]?token|auth[_\-]?token"
    r"|token|private[_\-]?key|x-api-key)(?![A-Za-z0-9_])|密钥|令牌)\s*[\"']?\s*[:=：]\s*[\"']?)([A-Za-z0-9._~+/\-]{16,}=*)"
)
_PASSWORD = re.compile(
    r"(?i)((?:(?<![A-Za-z0-9_])(?:password|passwd|pwd)(?![A-Za-z0-9_])|密码|口令)\s*[\"']?\s*[:=：]\s*[\"']?)"
    r"([^\s\"'，。；,;&\[(<][^\s\"'，。；,;&<>]{3,})"
)

_EMAIL = re.compile(
    r"(?<![A-Za-z0-9._%+\-])[A-Za-z0-9][A-Za-z0-9._%+\-]{0,63}@"
    r"(?:[A-Za-z0-9](?:[A-Za-z0-9\-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,24}(?![A-Za-z0-9\-])"
)

_CN_ID = re.compile(r"(?<![0-9A-Za-z])([1-9][0-9]{5}) ?((?:18|19|20)[0-9]{6}) ?([0-9]{3}[0-9Xx])(?![0-9A-Za-z])")
_CN_ID_WEIGHTS = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
_CN_ID_CHECK = "10X98765432"

# 13-19 digits, optionally grouped by single spaces or dashes.
_CARD = re.compile(r"(?<![0-9\-])[0-9](?:[ \-]?[0-9]){12,18}(?![0-9]|-[0-9])")

_PHONE = re.compile(
    r"(?<![0-9A-Za-z+])(?:"
    # mainland China mobile, optional +86 / 0086 / (+86), 3-4-4 spacing
    r"(?:(?:\(\+?86\)|\+86|0086)[ \-]?)?1[3-9][0-9](?:[ \-]?[0-9]{4}){2}"
    # international with a leading +: 8 to 15 digits with spaces, dots, dashes, parentheses
    r"|\+[1-9](?:[ .\-]?\(?[0-9]\)?){7,14}"
    # North American (415) 555-0132 / 1-800-222-1222: the separator before the last four digits is required
    r"|(?:\+?1[ .\-]?)?\(?[2-9][0-9]{2}\)?[ .\-]?[2-9][0-9]{2}[.\-][0-9]{4}"
    # China landline 010-12345678 / 0755-1234567
    r"|0[1-9][0-9]{1,2}-[2-9][0-9]{6,7}"
    r")(?![0-9])"
)


def luhn_valid(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = ord(ch) - 48
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def plausible_card_prefix(digits: str) -> bool:
    """Issuer prefix and length of a real card scheme (Visa, MC, Amex, UnionPay, JCB, Discover, Diners...)."""
    n, p2, p3, p4 = len(digits), int(digits[:2]), int(digits[:3]), int(digits[:4])
    if digits[0] == "4":
        return n in (13, 16, 19)
    if 51 <= p2 <= 55 or 2221 <= p4 <= 2720:
        return n == 16
    if p2 in (34, 37):
        return n == 15
    if p2 in (62, 81) or p4 == 9558:  # UnionPay, ICBC domestic
        return 16 <= n <= 19
    if 3528 <= p4 <= 3589 or p4 == 6011 or p2 == 65 or 644 <= p3 <= 649:  # JCB, Discover
        return 16 <= n <= 19
    if p2 in (36, 38, 39) or 300 <= p3 <= 305:  # Diners
        return 14 <= n <= 19
    return p2 in (50, 56, 57, 58, 60, 63, 67)  # Maestro and domestic debit schemes


def cn_id_valid(body17: str, check: str) -> bool:
    """ISO 7064 MOD 11-2 checksum plus a real birth date between 1900 and today."""
    total = sum(int(c) * w for c, w in zip(body17, _CN_ID_WEIGHTS, strict=True))
    if _CN_ID_CHECK[total % 11] != check.upper():
        return False
    try:
        born = date(int(body17[6:10]), int(body17[10:12]), int(body17[12:14]))
    except ValueError:
        return False
    return date(1900, 1, 1) <= born <= date.today()


# What a text must hold for a pattern to match at all (placeholders hold none of it, so a text that lacks it
# before a step lacks it after): the literal a token starts with, "=" or a colon for key=value, "@" for an
# e-mail, and for the numbers as many ASCII digits as the shortest form has (ID 17, card 13, phone 8: +1 and 7).
_TOKEN_STARTS = re.compile("sk-|AKIA|ASIA|gh[pousr]_|github_pat_|xox|AIza|eyJ")
_ASSIGN = re.compile("[:=\uff1a]")
_ANY_HINT = re.compile("[0-9@:=\uff1a\u53f7]|-----BEGIN |(?i:bearer)|" + _TOKEN_STARTS.pattern)
_DIGIT = re.compile("[0-9]")


def _sub_secret(text: str, counts: Counter[str]) -> str:
    """Each pattern runs only on text holding what it needs: the same result, without five scans of plain text."""
    placeholder = PLACEHOLDERS[PiiKind.secret]

    def whole(_match: re.Match[str]) -> str:
        return pii_more.counting(counts, PiiKind.secret.value, placeholder)

    def value(m: re.Match[str]) -> str:
        return m.group(1) + pii_more.counting(counts, PiiKind.secret.value, placeholder)

    if "-----BEGIN " in text:
        text = _PEM.sub(whole, text)
    if _TOKEN_STARTS.search(text):
        text = _SECRET_TOKENS.sub(whole, text)
    if "bearer" in text.lower():  # (?i) folds no other character onto b, e, a or r
        text = _BEARER.sub(value, text)
    if _ASSIGN.search(text):
        text = _KEY_VALUE.sub(value, text)
        text = _PASSWORD.sub(value, text)
    return text


_Substituter = Callable[[str, Counter[str]], str]


def _simple(
    kind: PiiKind, pattern: re.Pattern[str], valid: Callable[[re.Match[str]], bool] | None = None
) -> _Substituter:
    placeholder = PLACEHOLDERS[kind]

    def sub(text: str, counts: Counter[str]) -> str:
        def repl(m: re.Match[str]) -> str:
            if valid is not None and not valid(m):
                return m.group(0)
            return pii_more.counting(counts, kind.value, placeholder)

        return pattern.sub(repl, text)

    return sub


def _id_match_valid(m: re.Match[str]) -> bool:
    tail = m.group(3)
    return cn_id_valid(m.group(1) + m.group(2) + tail[:3], tail[3])


def _card_match_valid(m: re.Match[str]) -> bool:
    digits = m.group(0).replace(" ", "").replace("-", "")
    return 13 <= len(digits) <= 19 and plausible_card_prefix(digits) and luhn_valid(digits)


def _phone_match_valid(m: re.Match[str]) -> bool:
    text = m.group(0)
    if text.startswith("+") and not text.startswith(("+86", "(+86")):
        return 8 <= sum(c.isdigit() for c in text) <= 15
    return True


_SUBSTITUTERS: dict[PiiKind, _Substituter] = {
    PiiKind.secret: _sub_secret,
    PiiKind.email: _simple(PiiKind.email, _EMAIL),
    PiiKind.cn_id: _simple(PiiKind.cn_id, _CN_ID, _id_match_valid),
    PiiKind.card: _simple(PiiKind.card, _CARD, _card_match_valid),
    PiiKind.phone: _simple(PiiKind.phone, _PHONE, _phone_match_valid),
    PiiKind.ssn: pii_more.sub_ssn,
    PiiKind.ip: pii_more.sub_ip,
    PiiKind.iban: pii_more.sub_iban,
    PiiKind.address: pii_more.sub_address,
    PiiKind.name: pii_more.sub_name,
}
# Whether a text can hold the kind at all, from the text and its count of ASCII digits: a pattern's necessary
# literal, or as many digits as its shortest form has (SSN 9; an IPv4 address 4 and a dot, an IPv6 one a colon;
# an IBAN 2; an English street address 1).
_MAY_HOLD: dict[PiiKind, Callable[[str, int], bool]] = {
    PiiKind.secret: lambda _text, _digits: True,  # `_sub_secret` tests each of its patterns' literals itself
    PiiKind.email: lambda text, _digits: "@" in text,
    PiiKind.cn_id: lambda _text, digits: digits >= 17,
    PiiKind.card: lambda _text, digits: digits >= 13,
    PiiKind.phone: lambda _text, digits: digits >= 8,
    PiiKind.iban: lambda text, digits: digits >= 2 and pii_more.may_hold_iban(text),
    PiiKind.ssn: lambda text, digits: digits >= 9 and pii_more.may_hold_ssn(text),
    PiiKind.ip: lambda text, digits: (":" in text or (digits >= 4 and "." in text)) and pii_more.may_hold_ip(text),
    PiiKind.address: lambda text, digits: "号" in text or (digits >= 1 and pii_more.may_hold_address(text)),
    PiiKind.name: lambda text, _digits: pii_more.may_hold_name(text),
}
# A scrubbed text kept for the next time the same text comes (a conversation's system prompt, the question that
# is also the last user message, a trace's retrieved document): at most this many texts and characters.
_MEMO_TEXTS = 4096
_MEMO_CHARS = 4_000_000


class ScrubResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    text: str
    counts: dict[str, int] = Field(default_factory=dict)


class Scrubber:
    """Scrubs the configured kinds; `scrub` returns the text with placeholders and the count per kind."""

    def __init__(self, kinds: Iterable[PiiKind | str] = tuple(PiiKind)) -> None:
        wanted = {PiiKind(k) for k in kinds}
        self.kinds = tuple(k for k in ORDER if k in wanted)
        self._steps = tuple((_MAY_HOLD[k], _SUBSTITUTERS[k]) for k in self.kinds)
        self._names = PiiKind.name in self.kinds
        self._memo: dict[str, tuple[str, tuple[tuple[str, int], ...]]] = {}
        self._memo_chars = 0
        self._memo_until = 0.0  # the memo is emptied at midnight: a Chinese ID's birth date is checked against today

    def scrub_into(self, text: str, counts: Counter[str]) -> str:
        """Scrub `text`, adding what was replaced to `counts` (cheap to call for many fields, and for a text
        scrubbed a moment ago: its result is remembered)."""
        if not text:
            return text
        # One scan: most text holds nothing any pattern needs (names: a cue word, found without a regex).
        if not _ANY_HINT.search(text) and not (self._names and pii_more.may_hold_name(text)):
            return text
        known = self._memo.get(text)
        if known is not None and time.time() < self._memo_until:
            counts.update(dict(known[1]))
            return known[0]
        found: Counter[str] = Counter()
        clean = text
        digits = len(_DIGIT.findall(text))
        for may_hold, substitute in self._steps:
            if may_hold(clean, digits):
                clean = substitute(clean, found)
        self._remember(text, clean, found)
        counts.update(found)
        return clean

    def _remember(self, text: str, clean: str, found: Counter[str]) -> None:
        now = time.time()
        if len(self._memo) >= _MEMO_TEXTS or self._memo_chars + len(text) > _MEMO_CHARS or now >= self._memo_until:
            self._memo.clear()
            self._memo_chars = 0
            tomorrow = datetime.combine(date.today() + timedelta(days=1), datetime.min.time())
            self._memo_until = tomorrow.timestamp()
        if len(text) <= _MEMO_CHARS // 16:
            self._memo[text] = (clean, tuple(found.items()))
            self._memo_chars += len(text)

    def scrub(self, text: str) -> ScrubResult:
        counts: Counter[str] = Counter()
        return ScrubResult(text=self.scrub_into(text, counts), counts=dict(counts))


def scrub(text: str, kinds: Iterable[PiiKind | str] = tuple(PiiKind)) -> ScrubResult:
    """One-off scrub; build a `Scrubber` once when scrubbing many texts."""
    return Scrubber(kinds).scrub(text)


Content = TypeVar("Content", bound=BaseModel)
_TEXT_FIELDS = ("question", "answer", "reference_answer")
_LIST_FIELDS = ("reference_facts", "context")


def scrub_messages(messages: Sequence[ChatMessage], scrubber: Scrubber, counts: Counter[str]) -> list[ChatMessage]:
    """Every turn scrubbed: its content (a tool turn's content is the tool's result) and each tool call's
    arguments; a turn with nothing found is kept as it is. What was replaced is added to `counts`."""
    out = []
    for message in messages:
        update: dict[str, object] = {}
        content = scrubber.scrub_into(message.content, counts)
        if content != message.content:
            update["content"] = content
        calls = [call.model_copy(update={"arguments": scrubber.scrub_into(call.arguments, counts)})
                 for call in message.tool_calls]  # fmt: skip
        if any(new.arguments != old.arguments for new, old in zip(calls, message.tool_calls, strict=True)):
            update["tool_calls"] = calls
        out.append(message.model_copy(update=update) if update else message)
    return out


def scrub_content(record: Content, scrubber: Scrubber, counts: Counter[str] | None = None) -> Content:
    """`record` (a JudgeItem, review screen or any record with judged content) with its question, answer,
    references and every conversation turn scrubbed; the same object when nothing was found. What was replaced
    is added to `counts`."""
    found: Counter[str] = Counter()
    update: dict[str, object] = {}
    turns = getattr(record, "messages", None)
    if turns:
        clean_turns = scrub_messages(turns, scrubber, found)
        if any(new is not old for new, old in zip(clean_turns, turns, strict=True)):
            update["messages"] = clean_turns
    for name in _TEXT_FIELDS:
        value = getattr(record, name, None)
        if isinstance(value, str) and value:
            clean = scrubber.scrub_into(value, found)
            if clean != value:
                update[name] = clean
    for name in _LIST_FIELDS:
        values = getattr(record, name, None)
        if isinstance(values, list) and values:
            cleaned = [scrubber.scrub_into(v, found) if isinstance(v, str) else v for v in values]
            if cleaned != values:
                update[name] = cleaned
    if counts is not None:
        counts.update(found)
    return record.model_copy(update=update) if update else record
