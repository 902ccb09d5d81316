"""The rule's hash on a column of ids is `hash_unit(interaction_id(source, id), salt)`, row for row."""

from __future__ import annotations

import pyarrow as pa

from judgewatch.hashing import UnitHash, hash_unit, interaction_id
from judgewatch.traffic.unit_hashes import id_input, id_inputs, id_matrix, units_of_ids, units_of_inputs


def test_units_of_a_column_of_ids_are_hash_unit_of_each_interaction_id() -> None:
    ids = [f"chatcmpl-{i:012d}" for i in range(500)] + ["x", "长江-1", "a\x1fb"]
    for salt in ("", "judgewatch", "盐"):
        expected = [hash_unit(interaction_id("traffic:s", i), salt, variant=UnitHash.SAMPLING) for i in ids]
        inputs = id_inputs("traffic:s", pa.array([i.encode() for i in ids], pa.binary()))
        assert inputs == [id_input("traffic:s", i) for i in ids]
        assert units_of_inputs(inputs, salt).tolist() == expected  # type: ignore[arg-type]
        matrix = id_matrix([interaction_id("traffic:s", i) for i in ids])
        assert units_of_ids(matrix, salt).tolist() == expected


def test_the_c_extension_is_built_and_gives_the_python_rules_floats_bit_for_bit() -> None:
    """`make setup` builds `_unit_hash` (gcc and libssl-dev, which scripts/native_deps.sh installs); the block path
    then hashes through it. Salts up to 300 bytes take BLAKE2b past one 128-byte block; ids of any length and
    bytes."""
    import random

    import judgewatch.traffic.unit_hashes as unit_hashes

    assert unit_hashes.NATIVE, "judgewatch.traffic._unit_hash is not built: `make setup` needs gcc and libssl-dev"
    rng = random.Random(16)
    inputs = [id_input("traffic:s", f"chatcmpl-{i:012d}") for i in range(300)]
    inputs += [rng.randbytes(rng.randrange(0, 400)) for _ in range(300)] + [b""]
    for salt in ("", "judgewatch", "盐" * 40, "s" * 95, "s" * 96, "s" * 97, "t" * 300):
        native = unit_hashes.units_of_inputs(inputs, salt)
        assert native.tolist() == unit_hashes.python_units_of_inputs(inputs, salt).tolist(), len(salt)
        first = interaction_id("traffic:s", "chatcmpl-000000000000")
        assert native[0] == hash_unit(first, salt, variant=UnitHash.SAMPLING)
