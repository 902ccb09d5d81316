"""A live tier's effective request: its identity, its configuration hash and summary, and the endpoint check."""

from __future__ import annotations

import json
from pathlib import Path

from judgewatch.regression.answer_prompt import AnswerTemplate, answer_messages
from judgewatch.regression.generation import TierRequest, check_live_tier, config_change
from judgewatch.regression.golden import GoldenItem
from judgewatch.regression.serving import TierParams, TierSpec, parse_tier
from judgewatch.storage.types import stable_id
from judgewatch.testing.conversations import weather_row

ITEM = GoldenItem(id="q1", question="Who?", reference_facts=["A."], context=["C."], language="en")
TEMPLATE = AnswerTemplate(name="t.j2", text="{% block user %}{{ question }} / {{ context | join }}{% endblock %}")


def live(**fields: object) -> TierSpec:
    return parse_tier("full=http://127.0.0.1:9/v1#acme").model_copy(update=fields)


def test_a_command_line_tier_keeps_the_request_identity_it_always_had() -> None:
    request = TierRequest(live(), max_tokens=256, seed=1234)
    messages = request.messages(ITEM)
    assert messages == answer_messages("Who?", ["A."], "en")
    legacy = stable_id("generation", "acme", 256, 1234, json.dumps(messages, ensure_ascii=False))
    assert request.request_hash(messages) == legacy  # answers stored before tiers files are still reused


def test_template_params_and_headers_change_the_configuration_but_the_key_does_not() -> None:
    base = TierRequest(live(), max_tokens=256, seed=1)
    templated = TierRequest(live(template=TEMPLATE), max_tokens=256, seed=1)
    assert templated.messages(ITEM) == [{"role": "user", "content": "Who? / C."}]
    hashes = {
        base.config_hash,
        templated.config_hash,
        TierRequest(live(template=AnswerTemplate("t.j2", TEMPLATE.text + " ")), 256, 1).config_hash,
        TierRequest(live(params=TierParams(temperature=0.5)), 256, 1).config_hash,
        TierRequest(live(params=TierParams(extra_body={"top_k": 3})), 256, 1).config_hash,
        TierRequest(live(headers={"X-Route": "b"}), 256, 1).config_hash,
        TierRequest(live(), 128, 1).config_hash,
    }
    assert len(hashes) == 7
    assert TierRequest(live(api_key_env="OTHER_KEY"), 256, 1).config_hash == base.config_hash
    messages = base.messages(ITEM)
    with_stop = TierRequest(live(params=TierParams(stop=["\n"])), 256, 1)
    assert with_stop.request_hash(messages) != base.request_hash(messages)


def test_the_summary_shows_the_configuration_with_secrets_masked() -> None:
    spec = live(
        template=TEMPLATE,
        api_key_env="GW_KEY",
        headers={"X-Route": "full", "X-Api-Key": "literal-secret", "X-Tenant": "${TENANT}"},
        params=TierParams(max_tokens=32, stop=["END"]),
        base_url="http://user:pw@127.0.0.1:9/v1",
    )
    summary = TierRequest(spec, 256, 7).summary()
    assert summary["url"] == "http://user:***@127.0.0.1:9/v1" and summary["model"] == "acme"
    assert summary["template"] == "t.j2" and summary["template_hash"] == TEMPLATE.hash
    assert summary["params"] == {"temperature": 0.0, "max_tokens": 32, "seed": 7, "stop": ["END"]}
    assert summary["headers"] == {"X-Route": "full", "X-Api-Key": "***", "X-Tenant": "${TENANT}"}
    assert summary["api_key"] == "$GW_KEY (masked)" and "pw" not in json.dumps(summary)
    assert spec.source == "live:http://user:***@127.0.0.1:9/v1#acme"


def test_a_changed_configuration_against_the_baseline_is_noted_with_what_changed() -> None:
    before = TierRequest(live(), 256, 1).summary()
    after = TierRequest(live(template=TEMPLATE), 256, 1).summary()
    note = config_change("full", "r1", before, after)
    assert note is not None and note.startswith("tier full: serving configuration changed since baseline r1")
    assert "changed: template, template_hash" in note
    assert config_change("full", "r1", before, dict(before)) is None
    assert config_change("full", "r1", None, after) is None  # a recorded or older baseline: nothing to compare


async def test_an_unset_key_variable_is_named_before_anything_is_sent(tmp_path: Path) -> None:
    spec = live(api_key_env="JW_TEST_UNSET_KEY_42", origin=str(tmp_path / "tiers.yaml"))
    why = await check_live_tier(spec)
    assert why == f"environment variable JW_TEST_UNSET_KEY_42 is not set (api_key_env of tier full in {spec.origin})"
    assert await check_live_tier(parse_tier("full=http://127.0.0.1:9/v1#m")) == (
        "http://127.0.0.1:9/v1 did not answer GET /models (model m)"
    )


def test_a_golden_conversation_sends_its_earlier_exchanges_before_the_question() -> None:
    turns = weather_row()["messages"]
    item = GoldenItem.model_validate({"id": "c1", "language": "en", "messages": turns, "reference_facts": ["18 C."]})
    messages = TierRequest(live(), max_tokens=256, seed=1).messages(item)
    built = answer_messages("What is the weather in Paris right now?", ["18 C."], "en")
    assert messages == [
        built[0],
        {"role": "user", "content": "I am flying to Paris on Friday."},
        {"role": "assistant", "content": "Have a good trip! Anything I can check for you?"},
        built[1],
    ]
    templated = TierRequest(live(template=TEMPLATE), max_tokens=256, seed=1).messages(item)
    assert [m["role"] for m in templated] == ["user", "assistant", "user"]
    assert TierRequest(live(), 256, 1).messages(ITEM) == answer_messages("Who?", ["A."], "en")  # a question: as before
