"""The rule's hash on a column of ids is `hash_unit(interaction_id(source, id), salt)`, row for row."""

from __future__ import annotations

import pyarrow as pa

from judgewatch.hashing import UnitHash, hash_unit, interaction_id
from judgewatch.traffic.columnar.unit_hashes import id_input, id_inputs, id_matrix, units_of_ids, units_of_inputs


def test_units_of_a_column_of_ids_are_hash_unit_of_each_interaction_id() -> None:
    ids = [f"chatcmpl-{i:012d}" for i in range(500)] + ["x", "长江-1", "a\x1fb"]
    for salt in ("", "judgewatch", "盐", "盐" * 40, "s" * 97, "t" * 300):  # long salts: BLAKE2b past one block
        expected = [hash_unit(interaction_id("traffic:s", i), salt, variant=UnitHash.SAMPLING) for i in ids]
        inputs = id_inputs("traffic:s", pa.array([i.encode() for i in ids], pa.binary()))
        assert inputs == [id_input("traffic:s", i) for i in ids]
        assert units_of_inputs(inputs, salt).tolist() == expected  # type: ignore[arg-type]
        matrix = id_matrix([interaction_id("traffic:s", i) for i in ids])
        assert units_of_ids(matrix, salt).tolist() == expected
