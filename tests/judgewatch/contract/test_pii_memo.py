"""The scrubber's memo of recent texts: a text scrubbed again gives the same text and counts again, and the
memo stays bounded however many texts pass."""

from __future__ import annotations

from collections import Counter

from judgewatch.contract import pii
from judgewatch.contract.pii import Scrubber


def test_a_text_scrubbed_twice_is_replaced_and_counted_both_times() -> None:
    scrubber = Scrubber()
    text = "Mail jane@example.com or call 138 1234 5678, Mr. John Smith."
    first: Counter[str] = Counter()
    second: Counter[str] = Counter()
    clean = scrubber.scrub_into(text, first)
    assert scrubber.scrub_into(text, second) == clean == "Mail [EMAIL] or call [PHONE], Mr. [NAME]."
    assert first == second == Counter({"email": 1, "phone": 1, "name": 1})
    both: Counter[str] = Counter()
    scrubber.scrub_into(text, both)
    scrubber.scrub_into(text, both)
    assert both == Counter({"email": 2, "phone": 2, "name": 2})


def test_the_memo_holds_at_most_its_bound_of_texts() -> None:
    scrubber = Scrubber()
    for k in range(pii._MEMO_TEXTS + 10):
        assert scrubber.scrub_into(f"order {k} for a@b{k}.com", Counter()) == f"order {k} for [EMAIL]"
    assert 0 < len(scrubber._memo) <= pii._MEMO_TEXTS


def test_kinds_left_out_are_not_replaced_from_another_scrubbers_memo() -> None:
    text = "write to a@b.com"
    assert Scrubber().scrub_into(text, Counter()) == "write to [EMAIL]"
    assert Scrubber(kinds=["phone"]).scrub_into(text, Counter()) == text
