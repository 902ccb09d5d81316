"""Fixtures of the calibration tests: the real answer_quality rubric and a fixed synthetic judge."""

from __future__ import annotations

from judgewatch.contract.verdicts import JudgeIdentity

JUDGE_A = JudgeIdentity(kind="fake", name="judge-a", endpoint="http://judge-a/v1", config_hash="a" * 16)
