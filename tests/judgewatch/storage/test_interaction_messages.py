"""A conversation's turns are stored with its interaction and read back whole, on SQLite and PostgreSQL."""

from __future__ import annotations

from sqlalchemy import Engine
from sqlmodel import select

from judgewatch.contract.items import JudgeItem
from judgewatch.storage.db import session_scope
from judgewatch.storage.interactions import Interaction, interaction_id, upsert_item_rows
from judgewatch.testing.conversations import weather_row


def test_turns_with_tool_calls_round_trip_and_a_single_question_stores_none(engine: Engine) -> None:
    conversation = JudgeItem.model_validate(weather_row("c1"))
    single = JudgeItem(id="s1", question="Who wrote Hamlet?", answer="Shakespeare.")
    with session_scope(engine) as session:
        upsert_item_rows(session=session, source="file:/x.jsonl", items=[conversation, single])
    with session_scope(engine) as session:
        stored = {i.source_id: i for i in session.exec(select(Interaction)).all()}
        assert stored["s1"].messages is None
        turns = stored["c1"].messages or []
        assert turns[4] == {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": "call_1", "name": "get_weather", "arguments": '{"city": "Paris"}'}],
        }
        assert turns[5] == {"role": "tool", "content": '{"city": "Paris", "temp_c": 18}', "tool_call_id": "call_1"}
        assert stored["c1"].to_item() == conversation.model_copy(update={"language": "en"})
        assert stored["c1"].id == interaction_id("file:/x.jsonl", "c1")


def test_judging_again_updates_the_stored_turns(engine: Engine) -> None:
    first = JudgeItem.model_validate(weather_row("c1"))
    turns = weather_row()["messages"]
    turns[5] = {**turns[5], "content": '{"temp_c": 21}'}
    second = JudgeItem.model_validate(weather_row("c1", messages=turns))
    for item in (first, second):
        with session_scope(engine) as session:
            upsert_item_rows(session=session, source="file:/x.jsonl", items=[item])
    with session_scope(engine) as session:
        (stored,) = session.exec(select(Interaction)).all()
        assert (stored.messages or [])[5]["content"] == '{"temp_c": 21}'
