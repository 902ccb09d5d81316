"""judges/_numbers.py: English dates become tokens that compare whatever their format."""

from __future__ import annotations

from judges._numbers import spelled_dates


def test_english_dates_become_the_same_tokens_whatever_their_format() -> None:
    expected = " 1852 1852-05 1852-05-03 "
    assert spelled_dates("3 May 1852") == spelled_dates("May 3, 1852") == spelled_dates("1852-05-03") == expected
    assert spelled_dates("no digits here") == "no digits here"
