"""Deterministic hash sampling: same decision everywhere, rates on target, strata, filters, dedup, counts."""

from __future__ import annotations

import hashlib
import random
import subprocess
import sys
from datetime import UTC, datetime
from math import sqrt

import pytest

from judgewatch.hashing import UnitHash, hash_unit
from judgewatch.traffic import (
    QuarantineReason,
    RejectedTrafficRow,
    Sampler,
    TrafficRow,
    decide,
    interaction_id,
)
from judgewatch.traffic.dedup import DedupWindow
from judgewatch.traffic.mapping import RowMapper

IDS = [interaction_id("traffic:src", f"row-{i}") for i in range(100_000)]


def _rows(config, raws) -> list[TrafficRow]:
    mapper = RowMapper(config)
    rows = [mapper.map(raw, position=f"x:{i}", fallback_id=f"x:{i}") for i, raw in enumerate(raws)]
    assert all(isinstance(r, TrafficRow) for r in rows)
    return rows  # type: ignore[return-value]


def test_decide_is_the_documented_blake2b_rule():
    iid, salt = IDS[7], "s1"
    expected = int.from_bytes(hashlib.blake2b((salt + iid).encode()).digest()[:8], "big") / 2**64
    assert hash_unit(iid, salt, variant=UnitHash.SAMPLING) == expected
    assert decide(iid, expected + 1e-12, salt) is True
    assert decide(iid, expected, salt) is False


def test_decisions_do_not_depend_on_order():
    ids = IDS[:5000]
    first = {i: decide(i, 0.1, "salt") for i in ids}
    shuffled = ids[:]
    random.Random(3).shuffle(shuffled)
    assert {i: decide(i, 0.1, "salt") for i in shuffled} == first


def test_decisions_agree_across_processes():
    ids = IDS[:2000]
    code = (
        "import sys\nfrom judgewatch.traffic import decide\n"
        "ids = sys.stdin.read().split()\n"
        "print(''.join('1' if decide(i, 0.25, 'x') else '0' for i in ids))"
    )
    # a fresh interpreter with a different hash seed: nothing may depend on Python's hash()
    out = subprocess.run(
        [sys.executable, "-c", code],
        input="\n".join(ids),
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONHASHSEED": "12345", "PATH": ""},
    ).stdout.strip()
    assert out == "".join("1" if decide(i, 0.25, "x") else "0" for i in ids)


@pytest.mark.parametrize("rate", [0.01, 0.1, 0.5])
def test_inclusion_rate_is_close_to_target_on_100k_ids(rate):
    n = len(IDS)
    picked = sum(decide(i, rate, "judgewatch") for i in IDS)
    assert abs(picked - n * rate) < 5 * sqrt(n * rate * (1 - rate))


def test_lower_rate_sample_is_a_subset_and_salt_changes_the_sample():
    low = {i for i in IDS[:20_000] if decide(i, 0.05, "a")}
    high = {i for i in IDS[:20_000] if decide(i, 0.2, "a")}
    other_salt = {i for i in IDS[:20_000] if decide(i, 0.05, "b")}
    assert low <= high
    assert len(low & other_salt) < len(low) * 0.2


def test_rate_zero_never_and_one_always_picks():
    assert not any(decide(i, 0.0, "s") for i in IDS[:1000])
    assert all(decide(i, 1.0, "s") for i in IDS[:1000])


def test_rates_per_tier_stratum_are_applied_and_carried(make_config, gateway_row):
    config = make_config(
        paths=["unused.jsonl"],
        tiers={"qwen": "full", "chatglm2": "quantized"},
        sampling={"rates": {"full": 0.05, "quantized": 0.5}, "default_rate": 0.0, "dedup": {"enabled": False}},
    )
    raws = [gateway_row(i, model="qwen-14b-chat" if i % 2 else "chatglm2-6b") for i in range(4000)]
    rows = _rows(config, raws)
    sampler = Sampler(config)
    picks = list(sampler.run(rows))
    by_stratum = {p.stratum for p in picks}
    assert by_stratum == {"full", "quantized"}
    assert all(p.inclusion_probability == {"full": 0.05, "quantized": 0.5}[p.stratum] for p in picks)
    strata = sampler.stats.strata
    assert strata["full"].eligible == strata["quantized"].eligible == 2000
    assert abs(strata["full"].picked - 100) < 5 * sqrt(2000 * 0.05 * 0.95)
    assert abs(strata["quantized"].picked - 1000) < 5 * sqrt(2000 * 0.25)


def test_route_strata_fall_back_to_the_tier_rate(make_config, gateway_row):
    config = make_config(
        paths=["unused.jsonl"],
        sampling={
            "stratify_by_route": True,
            "rates": {"full/search": 1.0, "full": 0.0},
            "dedup": {"enabled": False},
        },
    )
    raws = [gateway_row(i, tier="full", route="search" if i % 2 else "chat") for i in range(200)]
    sampler = Sampler(config)
    picks = list(sampler.run(_rows(config, raws)))
    assert {p.stratum for p in picks} == {"full/search"}
    assert len(picks) == 100
    assert sampler.stats.strata["full/chat"].picked == 0


