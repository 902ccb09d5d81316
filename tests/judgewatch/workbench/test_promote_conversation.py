"""A reviewed conversation promoted to a golden set keeps its turns, scrubbed, and loads back as a conversation."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

from judgewatch.contract.items import JudgeItem
from judgewatch.regression.golden import load_golden_set
from judgewatch.storage.interactions import Interaction
from judgewatch.testing.conversations import weather_row
from judgewatch.workbench.promote import golden_row


def _row(item: JudgeItem) -> SimpleNamespace:
    interaction = Interaction.from_item(item, source="traffic:app")
    return SimpleNamespace(interaction=interaction, final_scores=None, labels=[])


def test_a_promoted_conversation_keeps_its_turns_scrubbed_and_loads_as_one(tmp_path: Path) -> None:
    turns = weather_row()["messages"]
    turns[1] = {"role": "user", "content": "I am flying to Paris on Friday, mail me at jane.doe@example.com."}
    item = JudgeItem.model_validate(weather_row("c1", messages=turns))
    row = golden_row(_row(item), {"faithfulness": 5}, criterion="faithfulness", good_at=4, bad_at=2)  # type: ignore[arg-type]
    assert row["messages"][1]["content"] == "I am flying to Paris on Friday, mail me at [EMAIL]."
    assert row["messages"][4]["tool_calls"][0]["name"] == "get_weather"
    single = golden_row(_row(JudgeItem(id="s", question="Q?", answer="A.")), {"faithfulness": 5},  # type: ignore[arg-type]
                        criterion="faithfulness", good_at=4, bad_at=2)  # fmt: skip
    assert "messages" not in single
    (tmp_path / "promoted.jsonl").write_text(json.dumps(row) + "\n" + json.dumps(single) + "\n")
    (first, _) = load_golden_set(tmp_path / "promoted.jsonl").items
    loaded = first.to_judge_item(first.good_answers[0])
    assert loaded.is_conversation and loaded.question == "What is the weather in Paris right now?"
