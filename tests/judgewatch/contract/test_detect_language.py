"""`detect_language`: 'zh' when CJK ideographs are at least a fifth of the letters of all the texts together, the
rule checked character by character against random texts."""

from __future__ import annotations

import random

import pytest

from judgewatch.contract.items import detect_language


def _by_character(*texts: str | None) -> str:
    cjk = letters = 0
    for text in texts:
        for ch in text or "":
            if "\u4e00" <= ch <= "\u9fff" or "\u3400" <= ch <= "\u4dbf":
                cjk += 1
                letters += 1
            elif ch.isalpha():
                letters += 1
    return "zh" if letters and cjk / letters >= 0.2 else "en"


@pytest.mark.parametrize(
    ("texts", "expected"),
    [
        (("What is the capital?", "Paris."), "en"),
        (("What is the capital of France?", "巴黎"), "en"),  # 2 ideographs of 26 letters
        (("Capital?", "法国的首都是巴黎"), "zh"),  # the ASCII question's letters count too
        (("首都是哪里？", None), "zh"),
        (("Café “quoted” naïve", ""), "en"),
        (("", None), "en"),
    ],
)
def test_language_follows_the_share_of_ideographs_over_all_texts(texts: tuple[str | None, ...], expected: str) -> None:
    assert detect_language(*texts) == expected


def test_language_matches_the_character_by_character_rule() -> None:
    rng = random.Random(20261205)
    alphabet = "abcXYZ 123 中文字㐀䶿鿿一é²½_ßK\u3000，。!?"
    for _ in range(3000):
        texts = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30))) for _ in range(rng.randint(1, 3))]
        assert detect_language(*texts) == _by_character(*texts), texts
