"""judges/_numbers.py: numbers, dates, percentages and measures are normalized before they are compared."""

from __future__ import annotations

import pytest

from judges._numbers import Quantity, chinese_number, quantities, spelled_dates, word_number


def only(text: str) -> Quantity:
    found = quantities(text)
    assert len(found) == 1, found
    return found[0]


@pytest.mark.parametrize("text", ["1,200", "1200 people", "一千二百", "twelve hundred", "1.2 thousand"])
def test_one_thousand_two_hundred_written_any_way_is_the_same_number(text: str) -> None:
    assert only(text).agrees(only("1200"))


@pytest.mark.parametrize("text", ["3 May 2019", "May 3, 2019", "2019-05-03", "2019年5月3日", "the 3rd of May 2019"])
def test_the_same_day_written_any_way_is_the_same_date(text: str) -> None:
    q = only(text)
    assert (q.kind, q.value, q.month, q.day) == ("date", 2019.0, 5, 3)


def test_a_year_agrees_with_a_date_of_that_year_and_not_with_another_year() -> None:
    assert only("in 2019").agrees(only("3 May 2019"))
    assert only("May 2019").agrees(only("2019-05-03"))
    assert not only("1850").agrees(only("1852"))
    assert not only("4 May 2019").agrees(only("3 May 2019"))
    assert only("1850").comparable(only("3 May 1852"))


@pytest.mark.parametrize(("left", "right"), [("17%", "17 percent"), ("17%", "百分之十七"), ("5 km", "5 kilometres")])
def test_percentages_and_units_are_compared_in_one_unit(left: str, right: str) -> None:
    assert only(left).agrees(only(right))


def test_measures_in_different_units_agree_within_one_percent_and_not_beyond() -> None:
    assert only("5 km").agrees(only("3.107 miles"))
    assert not only("5 km").agrees(only("3.5 miles"))
    assert not only("6 kilometers").agrees(only("6.213 km"))
    assert not only("5 km").comparable(only("5 kg"))


def test_chinese_and_english_number_words() -> None:
    assert chinese_number("两万三千") == 23000
    assert chinese_number("十五") == 15
    assert chinese_number("三点五") == 3.5
    assert chinese_number("二〇一九") == 2019
    assert word_number("twenty-five") == 25
    assert word_number("two hundred thousand") == 200000


def test_words_that_only_look_like_numbers_are_not_quantities() -> None:
    assert quantities("Which one is older?") == ()
    assert quantities("他们一起去了") == ()
    assert quantities("the A380 airliner") == ()
    assert only("he may 2019 return").month == 0  # "may" the verb, not the month


def test_an_ordinal_a_decade_and_an_age_are_kinds_of_their_own() -> None:
    assert only("the 23rd edition").kind == "ordinal"
    assert only("the 1970s").kind == "decade"
    assert only("a 16-year-old").kind == "age"
    assert not only("the 23rd edition").comparable(only("23 people"))


def test_english_dates_become_the_same_tokens_whatever_their_format() -> None:
    expected = " 1852 1852-05 1852-05-03 "
    assert spelled_dates("3 May 1852") == spelled_dates("May 3, 1852") == spelled_dates("1852-05-03") == expected
    assert spelled_dates("no digits here") == "no digits here"
