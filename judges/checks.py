"""The check judge: a rubric's deterministic check criteria (regex, JSON / JSON Schema, reference match, length,
refusal), no model and no endpoint (docs/checks.md). Rubrics of checks only are judged by it alone; in a mixed
rubric `judges.base.plan` keeps the checks from the judge and `scored_verdict` adds their scores."""

from __future__ import annotations

import time

from judges.base import config_hash, none_scored, run_checks, scored_verdict, unscored
from judgewatch.contract.items import JudgeItem
from judgewatch.contract.rubric import Rubric
from judgewatch.contract.verdicts import JudgeIdentity, UnscoredReason, Verdict

# Bump on ANY change that can alter a check's outcome (rules, built-in phrase lists): it is in the config hash.
CHECKS_VERSION = "1.0.0"
NAME = "checks"


class CheckJudge:
    """Deterministic: the same answer under the same rubric always gets the same verdict."""

    kind = "check"
    # A rule has no judgement to measure: the gate needs no trust record for it (docs/checks.md).
    deterministic = True

    def __repr__(self) -> str:
        return f"CheckJudge({CHECKS_VERSION})"

    def identity(self, rubric: Rubric) -> JudgeIdentity:
        return JudgeIdentity(kind=self.kind, name=NAME, config_hash=config_hash(rubric, checks_version=CHECKS_VERSION))

    async def judge(self, item: JudgeItem, rubric: Rubric) -> Verdict:
        start = time.perf_counter()
        identity = self.identity(rubric)
        unchecked = [c.name for c in rubric.criteria if c.check is None]
        if unchecked:  # a programming error: the factory only routes all-check rubrics here
            raise ValueError(
                f"rubric '{rubric.name}': criteria {unchecked} are not checks; the check judge cannot score them"
            )
        checked = run_checks(rubric, item)
        if checked.scores:
            verdict = scored_verdict(item, rubric, identity, {}, [], "")
        else:
            fields = {**none_scored(rubric), "not_applicable": checked.not_applicable}
            verdict = unscored(item, rubric, identity, UnscoredReason.not_applicable, checked.reason, **fields)
        verdict.latency_ms = (time.perf_counter() - start) * 1000.0
        return verdict

    async def aclose(self) -> None:
        return None
