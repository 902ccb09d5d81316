"""Numbers, dates, percentages and measures in English and Chinese text, normalized so they can be compared.

"1,200" = "1200" = "一千二百" = "1.2 thousand"; "3 May 2019" = "May 3, 2019" = "2019-05-03" = "2019年5月3日";
"5 km" = "5 kilometres" = "3.107 miles" (1% tolerance across units); "17%" = "17 percent" = "百分之十七".
A year is a date with no month or day, and agrees with any date of that year. What a quantity counts is not
read ("1,600 scientists" and "1,600 engineers" are equal): the caller decides which quantities to compare.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import lru_cache

MONTHS = {
    name: number
    for number, names in enumerate((
        ("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"), ("may",), ("june", "jun"),
        ("july", "jul"), ("august", "aug"), ("september", "sep", "sept"), ("october", "oct"), ("november", "nov"),
        ("december", "dec"),
    ), start=1)
    for name in names
}  # fmt: skip
_ONES = "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
_ONES += "seventeen eighteen nineteen"
WORD_VALUES = {word: float(i) for i, word in enumerate(_ONES.split())}
WORD_VALUES |= {
    w: float(10 * i)
    for i, w in enumerate(("twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"), 2)
}
SCALES = {"hundred": 1e2, "thousand": 1e3, "million": 1e6, "billion": 1e9, "trillion": 1e12}

# unit as written (lowercase) -> (dimension, factor to the dimension's base unit)
_UNIT_TABLE: dict[tuple[str, float], tuple[str, ...]] = {
    ("length", 1000.0): ("km", "kms", "kilometre", "kilometres", "kilometer", "kilometers", "公里", "千米"),
    ("length", 1.0): ("m", "metre", "metres", "meter", "meters", "米"),
    ("length", 0.01): ("cm", "centimetre", "centimetres", "centimeter", "centimeters", "厘米"),
    ("length", 0.001): ("mm", "millimetre", "millimetres", "millimeter", "millimeters", "毫米"),
    ("length", 1609.344): ("mi", "mile", "miles", "英里"),
    ("length", 0.3048): ("ft", "foot", "feet"),
    ("length", 0.9144): ("yd", "yard", "yards"),
    ("length", 0.0254): ("inch", "inches"),
    ("mass", 1.0): ("kg", "kilogram", "kilograms", "公斤", "千克"),
    ("mass", 0.001): ("g", "gram", "grams", "克"),
    ("mass", 1000.0): ("t", "tonne", "tonnes", "吨"),
    ("mass", 0.45359237): ("lb", "lbs", "pound", "pounds"),
    ("area", 1e6): ("km2", "km²", "平方公里"),
    ("area", 4046.8564224): ("acre", "acres"),
    ("area", 1e4): ("ha", "hectare", "hectares", "公顷"),
    ("area", 2589988.110336): ("sq mi", "square mile", "square miles"),
    ("area", 0.09290304): ("sq ft", "sqft", "square foot", "square feet"),
    ("time", 1.0): ("s", "sec", "second", "seconds", "秒"),
    ("time", 60.0): ("min", "minute", "minutes", "分钟"),
    ("time", 3600.0): ("h", "hour", "hours", "小时"),
    ("time", 86400.0): ("day", "days", "天"),
    ("time", 604800.0): ("week", "weeks", "周"),
    ("time", 31557600.0): ("year", "years", "yr", "yrs"),
    ("age", 1.0): ("year-old", "years old", "岁"),
    ("speed", 1.0): ("km/h", "kph"),
    ("speed", 1.609344): ("mph",),
    ("percent", 1.0): ("%", "percent", "per cent"),
}
UNITS = {written: key for key, names in _UNIT_TABLE.items() for written in names}
_UNIT_RE = "|".join(re.escape(u) for u in sorted(UNITS, key=len, reverse=True))
RELATIVE_TOLERANCE = 0.01  # two measures in different units agree when they differ by less than this share

_CN_DIGITS = dict(zip("零〇一二两三四五六七八九", (0, 0, 1, 2, 2, 3, 4, 5, 6, 7, 8, 9), strict=True))
_CN_UNITS = {"十": 10, "百": 100, "千": 1000}
_CN_BIG = {"万": 1e4, "亿": 1e8}
_CN_CHARS = "".join(_CN_DIGITS) + "".join(_CN_UNITS) + "".join(_CN_BIG)
_CN_DIGITS_RE = "".join(_CN_DIGITS)

_NUM = r"\d+(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"
_WORD_NUM = r"(?:" + "|".join(sorted((*WORD_VALUES, *SCALES), key=len, reverse=True)) + r")"
_MONTH = r"(?:" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
_QUANTITY_RE = re.compile(
    rf"(?P<iso>\b\d{{4}})-(?P<iso_m>\d{{1,2}})-(?P<iso_d>\d{{1,2}})\b"
    rf"|(?P<cn_y>\d{{4}})年(?:(?P<cn_m>\d{{1,2}})月(?:(?P<cn_d>\d{{1,2}})[日号])?)?"
    rf"|\b(?P<dmy_d>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?(?P<dmy_m>{_MONTH}),?\s+(?P<dmy_y>\d{{4}})\b"
    rf"|\b(?P<mdy_m>{_MONTH})\s+(?:(?P<mdy_d>\d{{1,2}})(?:st|nd|rd|th)?\b,?\s*)?(?P<mdy_y>\d{{4}})\b"
    r"|\b(?P<decade>1\d{2}0|20\d0)['’]?s\b"
    rf"|百分之(?P<cn_pct>[{_CN_CHARS}点]+)"
    rf"|(?P<cn>[{_CN_DIGITS_RE}十][{_CN_CHARS}]*(?:点[{_CN_DIGITS}]+)?)(?P<cn_unit>{_UNIT_RE})?"
    rf"|(?P<cur>[$€£])?(?<![A-Za-z0-9.])(?P<num>{_NUM})(?P<ord>st|nd|rd|th)?"
    rf"(?:\s*(?P<scale>thousand|million|billion|trillion|万|亿))?(?:[\s-]?\s*(?P<unit>{_UNIT_RE})(?![A-Za-z]))?"
    rf"|\b(?P<words>{_WORD_NUM}(?:[\s-]+(?:and\s+)?{_WORD_NUM})*)\b(?:[\s-]?\s*(?P<w_unit>{_UNIT_RE})(?![A-Za-z]))?",
    re.IGNORECASE,
)


@dataclass(frozen=True, order=True)
class Quantity:
    """One normalized quantity: a date (year, month, day; 0 = not said) or a value in its dimension's base unit. kind:
    "date", "number", "ordinal", "money", or a dimension of UNITS ("length", "percent", "age", ...)."""

    kind: str
    value: float
    month: int = 0
    day: int = 0
    text: str = ""  # as written, for reasons

    def agrees(self, other: Quantity) -> bool:
        """The same quantity, as far as both say (a year agrees with a date of that year)."""
        if self.kind == "date" or other.kind == "date":
            if self.kind != other.kind:  # "1850" read as a number agrees with the year 1850
                return self.value == other.value and not (self.month or other.month)
            return (
                self.value == other.value
                and (not self.month or not other.month or self.month == other.month)
                and (not self.day or not other.day or self.day == other.day)
            )
        if self.kind != other.kind and {self.kind, other.kind} - {"number", "ordinal"}:
            return False
        if self.value == other.value:
            return True
        scale = max(abs(self.value), abs(other.value))
        return self.kind not in ("number", "ordinal") and abs(self.value - other.value) <= RELATIVE_TOLERANCE * scale

    def comparable(self, other: Quantity) -> bool:
        """Whether the two measure the same kind of thing, so that disagreeing is a contradiction."""
        return self.kind == other.kind


def chinese_number(text: str) -> float | None:
    """一千二百 -> 1200, 两万三千 -> 23000, 十五 -> 15, 三点五 -> 3.5, 二〇一九 -> 2019; None if not a numeral."""
    whole, _, fraction = text.partition("点")
    if fraction and not all(ch in _CN_DIGITS for ch in fraction):
        return None
    if whole and all(ch in _CN_DIGITS for ch in whole) and len(whole) > 1:  # digit by digit: 二〇一九
        value = float("".join(str(_CN_DIGITS[ch]) for ch in whole))
    else:
        value, section, digit = 0.0, 0.0, None
        for ch in whole:
            if ch in _CN_DIGITS:
                digit = _CN_DIGITS[ch]
            elif ch in _CN_UNITS:
                section += (1 if digit is None else digit) * _CN_UNITS[ch]
                digit = None
            elif ch in _CN_BIG:
                value += (section + (digit or 0)) * _CN_BIG[ch]
                section, digit = 0.0, None
            else:
                return None
        value += section + (digit or 0)
    if fraction:
        value += float("0." + "".join(str(_CN_DIGITS[ch]) for ch in fraction))
    return value


def word_number(text: str) -> float | None:
    """ "twenty-five" -> 25, "two hundred thousand" -> 200000, "1.5 million" is read elsewhere."""
    total = current = 0.0
    seen = False
    for word in re.split(r"[\s-]+", text.lower()):
        if word == "and":
            continue
        if word in WORD_VALUES:
            current += WORD_VALUES[word]
        elif word == "hundred":
            current = (current or 1.0) * 100
        elif word in SCALES:
            total += (current or 1.0) * SCALES[word]
            current = 0.0
        else:
            return None
        seen = True
    return total + current if seen else None


def _measure(value: float, unit: str | None, scale: str | None, text: str, ordinal: bool = False) -> Quantity:
    if scale:
        value *= SCALES.get(scale.lower(), _CN_BIG.get(scale, 1.0))
    if unit:
        kind, factor = UNITS[unit.lower()]
        return Quantity(kind, value * factor, text=text)
    return Quantity("ordinal" if ordinal else "number", value, text=text)


def _year_or_number(raw: str, value: float, text: str) -> Quantity:
    """A bare 4-digit integer from 1000 to 2099 is read as a year; "1,200" (with a separator) as a number."""
    if re.fullmatch(r"1\d{3}|20\d{2}", raw):
        return Quantity("date", value, text=text)
    return Quantity("number", value, text=text)


def _from_match(m: re.Match[str]) -> Quantity | None:
    text = m.group(0).strip()
    if m.group("iso"):
        return Quantity("date", float(m.group("iso")), int(m.group("iso_m")), int(m.group("iso_d")), text)
    if m.group("cn_y"):
        return Quantity("date", float(m.group("cn_y")), int(m.group("cn_m") or 0), int(m.group("cn_d") or 0), text)
    if m.group("dmy_m"):
        return Quantity(
            "date", float(m.group("dmy_y")), MONTHS[m.group("dmy_m").lower().rstrip(".")], int(m.group("dmy_d")), text
        )
    if written := m.group("mdy_m"):
        if written == "may":  # "he may 2019..." is a verb; the month is written capitalized
            return Quantity("date", float(m.group("mdy_y")), text=m.group("mdy_y"))
        month = MONTHS[written.lower().rstrip(".")]
        return Quantity("date", float(m.group("mdy_y")), month, int(m.group("mdy_d") or 0), text)
    if decade := m.group("decade"):
        return Quantity("decade", float(decade), text=text)
    if m.group("cn_pct"):
        pct = chinese_number(m.group("cn_pct"))
        return None if pct is None else Quantity("percent", pct, text=text)
    if cn := m.group("cn"):
        unit = m.group("cn_unit")
        if len(cn) < 2 and not unit:  # a lone 一 or 十 is mostly a word (一起, 十分), not a number
            return None
        value = chinese_number(cn)
        return None if value is None else _measure(value, unit, None, text)
    if raw := m.group("num"):
        value = float(raw.replace(",", ""))
        if m.group("cur"):
            return Quantity("money", value * SCALES.get((m.group("scale") or "").lower(), 1.0), text=text)
        if not (m.group("unit") or m.group("scale") or m.group("ord")):
            return _year_or_number(raw, value, text)
        return _measure(value, m.group("unit"), m.group("scale"), text, ordinal=bool(m.group("ord")))
    if words := m.group("words"):
        if words.lower() in ("one", "zero") and not m.group("w_unit"):  # "which one", "one of them"
            return None
        value = word_number(words)
        return None if value is None else _measure(value, m.group("w_unit"), None, text)
    return None


@lru_cache(maxsize=16384)
def quantities(text: str) -> tuple[Quantity, ...]:
    """Every quantity of the text in reading order, normalized (cached: references are shared)."""
    found = (_from_match(m) for m in _QUANTITY_RE.finditer(text))
    return tuple(q for q in found if q is not None and math.isfinite(q.value))


# Unit words as judges._text normalizes them (lowercase, plural stripped) -> one spelling; "" = carries nothing
# beside its number ("5%" and "5 percent" are the same tokens).
UNIT_WORDS = {
    "km": "kilometre", "kilometer": "kilometre", "meter": "metre", "centimeter": "centimetre", "cm": "centimetre",
    "millimeter": "millimetre", "mm": "millimetre", "mi": "mile", "ft": "feet", "foot": "feet", "kg": "kilogram",
    "lb": "pound", "percent": "",
}  # fmt: skip
_MONTH_CAP = r"(?:" + "|".join(sorted((m.capitalize() for m in MONTHS), key=len, reverse=True)) + r")\.?"
_DATE_RE = re.compile(
    r"\b(?P<iso>\d{4})-(?P<iso_m>\d{1,2})-(?P<iso_d>\d{1,2})\b"
    rf"|\b(?P<dmy_d>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?(?P<dmy_m>{_MONTH_CAP}),?\s+(?P<dmy_y>\d{{4}})\b"
    rf"|\b(?P<mdy_m>{_MONTH_CAP})\s+(?:(?P<mdy_d>\d{{1,2}})(?:st|nd|rd|th)?\b,?\s*)?(?P<mdy_y>\d{{4}})\b"
)


def _date_tokens(m: re.Match[str]) -> str:
    if m.group("iso"):
        year, month, day = m.group("iso"), int(m.group("iso_m")), int(m.group("iso_d"))
    elif m.group("dmy_m"):
        year, month, day = m.group("dmy_y"), MONTHS[m.group("dmy_m").lower().rstrip(".")], int(m.group("dmy_d"))
    else:
        year, month, day = m.group("mdy_y"), MONTHS[m.group("mdy_m").lower().rstrip(".")], int(m.group("mdy_d") or 0)
    parts = [year, f"{year}-{month:02d}"] + ([f"{year}-{month:02d}-{day:02d}"] if day else [])
    return " " + " ".join(parts) + " "


@lru_cache(maxsize=16384)
def spelled_dates(text: str) -> str:
    """English dates rewritten as the year, year-month and full date tokens ("3 May 1852" and "May 3, 1852" ->
    " 1852 1852-05 1852-05-03 "), so "In 1852" is part of either and a wrong day is one token of three."""
    return _DATE_RE.sub(_date_tokens, text) if any(ch.isdigit() for ch in text) else text
