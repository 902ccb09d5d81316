"""`select_matching`: the one "rows equal to every given filter" query the storage modules share."""

from __future__ import annotations

from sqlalchemy import Engine

from judgewatch.storage.db import select_matching, session_scope
from judgewatch.storage.runs import EvalRun, RunKind, RunStatus, start_run


def _start(engine: Engine, kind: RunKind, name: str) -> str:
    with session_scope(engine, write=True) as session:
        return start_run(session=session, kind=kind, name=name, identity=name).id


def test_given_filters_narrow_the_rows_and_a_filter_left_at_none_narrows_nothing(engine: Engine) -> None:
    file_a = _start(engine, RunKind.file, "a.jsonl")
    file_b = _start(engine, RunKind.file, "b.jsonl")
    validation = _start(engine, RunKind.validation, "golden")
    with session_scope(engine) as session:

        def ids(**equal: object) -> set[str]:
            return {run.id for run in session.scalars(select_matching(EvalRun, **equal))}

        assert ids() == {file_a, file_b, validation}
        assert ids(kind=RunKind.file.value, status=None) == {file_a, file_b}
        assert ids(kind=RunKind.file.value, name="b.jsonl") == {file_b}
        assert ids(kind=RunKind.validation.value, status=RunStatus.completed.value) == set()
