"""The PII kinds beyond contact details and secrets: US SSNs, IP addresses, IBANs, personal names, addresses.

Each is a `(text, counts) -> text` substituter for `pii.Scrubber` with a cheap `may_hold_*` test; how each is found
and what it misses: docs/pii.md. Names only after a cue: no offline recognizer works without downloading a model.
"""

from __future__ import annotations

import ipaddress
import re
from collections import Counter

_SSN = re.compile(
    r"(?<![0-9A-Za-z\-])(?!000|666|9[0-9]{2})[0-9]{3}([- ])(?!00)[0-9]{2}\1(?!0000)[0-9]{4}(?![0-9A-Za-z]|-[0-9])"
)
_SSN_BARE = re.compile(
    r"(?i)((?<![A-Za-z])(?:ssn|social security(?: number| no\.?)?)\s*(?:#|no\.?|number)?\s*[:：]?\s*)"
    r"(?!000|666|9[0-9]{2})([0-9]{9})(?![0-9])"
)
_IPV4 = re.compile(r"(?<![0-9A-Za-z.])((?:[0-9]{1,3}\.){3}[0-9]{1,3})(?![0-9]|\.[0-9])")
_VERSION_BEFORE = re.compile(r"(?i)(?:\bv|\bversion\s*|\bver\.?\s*|版本\s*[:：]?\s*)$")
_IPV6 = re.compile(
    r"(?<![0-9A-Za-z:.])((?:[0-9A-Fa-f]{0,4}:){2,7}(?:[0-9A-Fa-f]{1,4}|(?:[0-9]{1,3}\.){3}[0-9]{1,3})?)(?![0-9A-Za-z:])"
)
_IBAN = re.compile(r"(?<![A-Za-z0-9])([A-Z]{2}[0-9]{2}(?: ?[A-Z0-9]){11,30})(?![A-Za-z0-9])")

_SURNAMES = (
    "王李张刘陈杨黄赵吴周徐孙马朱胡郭何高林罗郑梁谢宋唐许韩冯邓曹彭曾肖田董袁潘于蒋蔡余杜叶程苏魏吕丁任沈姚卢姜崔钟谭陆汪范金石"
    "廖贾夏韦付方白邹孟熊秦邱江尹薛闫段雷侯龙史陶黎贺顾毛郝龚邵万钱严覃武戴莫孔向汤"
)
_CN_NAME_AFTER = re.compile(
    r"((?:我叫|我的名字是|姓名|名字|联系人|收件人|收货人|本人|患者|客户)\s*[:：是为]?\s*)"
    rf"([{_SURNAMES}][\u4e00-\u9fa5]{{1,2}})(?![\u4e00-\u9fa5]{{2}})"
)
_CN_NAME_TITLE = re.compile(rf"([{_SURNAMES}][\u4e00-\u9fa5]{{0,2}}?)(先生|女士|小姐)")
_EN_WORD = r"[A-Z][a-z]+(?:[-'][A-Z][a-z]+)?"
_EN_NAME_TITLE = re.compile(rf"\b((?:Mr|Mrs|Ms|Mx|Miss|Dr|Prof)\.?\s+)({_EN_WORD}(?:\s+{_EN_WORD}){{0,2}})")
_EN_NAME_INTRO = re.compile(
    rf"((?i:\bmy name is|\bmy full name is|\bname\s*:|\bsigned,?|\bsincerely,?|\bregards,?)\s+)"
    rf"({_EN_WORD}(?:\s+{_EN_WORD}){{0,2}})"
)
# Words that must appear for a name pattern to match: found by substring search on the lower-cased text, much
# cheaper than a case-insensitive regular expression over every text.
_NAME_CUE_WORDS = (
    "mr", "mrs", "ms", "mx", "miss", "dr", "prof", "name", "signed", "sincerely", "regards",
    "我叫", "我的名字", "姓名", "名字", "联系人", "收件人", "收货人", "本人", "患者", "客户", "先生", "女士", "小姐",
)  # fmt: skip
_NAME_CUE = re.compile("|".join(map(re.escape, _NAME_CUE_WORDS)))  # one scan for every cue word
_TITLE_CUE = re.compile("Mr|Ms|Mx|Miss|Dr|Prof")  # `_EN_NAME_TITLE`'s titles, case as it matches them
_INTRO_CUE = re.compile("name|signed|sincerely|regards")  # `_EN_NAME_INTRO`'s words, lower-cased
_SSN_HINT = re.compile(r"[0-9]{3}[- ][0-9]{2}[- ][0-9]{4}|[Ss][Ss][Nn]|[Ss]ocial [Ss]ecurity")
_IP_HINT = re.compile(r"[0-9]\.[0-9]{1,3}\.[0-9]{1,3}\.[0-9]|::|:[0-9A-Fa-f]{1,4}:")

