"""Probability-weighted verdicts against the real vLLM judge: what the request asks for, what the verdict keeps.

vLLM applies the json_schema grammar's mask before it computes log-probabilities, so at each score the
alternatives are the scale's digits (the rest at -9999): the verdict's float is a mean over levels 1-5.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from aiohttp import web

from judges.config import EndpointConfig
from judges.openai_judge import OpenAIJudge
from judgewatch.contract.items import JudgeItem
from judgewatch.contract.rubric import Rubric, load_rubric
from judgewatch.contract.verdicts import ScoreReading, VerdictStatus
from judgewatch.testing.openai_stub import openai_stub

from .conftest import VLLM_MODEL

pytestmark = [pytest.mark.vllm, pytest.mark.slow]

ITEM = JudgeItem(
    id="paris",
    question="What is the capital of France?",
    answer="Lyon is the capital of France.",
    reference_answer="Paris is the capital of France.",
)


async def test_the_request_asks_for_logprobs_and_the_verdict_carries_each_scores_float(vllm_url: str) -> None:
    rubric = load_rubric("answer_quality")
    sent: list[dict[str, Any]] = []
    replies: list[dict[str, Any]] = []
    async with httpx.AsyncClient(base_url=vllm_url, timeout=120) as upstream:

        async def models(_request: web.Request) -> web.Response:
            return web.json_response((await upstream.get("/models")).json())

        async def chat(request: web.Request) -> web.Response:  # records the body, then lets vLLM answer it
            body = await request.json()
            sent.append(body)
            replies.append((await upstream.post("/chat/completions", json=body)).json())
            return web.json_response(replies[-1])

        async with openai_stub(models, chat) as proxy:
            judge = OpenAIJudge(EndpointConfig(proxy, VLLM_MODEL, logprobs=True, top_logprobs=8, fit_prompt=False))
            verdict = await judge.judge(ITEM, rubric)
            await judge.aclose()

    (body,) = sent
    assert body["logprobs"] is True and body["top_logprobs"] == 8 and body["response_format"]["type"] == "json_schema"
    assert verdict.status is VerdictStatus.scored, verdict.detail
    assert verdict.score_reading is ScoreReading.expected
    assert set(verdict.expected_scores) == {c.name for c in rubric.criteria}
    for name, value in verdict.expected_scores.items():
        assert rubric.scale.min <= value <= rubric.scale.max
        assert _mean_at_score(replies[0], name, rubric) == pytest.approx(value, abs=1e-3)


def _mean_at_score(reply: dict[str, Any], criterion: str, rubric: Rubric) -> float:
    """The levels' mean read straight off vLLM's tokens: the first digit after the criterion's key."""
    tokens = reply["choices"][0]["logprobs"]["content"]
    text = ""
    for entry in tokens:
        if text.endswith(f'"{criterion}":'):
            levels = {
                int(a["token"]): a["logprob"]
                for a in entry["top_logprobs"]
                if a["token"].isdigit() and rubric.scale.min <= int(a["token"]) <= rubric.scale.max
            }
            weights = {level: math.exp(lp) for level, lp in levels.items()}
            return sum(level * w for level, w in weights.items()) / sum(weights.values())
        text += entry["token"]
    raise AssertionError(f"no score token for {criterion} in {text!r}")


def test_judge_with_the_logprobs_setting_writes_the_floats_beside_the_integers(vllm_url: str, tmp_path: Path) -> None:
    source = tmp_path / "items.jsonl"
    source.write_text(json.dumps(ITEM.model_dump(mode="json")) + "\n", encoding="utf-8")
    out = tmp_path / "verdicts.jsonl"
    env = {
        **os.environ,
        "JUDGEWATCH_DATABASE_URL": f"sqlite:///{tmp_path / 'jw.db'}",
        "JUDGEWATCH_JUDGE_LOGPROBS": "true",
        "JUDGEWATCH_JUDGE_TOP_LOGPROBS": "5",
    }
    proc = subprocess.run(
        [
            sys.executable, "-m", "judgewatch", "judge", "--rubric", "answer_quality", "--input", str(source),
            "--output", str(out), "--judge", vllm_url, "--model", VLLM_MODEL, "--no-fallback-reference",
        ],
        capture_output=True, text=True, timeout=600, env=env,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    (row,) = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert row["status"] == "scored" and row["score_reading"] == "expected", row
    assert set(row["expected_scores"]) == set(row["scores"])
    assert all(1.0 <= value <= 5.0 for value in row["expected_scores"].values())
