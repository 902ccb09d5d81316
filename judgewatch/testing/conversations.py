"""A conversation with a tool call, as a `judge --input` row in the OpenAI chat format: the tests' shared example."""

from __future__ import annotations

import json
from typing import Any


def weather_row(item_id: str = "conv-1", **changes: Any) -> dict[str, Any]:
    """Two user turns; the second makes the assistant call `get_weather`, whose result the final answer uses."""
    row: dict[str, Any] = {
        "id": item_id,
        "messages": [
            {"role": "system", "content": "You are a travel assistant. Use the tools for live data."},
            {"role": "user", "content": "I am flying to Paris on Friday."},
            {"role": "assistant", "content": "Have a good trip! Anything I can check for you?"},
            {"role": "user", "content": "What is the weather in Paris right now?"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": json.dumps({"city": "Paris"})},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": json.dumps({"city": "Paris", "temp_c": 18})},
        ],
        "answer": "It is 18 °C in Paris right now.",
        "reference_facts": ["The weather service reports 18 °C in Paris."],
    }
    row.update(changes)
    return row
