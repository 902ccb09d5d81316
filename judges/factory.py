"""`--judge` to a judge: "reference", an OpenAI-compatible URL, or a comma-separated chain of them.

The offline reference judge is appended as the last link by default, so an outage degrades to labelled reference
verdicts; a rubric of check criteria only gets the check judge; with the store, each link uses the alignment
switched on for its kind.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from judges.base import Judge
from judges.config import judge_endpoint
from judgewatch.contract.rubric import Rubric
from judgewatch.redact import mask_url
from judgewatch.settings import Settings

if TYPE_CHECKING:
    from sqlalchemy import Engine

    from judges.alignment import Alignment

logger = logging.getLogger(__name__)

REFERENCE = "reference"


def parse_judge_spec(spec: str) -> list[str]:
    """["reference" | URL, ...] from "URL,URL,reference"; ValueError naming the bad part."""
    parts = [part.strip() for part in spec.split(",") if part.strip()]
    if not parts:
        raise ValueError("--judge: expected 'reference', a URL, or a comma-separated list of them; got nothing")
    for part in parts:
        if part != REFERENCE and not part.startswith(("http://", "https://")):
            raise ValueError(f"--judge: expected 'reference' or an http(s):// URL, got '{part}'")
    return parts


def judge_links(
    spec: str | None,
    settings: Settings,
    model: str | None = None,
    concurrency: int | None = None,
    *,
    fallback_reference: bool = True,
    rubric: Rubric | None = None,
    engine: Engine | None = None,
) -> list[Judge]:
    """The chain's judges in order; no spec means the configured judge URL and its fallback URLs. With the store
    (`engine`), each judge gets the alignments in use for its kind (`active_alignments`). A `rubric` whose criteria are
    all checks gets the check judge alone (a malformed `--judge` still raises)."""
    parts = parse_judge_spec(spec) if spec is not None else [settings.judge_url, *settings.judge_fallback_urls]
    if rubric is not None and rubric.only_checks:
        from judges.checks import CheckJudge

        # One line: a warning when a --judge was given (it is not used), else for the record.
        log = logger.warning if spec is not None else logger.info
        log("rubric '%s' has only check criteria: judged by the check judge, not by --judge", rubric.name)
        return [CheckJudge()]
    if fallback_reference and REFERENCE not in parts:
        parts.append(REFERENCE)
    aligned = active_alignments(engine) if engine is not None else {}
    links: list[Judge] = []
    for part in parts:
        if part == REFERENCE:
            from judges.reference import ReferenceJudge

            links.append(ReferenceJudge(aligned.get("reference")))
        else:
            from judges.openai_judge import OpenAIJudge

            endpoint = judge_endpoint(settings, part, model=model, concurrency=concurrency)
            links.append(OpenAIJudge(endpoint, aligned.get("openai")))
    return links


def active_alignments(engine: Engine) -> dict[str, dict[str, Alignment]]:
    """Judge kind -> rubric name -> the alignment switched on for it in the store."""
    from judges.alignment import Alignment
    from judgewatch.storage.alignments import active_alignments as rows
    from judgewatch.storage.db import session_scope

    with session_scope(engine) as session:
        found = [Alignment.model_validate(row.alignment) for row in rows(session=session)]
    by_kind: dict[str, dict[str, Alignment]] = {}
    for alignment in found:
        by_kind.setdefault(alignment.kind, {})[alignment.rubric_name] = alignment
        logger.info(
            "judge alignment in use: %s judge, rubric %s (%s)", alignment.kind, alignment.rubric_name, alignment.digest
        )
    return by_kind


def chain(links: list[Judge]) -> Judge:
    """One judge, or a FallbackJudge over several; a lone endpoint judge is behind the same circuit breaker."""
    if not links:
        raise ValueError("no judge to chain")
    if len(links) == 1:
        if getattr(links[0], "health", None) is None:
            return links[0]  # the offline reference judge: nothing to hang on
        from judges.fallback import GuardedJudge

        return GuardedJudge(links[0])
    from judges.fallback import FallbackJudge

    return FallbackJudge(links)


def describe(judge: Judge) -> str:
    url = getattr(judge, "base_url", None)
    return f"judge at {mask_url(url)}" if url else f"{judge.kind} judge"


async def is_healthy(judge: Judge) -> bool:
    """Does the judge answer? Judges without `health()` (the reference judge) are always up."""
    check = getattr(judge, "health", None)
    if check is None:
        return True
    try:
        return bool(await check())
    except Exception as exc:  # a health probe that blows up is a down endpoint, not a crash
        logger.warning("health check of %s failed: %s", describe(judge), exc)
        return False


async def healthy_links(links: list[Judge]) -> tuple[list[Judge], list[Judge]]:
    """(up, down), each in chain order, checked concurrently."""
    results = await asyncio.gather(*(is_healthy(link) for link in links))
    pairs = list(zip(links, results, strict=True))
    return [link for link, ok in pairs if ok], [link for link, ok in pairs if not ok]
