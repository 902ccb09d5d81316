"""PII scrubbing: real-looking PII in Chinese and English text is replaced; look-alikes survive untouched."""

from __future__ import annotations

import pytest

from judgewatch.contract.pii import cn_id_valid, luhn_valid
from judgewatch.traffic import PiiKind, Scrubber, scrub

_ID_WEIGHTS = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)


def cn_id(body17: str) -> str:
    """Complete 17 digits with the ISO 7064 MOD 11-2 check character."""
    return body17 + "10X98765432"[sum(int(c) * w for c, w in zip(body17, _ID_WEIGHTS, strict=True)) % 11]


def luhn(body: str) -> str:
    """Complete a card number body with its Luhn check digit."""
    return next(body + d for d in "0123456789" if luhn_valid(body + d))


ID_X = cn_id("11010519491231002")  # ends in X
ID_DIGIT = cn_id("44030619900307451")
UNIONPAY_19 = luhn("622202123456789012")
VISA = luhn("411111111111111")


def test_generated_fixtures_are_what_they_claim():
    assert ID_X.endswith("X") and cn_id_valid(ID_X[:17], ID_X[17])
    assert cn_id_valid(ID_DIGIT[:17], ID_DIGIT[17])
    assert luhn_valid(UNIONPAY_19) and luhn_valid(VISA) and VISA == "4111111111111111"


@pytest.mark.parametrize(
    ("text", "expected", "counts"),
    [
        (
            "我的邮箱是zhang.san@example.com，手机号13812345678。",
            "我的邮箱是[EMAIL]，手机号[PHONE]。",
            {"email": 1, "phone": 1},
        ),
        ("请联系（+86 138 1234 5678）或+86-139-1234-5678！", "请联系（[PHONE]）或[PHONE]！", {"phone": 2}),
        ("手机：0086 15912345678，座机：010-62751234。", "手机：[PHONE]，座机：[PHONE]。", {"phone": 2}),
        (f"身份证号：{ID_X}，请核对。", "身份证号：[CN_ID]，请核对。", {"cn_id": 1}),
        (f"证件{ID_DIGIT[:6]} {ID_DIGIT[6:14]} {ID_DIGIT[14:]}已登记", "证件[CN_ID]已登记", {"cn_id": 1}),
        (
            f"卡号：{UNIONPAY_19[:4]} {UNIONPAY_19[4:8]} {UNIONPAY_19[8:12]} {UNIONPAY_19[12:16]} {UNIONPAY_19[16:]}。",
            "卡号：[CARD]。",
            {"card": 1},
        ),
        ("Card 4111-1111-1111-1111, exp 12/27", "Card [CARD], exp 12/27", {"card": 1}),
        (
            "Reach me at jane.doe+support@mail.example.co.uk or +1 (415) 555-0132.",
            "Reach me at [EMAIL] or [PHONE].",
            {"email": 1, "phone": 1},
        ),
        ("London office: +44 20 7946 0958", "London office: [PHONE]", {"phone": 1}),
        (
            "用这个key：sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv，别外传",
            "用这个key：[SECRET]，别外传",
            {"secret": 1},
        ),
        (
            "curl -H 'Authorization: Bearer eyJhbGciOiJIUzI1NiJ9abcdefgh' https://api.example.com",
            "curl -H 'Authorization: Bearer [SECRET]' https://api.example.com",
            {"secret": 1},
        ),
        (
            "AWS AKIAIOSFODNN7EXAMPLE, GitHub ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789",
            "AWS [SECRET], GitHub [SECRET]",
            {"secret": 2},
        ),
        (
            "配置api_key=9f86d081884c7d659a2feaa0c55ad015a3bf4f1b，密码：Hunter2pass；",
            "配置api_key=[SECRET]，密码：[SECRET]；",
            {"secret": 2},
        ),
        ('{"client_secret": "dGhpc2lzYXZlcnlsb25nc2VjcmV0dmFsdWU="}', '{"client_secret": "[SECRET]"}', {"secret": 1}),
    ],
)
def test_pii_is_replaced_with_typed_placeholders(text, expected, counts):
    result = scrub(text)
    assert result.text == expected
    assert result.counts == counts


@pytest.mark.parametrize(
    "text",
    [
        "订单号 2024031512345678 已发货，预计 2024-03-18 送达。",  # 16-digit order number (not a card prefix)
        "物流单号：SF1234567890123，客服工单 #13812",
        f"编号 {ID_X[:17]}{'1' if ID_X[17] != '1' else '2'}",  # 18 digits, bad checksum
        f"编号 {cn_id('11010519491331002')}",  # checksum right, month 13
        "non-Luhn card-like 4111 1111 1111 1112",
        "6222 0212 3456 7890",  # UnionPay-shaped, fails Luhn
        "ISBN 978-7-111-54742-6 / 9787111547426 / ISBN-10 7-111-54742-6",
        "timestamps 1700000000123 and 1700000000, at 2024-03-15 12:30:45.123",
        "version v2.13.0, Python 3.11.7, build 20240315.1, port 8080",  # an IP address is PII now: test_pii_kinds
        "the task-scheduler risk-free desk-lamp uses sk-learn and sklearn",
        "请问π等于3.14159265358979吗？温度-12.5℃，电话区号010",
        "max_tokens=1024, token_count: 12345",
        "价格￥1,234,567.89元，共13812件",
    ],
)
def test_look_alikes_survive(text):
    result = scrub(text)
    assert result.text == text
    assert result.counts == {}


def test_only_the_configured_kinds_are_scrubbed():
    text = "邮箱 a.b@example.com 手机 13812345678"
    result = Scrubber([PiiKind.phone]).scrub(text)
    assert result.text == "邮箱 a.b@example.com 手机 [PHONE]"
    assert result.counts == {"phone": 1}


def test_an_id_number_is_labeled_as_id_not_as_card_or_phone():
    assert scrub(f"身份证{ID_DIGIT}").text == "身份证[CN_ID]"


def test_scrubbing_is_idempotent():
    once = scrub(f"邮箱x@y.com 卡 {VISA} 密钥 sk-{'a1' * 15} 身份证 {ID_X}").text
    assert scrub(once).text == once
    assert scrub(once).counts == {}
