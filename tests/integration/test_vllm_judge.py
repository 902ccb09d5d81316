"""The real judge: SmolLM2-135M-Instruct served by the vLLM CPU build, driven through `judgewatch judge`."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from judgewatch.contract.reply import verdict_schema
from judgewatch.contract.rubric import load_rubric
from judgewatch.settings import REPO_ROOT

logger = logging.getLogger(__name__)

pytestmark = [pytest.mark.vllm, pytest.mark.slow]

REASONS = {"parse_error", "truncated", "timeout", "endpoint_down", "refused", "rate_limited", "judge_error"}


def _real_items(n_per_language: int) -> list[dict[str, object]]:
    """Good and hallucinated answers from HaluEval QA (en) and HalluQA (zh), with their references."""
    rows: list[dict[str, object]] = []
    for name in ("halueval_qa_mini", "halluqa_mini"):
        lines = (REPO_ROOT / "datasets" / name / "data.jsonl").read_text(encoding="utf-8").splitlines()
        for k, line in enumerate(lines[: n_per_language // 2]):
            item = json.loads(line)
            for kind in ("good_answers", "bad_answers"):
                rows.append(
                    {
                        "id": f"{item['id']}-{kind[:-8]}-{k}",
                        "question": item["question"],
                        "answer": item[kind][0],
                        "reference_answer": item["reference_answer"],
                        "reference_facts": item["reference_facts"],
                        "language": item["language"],
                    }
                )
    return rows


def test_twenty_real_items_each_get_a_schema_valid_verdict_or_an_explicit_unscored_status(
    vllm_url: str, tmp_path: Path
) -> None:
    items = _real_items(10)
    assert len(items) == 20
    source = tmp_path / "items.jsonl"
    source.write_text("".join(json.dumps(i, ensure_ascii=False) + "\n" for i in items), encoding="utf-8")
    out = tmp_path / "verdicts.jsonl"
    env = {**os.environ, "JUDGEWATCH_DATABASE_URL": f"sqlite:///{tmp_path / 'jw.db'}"}
    proc = subprocess.run(
        [
            sys.executable, "-m", "judgewatch", "judge", "--rubric", "answer_quality", "--input", str(source),
            "--output", str(out), "--judge", vllm_url, "--model", "smollm2-135m-instruct", "--no-fallback-reference",
        ],
        capture_output=True, text=True, timeout=600, env=env,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert sorted(r["id"] for r in rows) == sorted(str(i["id"]) for i in items)

    rubric = load_rubric("answer_quality")
    schema = verdict_schema(rubric, [c.name for c in rubric.criteria])
    for row in rows:
        assert row["judge"]["kind"] == "openai" and row["judge"]["name"] == "smollm2-135m-instruct"
        assert row["rubric"]["hash"] == rubric.content_hash
        if row["status"] == "scored":
            for criterion, bounds in schema["properties"].items():
                if criterion != "reason":
                    assert bounds["minimum"] <= row["scores"][criterion] <= bounds["maximum"]
            assert row["tokens"]["prompt"] > 0 and row["latency_ms"] > 0
        else:
            assert row["status"] == "unscored" and row["unscored_reason"] in REASONS, row
    scored = sum(r["status"] == "scored" for r in rows)
    reasons = [r["unscored_reason"] for r in rows if r["unscored_reason"]]
    logger.info("real vLLM judge: %d/20 scored, unscored reasons: %s", scored, reasons)
