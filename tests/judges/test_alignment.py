"""An aligned judge configuration: its own config hash, examples chosen deterministically and scrubbed, shown to the
judge as chat turns, and dropped to fit a small window, on the OpenAI-compatible simulator (the prompt actually
sent is checked, as pydantic_evals' tests do)."""

from __future__ import annotations

import json
import random
from collections.abc import AsyncIterator

import pytest

from judges.alignment import EXAMPLE_REASON, Alignment, Example
from judges.base import config_hash, content_key, fit_item_ids
from judges.config import EndpointConfig
from judges.factory import chain
from judges.openai_judge import PROMPT_FORMAT, OpenAIJudge
from judges.reference import ReferenceJudge
from judges.reference_model import load_models
from judgewatch.contract.items import JudgeItem
from judgewatch.contract.rubric import Rubric
from judgewatch.contract.verdicts import JudgeIdentity, Verdict, VerdictStatus
from judgewatch.testing.simulator import SimulatorHandle, serve_simulator
from judgewatch.trust.align import choose_examples
from judgewatch.trust.align_labels import Labelled

MAX_TOKENS = 160


def _item(k: int, *, email: str = "") -> JudgeItem:
    return JudgeItem(
        id=f"interaction-{k:02d}",
        question=f"Which year did expedition {k} reach the pass?{f' Write to {email}.' if email else ''}",
        answer=f"Expedition {k} reached the pass in {1900 + k}.",
        reference_facts=[f"Expedition {k} crossed the pass in {1950 + k}, after two failed attempts."],
        language="en",
    )


def _alignment(rubric: Rubric, n: int = 3) -> Alignment:
    examples = [Example(item=_item(k), scores={"faithfulness": 1}, judge_scores={"faithfulness": 5}) for k in range(n)]
    return Alignment(rubric_name=rubric.name, rubric_hash=rubric.content_hash, kind="openai", examples=examples)


def _verdict(item: JudgeItem, scores: dict[str, int | None], rubric: Rubric) -> Verdict:
    judge = JudgeIdentity(kind="openai", name="sim", config_hash="x")
    return Verdict(item_id=item.id, status=VerdictStatus.scored, scores=scores, judge=judge, rubric=rubric.identity)


@pytest.fixture
async def small_window() -> AsyncIterator[SimulatorHandle]:
    async with serve_simulator(latency_ms=5, max_model_len=900) as handle:
        yield handle


def test_an_aligned_judge_has_its_own_config_hash_and_an_unaligned_one_keeps_its_own(rubric: Rubric) -> None:
    endpoint = EndpointConfig("http://127.0.0.1:9/v1", "m")
    plain = OpenAIJudge(endpoint).identity(rubric).config_hash
    before = config_hash(rubric, **endpoint.scoring_params(), prompt_format=PROMPT_FORMAT)  # the formula of 0.5
    assert plain == before
    aligned = OpenAIJudge(endpoint, {rubric.name: _alignment(rubric)}).identity(rubric).config_hash
    other = OpenAIJudge(endpoint, {rubric.name: _alignment(rubric, n=2)}).identity(rubric).config_hash
    assert len({plain, aligned, other}) == 3  # the examples are part of the configuration
    refit = load_models().models["default"]
    models = {
        "version": "3.0.1+aligned",
        "models": {
            name: {"coefficients": dict(m.coefficients), "intercept": m.intercept + (name == "default")}
            for name, m in load_models().models.items()
        },
        "fit_items": {"review_labels": ["abc"]},
    }
    assert refit.intercept != models["models"]["default"]["intercept"]  # type: ignore[index]
    reference = Alignment(rubric_name=rubric.name, rubric_hash=rubric.content_hash, kind="reference", models=models)
    assert ReferenceJudge({rubric.name: reference}).identity(rubric) != ReferenceJudge().identity(rubric)
    assert "abc" in ReferenceJudge({rubric.name: reference}).fit_item_ids()


def test_a_chain_names_the_examples_questions_as_fit_items_so_validation_leaves_them_out(rubric: Rubric) -> None:
    judge = chain([OpenAIJudge(EndpointConfig("http://127.0.0.1:9/v1", "m"), {rubric.name: _alignment(rubric)})])
    assert fit_item_ids(judge) == {content_key(_item(k).question) for k in range(3)}


