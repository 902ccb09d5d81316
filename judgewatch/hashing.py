"""Deterministic ids and draws: the same inputs give the same value on any machine, in any release. Pure standard
library, so the traffic readers and the CLI import it without SQLAlchemy.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from enum import StrEnum
from hashlib import blake2b, sha256

TWO_64 = float(2**64)


class UnitHash(StrEnum):
    """Which bytes `hash_unit` digests. Changing either would re-draw decisions already stored; a new use takes
    `LABELED`."""

    SAMPLING = "sampling"
    """blake2b(salt + key): the traffic sampler's rule (`traffic.sampling.decide`, on both of its paths); stored
    picks and watermarks were decided with it."""
    LABELED = "labeled"
    """sha256("judgewatch:{salt}:{key}"): review routing (which verdicts go to review, which are labelled twice),
    whose stored review items were routed with it; the demo's picks use it too."""


def hash_unit(key: str, salt: str = "", *, variant: UnitHash) -> float:
    """A number in [0, 1) fixed by (key, salt, variant): the same key gets the same draw everywhere, forever."""
    return hash_units((key,), salt, variant=variant)[0]


def hash_units(keys: Iterable[str], salt: str = "", *, variant: UnitHash) -> list[float]:
    """`hash_unit` of each key, in one pass (a sampled block's eligible rows)."""
    if variant is UnitHash.SAMPLING:
        digests = [blake2b((salt + key).encode()).digest() for key in keys]
    else:
        digests = [sha256(f"judgewatch:{salt}:{key}".encode()).digest() for key in keys]
    return [int.from_bytes(digest[:8], "big") / TWO_64 for digest in digests]


def stable_id(*parts: object) -> str:
    """32 hex digits of sha256 over the parts: the same parts give the same id on any machine."""
    digest = hashlib.sha256()
    for part in parts:
        digest.update(str(part).encode())
        digest.update(b"\x1f")  # unit separator: ("ab", "c") and ("a", "bc") must differ
    return digest.hexdigest()[:32]


def interaction_id(source: str, source_id: str) -> str:
    """Stable id of one call: the same (source, source id) always gives the same id, on any machine."""
    return interaction_ids(source, (source_id,))[0]


def interaction_ids(source: str, source_ids: Iterable[str]) -> list[str]:
    """`interaction_id` of each source id of one source, in one pass: `stable_id("interaction", source, id)`, its
    bytes written out for one sha256 call a row (tests/judgewatch/test_hashing.py holds the two equal)."""
    head = f"interaction\x1f{source}\x1f"
    return [sha256(f"{head}{source_id}\x1f".encode()).hexdigest()[:32] for source_id in source_ids]


def quarantine_id(source: str, position: str) -> str:
    """Key of a quarantined row, for an idempotent upsert: its source and position ("path:line", "table#id=N")."""
    return stable_id("quarantine", source, position)
