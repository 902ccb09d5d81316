"""English dates rewritten as tokens that compare ("3 May 2019" = "May 3, 2019" = "2019-05-03"; a year agrees with
any date of that year), and the unit words read as the same tokens however they are written ("km" = "kilometre").
"""

from __future__ import annotations

import re
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
