"""The one draw and id formulas give today's values: stored picks, routed review items and ids stay reproducible."""

import hashlib

import pytest

from judgewatch.hashing import UnitHash, hash_unit, interaction_id, quarantine_id, stable_id

IID = "0123456789abcdef0123456789abcdef"


def test_sampling_variant_gives_the_values_stored_picks_were_decided_with() -> None:
    # Pinned from the former `traffic.sampling.hash_unit(interaction_id, salt)` (blake2b(salt + id)).
    assert hash_unit(IID, variant=UnitHash.SAMPLING) == 0.5175643020501987
    assert hash_unit(IID, "2026-q4", variant=UnitHash.SAMPLING) == 0.9710449328560588
    expected = int.from_bytes(hashlib.blake2b(("s1" + IID).encode()).digest()[:8], "big") / 2**64
    assert hash_unit(IID, "s1", variant=UnitHash.SAMPLING) == expected


def test_labeled_variant_gives_the_values_review_items_were_routed_with() -> None:
    # Pinned from the former `review.routing.hash_unit(salt, key)` (sha256("judgewatch:{salt}:{key}")).
    assert hash_unit("v1", "uniform", variant=UnitHash.LABELED) == 0.7113660024817413
    assert hash_unit("verdict-42", "double", variant=UnitHash.LABELED) == 0.4057792382431645


@pytest.mark.parametrize("variant", list(UnitHash))
def test_each_variant_is_uniform_on_the_unit_interval_and_salted(variant: UnitHash) -> None:
    draws = [hash_unit(f"v{i}", "uniform", variant=variant) for i in range(20_000)]
    assert all(0.0 <= d < 1.0 for d in draws)
    assert 0.09 < sum(d < 0.1 for d in draws) / len(draws) < 0.11
    assert hash_unit("v1", "a", variant=variant) != hash_unit("v1", "b", variant=variant)


def test_ids_are_the_stored_ones() -> None:
    # Pinned from the former copies in `storage.types`, `storage.interactions`/`traffic.records` and quarantine.
    assert interaction_id("traffic:gw", "req-1") == "0da505a3caa6e27bae87c2e45bb2606d"
    assert stable_id("interaction", "traffic:gw", "req-1") == interaction_id("traffic:gw", "req-1")
    assert quarantine_id("traffic:gw", "a.jsonl:3") == "14c4f46fdf84115172fd224fd04a03a8"
    assert stable_id("ab", "c") != stable_id("a", "bc")


@pytest.mark.parametrize("source_id", ["req-1", "", "长江-42", "a\x1fb", "é" * 300, "12345678901234567890"])
def test_interaction_id_is_stable_id_of_its_parts(source_id: str) -> None:
    """`interaction_id` writes out `stable_id`'s bytes for speed: the same id for any source id."""
    assert interaction_id("traffic:源", source_id) == stable_id("interaction", "traffic:源", source_id)