def test_an_alignment_built_under_other_rubric_content_is_not_used(rubric: Rubric) -> None:
    endpoint = EndpointConfig("http://127.0.0.1:9/v1", "m")
    stale = _alignment(rubric).model_copy(update={"rubric_hash": "0" * 16})
    assert OpenAIJudge(endpoint, {rubric.name: stale}).identity(rubric) == OpenAIJudge(endpoint).identity(rubric)


def test_examples_are_the_largest_disagreements_in_a_fixed_order_and_scrubbed(rubric: Rubric) -> None:
    items = [_item(k, email=f"walker{k}@example.org") for k in range(8)]
    labels = [Labelled(item, {"faithfulness": 5, "relevance": 5}) for item in items]
    judged = [  # disagreement 4, 1 (within the tolerance), 3, 2, 4, 0, 3, N/A
        {"faithfulness": 1},
        {"faithfulness": 4},
        {"faithfulness": 2},
        {"faithfulness": 3},
        {"faithfulness": 5, "relevance": 1},
        {"faithfulness": 5},
        {"faithfulness": 2},
        {"faithfulness": None},
    ]
    verdicts = [_verdict(item, scores, rubric) for item, scores in zip(items, judged, strict=True)]
    examples, disagreeing = choose_examples(labels, verdicts, max_examples=4)
    assert disagreeing == 5
    assert [e.item.id for e in examples][:2] in (
        ["interaction-00", "interaction-04"],
        ["interaction-04", "interaction-00"],
    )
    assert {e.item.id for e in examples[2:]} == {"interaction-02", "interaction-06"}  # gap 3; gap 2 is fifth
    assert all("@example.org" not in e.item.question and "[EMAIL]" in e.item.question for e in examples)
    assert examples[0].scores == {"faithfulness": 5, "relevance": 5}
    pairs = list(zip(labels, verdicts, strict=True))
    random.Random(7).shuffle(pairs)
    again, _ = choose_examples([p[0] for p in pairs], [p[1] for p in pairs], max_examples=4)
    assert again == examples  # the order the items come in does not matter


async def test_the_prompt_sent_carries_the_examples_between_the_rubric_and_the_item(
    sim: SimulatorHandle, rubric: Rubric
) -> None:
    alignment = _alignment(rubric)
    judge = OpenAIJudge(EndpointConfig(sim.base_url, "sim-judge", max_tokens=MAX_TOKENS), {rubric.name: alignment})
    try:
        verdict = await judge.judge(_item(42), rubric)
    finally:
        await judge.aclose()
    assert verdict.status is VerdictStatus.scored and verdict.trimmed is None
    sent = sim.state.captured[-1]["messages"]
    assert [m["role"] for m in sent] == [
        "system",
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
    ]
    for k, (question, reply) in enumerate(zip(sent[1:-1:2], sent[2:-1:2], strict=True)):
        assert f"Which year did expedition {k} reach the pass?" in question["content"]
        assert json.loads(reply["content"]) == {"faithfulness": 1, "reason": EXAMPLE_REASON}
    assert "expedition 42" in sent[-1]["content"] and "expedition 0" not in sent[-1]["content"]


async def test_a_small_window_drops_the_last_examples_first_and_the_verdict_records_it(
    small_window: SimulatorHandle, rubric: Rubric
) -> None:
    alignment = _alignment(rubric, n=6)
    endpoint = EndpointConfig(small_window.base_url, "sim-judge", max_tokens=MAX_TOKENS)
    judge = OpenAIJudge(endpoint, {rubric.name: alignment})
    try:
        verdict = await judge.judge(_item(42), rubric)
    finally:
        await judge.aclose()
    assert verdict.status is VerdictStatus.scored
    trim = verdict.trimmed
    assert trim is not None and trim.examples_given == 6 and 0 < trim.examples_dropped < 6
    assert trim.passages_kept == trim.passages_given == 1  # the item's own reference is kept whole
    assert f"dropped {trim.examples_dropped} of 6 few-shot examples" in trim.note
    sent = small_window.state.captured[-1]["messages"]
    kept = 6 - trim.examples_dropped
    assert len(sent) == 2 + 2 * kept
    assert [f"expedition {k} reach" in m["content"] for k, m in enumerate(sent[1:-1:2])] == [True] * kept
