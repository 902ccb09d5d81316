"""The sampling rule's hash for a column of source ids: `hash_unit(interaction_id(...), variant=SAMPLING)`.

The two digests per row (sha256 for the interaction id, blake2b for the decision) are the rule itself: one
hashlib call of each a row, and everything around them (hex-encoding, cutting the id to 32 digits, prefixing the
salt, reading the first 8 bytes as a big-endian integer) done on whole arrays. The same floats as
`hashing.hash_unit` (tests/judgewatch/traffic/test_unit_hashes.py). A C version of this loop gave x1.22 on
`bench/sampling.py` (Parquet; lost in the parse on JSONL) and was removed so that setup needs no compiler.
"""

from __future__ import annotations

from collections.abc import Sequence
from hashlib import blake2b

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from judgewatch.hashing import TWO_64

try:  # CPython 3.11's own SHA-256: the same digest as OpenSSL's, with less overhead per (short) call
    from _sha256 import sha256
except ImportError:  # pragma: no cover - other interpreters
    from hashlib import sha256


def id_inputs(source: str, source_ids: pa.Array) -> list[bytes | None]:
    """Per row what `hashing.interaction_id(source, id)` hashes (None where the id is null)."""
    prefix = pa.scalar(b"interaction\x1f" + source.encode() + b"\x1f", pa.binary())
    return pc.binary_join_element_wise(prefix, source_ids, pa.scalar(b"\x1f", pa.binary()), b"").to_pylist()


def id_input(source: str, source_id: str) -> bytes:
    return b"interaction\x1f" + source.encode() + b"\x1f" + source_id.encode() + b"\x1f"


def units_of_inputs(inputs: Sequence[bytes], salt: str) -> np.ndarray:
    """`hash_unit(interaction id, salt, variant=SAMPLING)` per row, from what each id hashes (`id_inputs`)."""
    hexed = b"".join([sha256(m).digest() for m in inputs]).hex().encode()
    return units_of_ids(np.frombuffer(hexed, dtype=np.uint8).reshape(-1, 64)[:, :32], salt)


def units_of_ids(ids: np.ndarray, salt: str) -> np.ndarray:
    """`hash_unit` per row of a matrix of interaction ids (one row of 32 ASCII hex digits each)."""
    salted = salt.encode()
    width = len(salted) + ids.shape[1]
    messages = np.empty((len(ids), width), dtype=np.uint8)
    messages[:, : len(salted)] = np.frombuffer(salted, dtype=np.uint8)
    messages[:, len(salted) :] = ids
    # One bytes object per row; `S` drops trailing zero bytes, and a row ends in a hex digit, never in one.
    rows = messages.view(f"S{width}").ravel().tolist()
    digests = np.frombuffer(b"".join([blake2b(m).digest() for m in rows]), dtype=np.uint8).reshape(-1, 64)
    first8 = np.ascontiguousarray(digests[:, :8]).view(">u8").ravel()
    return first8.astype(np.float64) / TWO_64


def id_matrix(interaction_ids: Sequence[str]) -> np.ndarray:
    """Interaction ids (32 hex digits each) as a matrix for `units_of_ids`."""
    return np.frombuffer("".join(interaction_ids).encode(), dtype=np.uint8).reshape(-1, 32)
