"""Conversations in the judge's input contract: OpenAI chat turns, the question and answer read off them."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from judgewatch.contract.items import JudgeItem, item_problem
from judgewatch.contract.messages import ChatMessage, conversation_parts, is_conversation
from judgewatch.testing.conversations import weather_row


def test_an_openai_conversation_becomes_turns_with_the_last_user_turn_as_question() -> None:
    item = JudgeItem.model_validate(weather_row())
    assert item.question == "What is the weather in Paris right now?"
    assert item.is_conversation
    call = item.messages[4].tool_calls[0]  # type: ignore[index]
    assert (call.id, call.name, call.arguments) == ("call_1", "get_weather", '{"city": "Paris"}')
    assert item.messages[5].tool_call_id == "call_1"  # type: ignore[index]
    parts = conversation_parts(item.messages)
    assert [m.role for m in parts.earlier] == ["system", "user", "assistant"]
    assert parts.question is not None and parts.question.content == item.question
    assert [m.role for m in parts.steps] == ["assistant", "tool"]


def test_the_final_assistant_turn_is_the_answer_when_none_is_given_apart() -> None:
    row = weather_row()
    del row["answer"]
    row["messages"].append({"role": "assistant", "content": [{"type": "text", "text": "18 °C."}]})
    item = JudgeItem.model_validate(row)
    assert item.answer == "18 °C."
    assert [m.role for m in item.messages or []][-1] == "tool"  # the answer is not also a turn


def test_a_given_question_wins_and_a_single_question_is_not_a_conversation() -> None:
    item = JudgeItem.model_validate(
        {
            "id": "x",
            "question": "Q?",
            "answer": "A.",
            "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U?"}],
        }
    )
    assert item.question == "Q?" and not item.is_conversation
    assert JudgeItem.model_validate({"id": "x", "question": "q", "answer": "a", "messages": []}).messages is None


def test_turns_dump_without_their_empty_fields_and_read_back_the_same() -> None:
    item = JudgeItem.model_validate(weather_row())
    dumped = item.model_dump()["messages"]
    assert dumped[0] == {"role": "system", "content": "You are a travel assistant. Use the tools for live data."}
    assert dumped[4]["tool_calls"] == [{"id": "call_1", "name": "get_weather", "arguments": '{"city": "Paris"}'}]
    assert JudgeItem.model_validate(item.model_dump()) == item


def test_other_spellings_of_roles_and_calls_are_read() -> None:
    developer = ChatMessage.model_validate({"role": "developer", "content": "Be brief."})
    legacy = ChatMessage.model_validate({"role": "assistant", "function_call": {"name": "f", "arguments": {"a": 1}}})
    result = ChatMessage.model_validate({"role": "function", "name": "f", "content": "ok"})
    assert developer.role == "system"
    assert legacy.tool_calls[0].name == "f" and legacy.tool_calls[0].arguments == '{"a": 1}'
    assert (result.role, result.name) == ("tool", "f")
    assert is_conversation([developer, ChatMessage(role="user", content="q"), legacy])


@pytest.mark.parametrize(
    ("turn", "problem"),
    [
        ({"role": "bot", "content": "x"}, "field 'messages[1].role': Input should be 'system', 'user', 'assistant'"),
        ({"role": "user", "content": "x", "tool_calls": [{"function": {"name": "f"}}]},
         "field 'messages[1]': only an assistant turn calls tools (this one is user)"),
        ({"role": "user", "content": 5}, "field 'messages[1].content': Input should be a valid string"),
        ({"role": "assistant", "tool_calls": [{"id": "c"}]}, "field 'messages[1].tool_calls[0].name': Field required"),
    ],
)  # fmt: skip
def test_a_bad_turn_is_one_line_naming_its_field(turn: dict[str, object], problem: str) -> None:
    with pytest.raises(ValidationError) as caught:
        JudgeItem.model_validate({"id": "x", "answer": "a", "messages": [{"role": "user", "content": "q"}, turn]})
    assert item_problem(caught.value).startswith(problem)


def test_no_question_and_no_user_turn_says_where_the_question_was_looked_for() -> None:
    with pytest.raises(ValidationError) as caught:
        JudgeItem.model_validate({"id": "x", "answer": "a", "messages": [{"role": "system", "content": "s"}]})
    assert item_problem(caught.value) == "field 'question': missing, and no user turn in messages to read it from"


def test_the_scrub_covers_every_turn_content_tool_arguments_and_results_and_keeps_clean_turns() -> None:
    from collections import Counter

    from judgewatch.contract.pii import Scrubber, scrub_content

    row = weather_row()
    row["messages"][1]["content"] = "Reach me at jane.doe@example.com."
    row["messages"][4]["tool_calls"][0]["function"]["arguments"] = '{"ip": "192.168.13.77"}'
    row["messages"][5]["content"] = "Booked under IBAN GB82WEST12345698765432."
    item = JudgeItem.model_validate(row)
    counts: Counter[str] = Counter()
    clean = scrub_content(item, Scrubber(), counts)
    turns = clean.messages or []
    assert turns[1].content == "Reach me at [EMAIL]."
    assert turns[4].tool_calls[0].arguments == '{"ip": "[IP]"}' and turns[4].tool_calls[0].name == "get_weather"
    assert turns[5].content == "Booked under IBAN [IBAN]." and turns[5].tool_call_id == "call_1"
    assert turns[0] is (item.messages or [])[0]  # nothing found: the same turn
    assert counts == Counter({"email": 1, "ip": 1, "iban": 1})


def test_turns_stored_before_they_were_checked_do_not_stop_the_item_from_being_judged() -> None:
    from judgewatch.storage.interactions import Interaction

    stored = Interaction(id="i", source="traffic:old", source_id="1", question="Q?", answer="A.",
                         messages=[{"role": "model", "content": "hi"}, {"role": "user", "content": "Q?"}])  # fmt: skip
    item = stored.to_item()
    assert (item.question, item.messages) == ("Q?", None)