def test_filters_drop_rows_by_route_department_time_and_answer_length(make_config, gateway_row):
    config = make_config(
        paths=["unused.jsonl"],
        sampling={"default_rate": 1.0, "dedup": {"enabled": False}},
        filters={
            "routes": ["qa/*"],
            "exclude_departments": ["legal"],
            "since": "2024-06-03T08:00:10+00:00",
            "until": "2024-06-03T09:00:00+00:00",
            "min_answer_chars": 3,
            "max_answer_chars": 100,
        },
    )
    raws = [
        gateway_row(10),  # kept
        gateway_row(11, route="support/billing"),
        gateway_row(12, department="legal"),
        gateway_row(1),  # before `since`
        gateway_row(13, second=3600),  # `until` is exclusive
        gateway_row(14, answer="好"),
        gateway_row(15, answer="长" * 101),
    ]
    sampler = Sampler(config)
    picks = list(sampler.run(_rows(config, raws)))
    assert [p.row.source_id for p in picks] == ["chatcmpl-000010"]
    assert sampler.stats.filtered_by == {"route": 1, "department": 1, "time": 2, "answer_length": 2}


def test_identical_request_and_response_within_the_window_is_a_duplicate(make_config, gateway_row):
    config = make_config(
        paths=["unused.jsonl"],
        sampling={"default_rate": 1.0, "dedup": {"window_rows": 100, "window_seconds": 60}},
    )
    same = {"question": "同一个问题", "answer": "同一个回答"}
    raws = [
        gateway_row(1, second=0, **same),
        gateway_row(2, second=30, **same),  # duplicate of 1
        gateway_row(3, second=30, model="chatglm2-6b", **same),  # other model: another request
        gateway_row(4, second=200, **same),  # outside the 60 s window: new again
    ]
    sampler = Sampler(config)
    picks = list(sampler.run(_rows(config, raws)))
    assert [p.row.source_id for p in picks] == ["chatcmpl-000001", "chatcmpl-000003", "chatcmpl-000004"]
    assert sampler.stats.duplicate == 1


def test_dedup_window_memory_is_bounded_by_rows():
    window = DedupWindow(max_rows=100, seconds=None)
    for i in range(10_000):
        assert window.seen(i.to_bytes(8, "big"), float(i)) is False
    assert len(window) == 100
    assert window.seen((9_999).to_bytes(8, "big"), 10_000.0) is True
    assert window.seen((0).to_bytes(8, "big"), 10_001.0) is False  # evicted long ago


def test_counts_add_up_and_quarantined_rows_reach_the_callback(make_config, gateway_row):
    config = make_config(paths=["unused.jsonl"], sampling={"default_rate": 0.3}, filters={"routes": ["qa/*"]})
    raws = [gateway_row(i, route="qa/x" if i % 5 else "other") for i in range(1000)]
    raws += [gateway_row(i, question="重复", answer="重复") for i in range(1000, 1010)]
    items: list[TrafficRow | RejectedTrafficRow] = list(_rows(config, raws))
    bad = RejectedTrafficRow(source="traffic:test-source", position="f:3", reason=QuarantineReason.invalid_json)
    items.insert(3, bad)
    seen: list[RejectedTrafficRow] = []
    sampler = Sampler(config, on_quarantine=seen.append)
    picks = list(sampler.run(items))
    s = sampler.stats
    assert seen == [bad]
    assert s.read == 1011
    assert (s.quarantined, s.filtered, s.duplicate) == (1, 200, 9)
    assert s.read == s.quarantined + s.filtered + s.duplicate + s.eligible
    assert s.picked == len(picks) == sum(st.picked for st in s.strata.values())
    assert s.quarantined_by == {"invalid_json": 1}


def test_picks_are_scrubbed_and_the_counts_kept(make_config, gateway_row):
    config = make_config(paths=["unused.jsonl"], sampling={"default_rate": 1.0})
    raw = gateway_row(1, question="我的邮箱是li.lei@example.cn，请回电13912345678", answer="好的，已记录。")
    raw["reference"]["context"] = ["客户 li.lei@example.cn 的工单"]
    sampler = Sampler(config)
    (pick,) = sampler.run(_rows(config, [raw]))
    assert pick.row.question == "我的邮箱是[EMAIL]，请回电[PHONE]"
    assert pick.row.messages[-1].content == pick.row.question
    assert pick.row.context == ["客户 [EMAIL] 的工单"]
    assert pick.pii_counts == {"email": 3, "phone": 2}
    assert sampler.stats.pii == {"email": 3, "phone": 2}
    assert pick.row.timestamp == datetime(2024, 6, 3, 8, 0, 1, tzinfo=UTC)


def test_ids_agree_with_the_storage_layer():
    from judgewatch.storage.interactions import interaction_id as stored_interaction_id
    from judgewatch.storage.quarantine import quarantine_id

    assert interaction_id("traffic:demo", "chatcmpl-1") == stored_interaction_id("traffic:demo", "chatcmpl-1")
    bad = RejectedTrafficRow(source="traffic:demo", position="log.jsonl:7", reason=QuarantineReason.oversize)
    assert bad.quarantine_id == quarantine_id("traffic:demo", "log.jsonl:7")
