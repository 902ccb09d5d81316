"""The PII kinds added for issue 31: US SSNs, IP addresses, IBANs, street addresses and personal names, in
English and Chinese; and their look-alikes, which must survive untouched."""

from __future__ import annotations

import pytest

from judgewatch.contract.items import JudgeItem
from judgewatch.contract.pii import Scrubber, scrub, scrub_content


@pytest.mark.parametrize(
    ("text", "expected", "counts"),
    [
        ("My SSN is 123-45-6789.", "My SSN is [SSN].", {"ssn": 1}),
        ("Social security number: 123456789 on file", "Social security number: [SSN] on file", {"ssn": 1}),
        ("ssn 078 05 1120", "ssn [SSN]", {"ssn": 1}),
        ("Server 192.168.1.100:8080 and 8.8.8.8 answered", "Server [IP]:8080 and [IP] answered", {"ip": 2}),
        ("客户端IP：10.0.0.23，请封禁", "客户端IP：[IP]，请封禁", {"ip": 1}),
        ("from 2001:db8:85a3::8a2e:370:7334 and fe80::1ff:fe23:4567:890a", "from [IP] and [IP]", {"ip": 2}),
        ("IBAN DE89 3704 0044 0532 0130 00, thanks", "IBAN [IBAN], thanks", {"iban": 1}),
        ("账户 GB82WEST12345698765432。", "账户 [IBAN]。", {"iban": 1}),
        ("Ship to 1600 Amphitheatre Parkway, Mountain View, CA 94043 today", "Ship to [ADDRESS] today", {"address": 1}),
        ("I live at 221B Baker Street, London NW1 6XE.", "I live at [ADDRESS].", {"address": 1}),
        ("It is at 1236 West 7th Street in Los Angeles, California.", "It is at [ADDRESS].", {"address": 1}),
        ("地址：上海市浦东新区世纪大道100号5楼", "地址：[ADDRESS]", {"address": 1}),
        ("寄到中关村大街27号3号楼501室，谢谢", "寄到[ADDRESS]，谢谢", {"address": 1}),
        ("Dear Mr. John Smith, thanks.", "Dear Mr. [NAME], thanks.", {"name": 1}),
        ("Hi, my name is Jane Doe and I need help.", "Hi, my name is [NAME] and I need help.", {"name": 1}),
        ("Best regards,\nAlice Walker", "Best regards,\n[NAME]", {"name": 1}),
        ("你好，我叫李雷，想退货。", "你好，我叫[NAME]，想退货。", {"name": 1}),
        ("收件人：王小明，电话稍后给。", "收件人：[NAME]，电话稍后给。", {"name": 1}),
        ("张先生和韩梅梅女士都到了。", "[NAME]先生和[NAME]女士都到了。", {"name": 2}),
    ],
)
def test_new_kinds_are_replaced_with_typed_placeholders(text: str, expected: str, counts: dict[str, int]) -> None:
    result = scrub(text)
    assert result.text == expected
    assert result.counts == counts


@pytest.mark.parametrize(
    "text",
    [
        "Order 123456789 shipped on 2024-03-15; invoice 2024-0315-0001.",  # nine digits without an SSN cue
        "Not SSNs: 000-12-3456, 666-12-3456, 912-34-5678, 123-00-4567, 123-45-0000.",
        "Released version 1.2.3.4, v10.0.0.1, build 1.2.3.4.5, Chrome 120.0.6099.109.",
        "Octets out of range: 999.1.1.1 and 256.256.256.256.",
        "Meet at 12:30:45, use std::vector and a::b, ratio 3:2.",
        "ISBN 978-3-16-148410-0, ISBN-10 0-306-40615-2, DOI 10.1000/182.",
        "IBAN-like but wrong check digits: DE00 3704 0044 0532 0130 00; product code AB12CDEF3456789.",
        "Section 3 Things To Know, 2 Million Users, 10 Downing tips.",  # numbers before capitalized words
        "In 1844 Arthur's Magazine began; 3 Main reasons; 2 Street Fighter games.",  # no house number and street
        "第27号文件，3号选手，2024年第5号台风。",  # 号 without a road
        "我是学生，客户服务很好，先生们女士们。",  # cue words without a surname and given name
        "Dr. no. The MR scan; regards to all.",  # titles without a capitalized name after them
        "Mount Everest is 8,849 m; Apollo 11 landed in 1969; pH 7.4; 3.14159.",
    ],
)
def test_look_alikes_of_the_new_kinds_survive(text: str) -> None:
    result = scrub(text)
    assert result.text == text, result.counts
    assert result.counts == {}


def test_scrub_content_covers_every_judged_field_and_leaves_clean_records_alone() -> None:
    item = JudgeItem(
        id="1", question="My SSN is 123-45-6789, what now?",
        answer="Write to 1600 Amphitheatre Parkway, Mountain View, CA 94043.",
        reference_answer="Call from 10.1.2.3", reference_facts=["我叫李雷"], context=["IBAN GB82WEST12345698765432"],
    )  # fmt: skip
    clean = scrub_content(item, Scrubber())
    assert clean.question == "My SSN is [SSN], what now?"
    assert clean.answer == "Write to [ADDRESS]."
    assert clean.reference_answer == "Call from [IP]"
    assert clean.reference_facts == ["我叫[NAME]"] and clean.context == ["IBAN [IBAN]"]
    assert clean.id == "1"
    plain = JudgeItem(id="2", question="What is the capital of France?", answer="Paris.")
    assert scrub_content(plain, Scrubber()) is plain