_CN_NUMBER = "0-9０-９一二三四五六七八九十百千零"
_CN_ADDRESS = re.compile(
    r"(?:[\u4e00-\u9fa5]{2,12}?(?:省|市|自治区|特别行政区|区|县|镇|乡|街道))*"
    r"[\u4e00-\u9fa5A-Za-z0-9]{1,15}?(?:路|街|大街|大道|道|巷|弄|胡同|里)"
    rf"[{_CN_NUMBER}]+(?:-[0-9]+)?号"
    rf"(?:[{_CN_NUMBER}A-Za-z\-]+(?:号楼|栋|幢|座|单元|层|楼|室|号))*"
)
# A house number, a capitalized name and, within a few words, a street type: the addresses pyap finds (US, CA, GB)
# all have one. Parsing is 0.85 ms a text and country, so text without this cue ("In 1844 Arthur's ...") skips it.
_STREET_TYPES = (
    "street|st|avenue|ave|road|rd|boulevard|blvd|lane|ln|drive|dr|court|ct|way|place|pl|square|sq|terrace|"
    "parkway|pkwy|highway|hwy|close|crescent|row|circle|cir|trail|plaza|alley|mews|gardens|hill|grove|walk"
)
_EN_ADDRESS_CUE = re.compile(
    rf"\b[0-9]+[A-Za-z]?\s+[A-Z0-9][A-Za-z0-9']*(?:\s+[A-Za-z0-9][A-Za-z0-9']*){{0,4}}\s+(?i:{_STREET_TYPES})\b"
)


def counting(counts: Counter[str], kind: str, placeholder: str) -> str:
    """`placeholder`, counted as one `kind` found (every substituter's replacement)."""
    counts[kind] += 1
    return placeholder


def sub_ssn(text: str, counts: Counter[str]) -> str:
    text = _SSN.sub(lambda _m: counting(counts, "ssn", "[SSN]"), text)
    return _SSN_BARE.sub(lambda m: m.group(1) + counting(counts, "ssn", "[SSN]"), text)


def sub_ip(text: str, counts: Counter[str]) -> str:
    def v4(m: re.Match[str]) -> str:
        if _VERSION_BEFORE.search(m.string[max(0, m.start() - 12) : m.start()]):
            return m.group(0)
        try:
            ipaddress.IPv4Address(m.group(1))
        except ValueError:
            return m.group(0)
        return counting(counts, "ip", "[IP]")

    def v6(m: re.Match[str]) -> str:
        candidate = m.group(1)
        groups = [g for g in candidate.split(":") if g]
        if len(groups) < 2 or not any(len(g) >= 3 for g in groups):  # "12:30:45", "a::b": not worth a guess
            return m.group(0)
        try:
            ipaddress.IPv6Address(candidate)
        except ValueError:
            return m.group(0)
        return counting(counts, "ip", "[IP]")

    if "." in text:
        text = _IPV4.sub(v4, text)
    if "::" in text or text.count(":") >= 7:
        text = _IPV6.sub(v6, text)
    return text


def sub_iban(text: str, counts: Counter[str]) -> str:
    from stdnum import iban  # python-stdnum: country formats and check digits

    def repl(m: re.Match[str]) -> str:
        return counting(counts, "iban", "[IBAN]") if iban.is_valid(m.group(1)) else m.group(0)

    return _IBAN.sub(repl, text)


def sub_name(text: str, counts: Counter[str]) -> str:
    """Each pattern runs only on text holding its literal: a title as written (the title pattern is case
    sensitive), an introduction word (ASCII text lower-cased; other text always, as `(?i)` folds some non-ASCII
    letters onto ASCII ones), Chinese cues only in text that is not ASCII."""

    def keep_cue(m: re.Match[str]) -> str:
        return m.group(1) + counting(counts, "name", "[NAME]")

    if _TITLE_CUE.search(text):
        text = _EN_NAME_TITLE.sub(keep_cue, text)
    ascii_only = text.isascii()
    if not ascii_only or _INTRO_CUE.search(text.lower()):
        text = _EN_NAME_INTRO.sub(keep_cue, text)
    if ascii_only:
        return text
    text = _CN_NAME_AFTER.sub(keep_cue, text)
    return _CN_NAME_TITLE.sub(lambda m: counting(counts, "name", "[NAME]") + m.group(2), text)


# Words the Chinese pattern's lazy start can take with it ("寄到北京市..."): kept in the text.
_CN_LEADS = ("寄到", "送到", "发到", "寄往", "送往", "住在", "位于", "来自", "地址是", "在", "到", "于", "是")


def _cn_address(m: re.Match[str], counts: Counter[str]) -> str:
    lead = next((w for w in _CN_LEADS if m.group(0).startswith(w)), "")
    return lead + counting(counts, "address", "[ADDRESS]")


def sub_address(text: str, counts: Counter[str]) -> str:
    if "号" in text:
        text = _CN_ADDRESS.sub(lambda m: _cn_address(m, counts), text)
    if _EN_ADDRESS_CUE.search(text):
        import pyap  # pyap2: US, Canadian and British addresses by regular expressions, offline

        found = {str(a) for country in ("US", "CA", "GB") for a in pyap.parse(text, country=country)}
        for address in sorted(found, key=len, reverse=True):
            if address in text:
                counts["address"] += text.count(address)
                text = text.replace(address, "[ADDRESS]")
    return text


def may_hold_name(text: str) -> bool:
    return _NAME_CUE.search(text.lower()) is not None


def may_hold_ssn(text: str) -> bool:
    return _SSN_HINT.search(text) is not None


def may_hold_ip(text: str) -> bool:
    return _IP_HINT.search(text) is not None


def may_hold_address(text: str) -> bool:
    return "号" in text or _EN_ADDRESS_CUE.search(text) is not None


def may_hold_iban(text: str) -> bool:
    return _IBAN.search(text) is not None
