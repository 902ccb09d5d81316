"""A golden set's known answers as one tier's answers, stored as a release's golden items and judged: the
known-quality data the dataset-annotation label tests rest on (`review/dataset_labels`)."""

from __future__ import annotations

from sqlalchemy import Engine

from judgewatch.contract.rubric import Rubric
from judgewatch.hashing import UnitHash, hash_unit
from judgewatch.regression.golden import GoldenSet
from judgewatch.storage.db import session_scope
from judgewatch.storage.interactions import Interaction, upsert_interactions
from judgewatch.storage.releases import regression_source


def demo_answers(golden: GoldenSet, *, bad_share: float, salt: str) -> list[tuple[str, str]]:
    """(id, answer) per item: its first known-bad answer for a hash-chosen `bad_share` of items, else known-good."""
    out = []
    for item in golden.items:
        bad = item.bad_answers and hash_unit(item.id, f"{salt}:{golden.name}", variant=UnitHash.LABELED) < bad_share
        pool = item.bad_answers if bad else (item.good_answers or [item.reference_answer or ""])
        if pool and pool[0]:
            out.append((item.id, pool[0]))
    return out


async def store_golden_tier(
    engine: Engine,
    rubric: Rubric,
    golden: GoldenSet,
    tier: str,
    answers: list[tuple[str, str]],
    release: str = "demo-1",
) -> None:
    """One tier's answers to a golden set, stored as a release's golden items and judged by the reference judge."""
    from judges.reference import ReferenceJudge
    from judgewatch.judging.pipeline import judge_items

    by_id = {item.id: item for item in golden.items}
    source = regression_source(release, tier, golden.name)
    items = [by_id[item_id].to_judge_item(answer) for item_id, answer in answers]
    rows = [Interaction.from_item(item, source=source) for item in items]
    for row in rows:
        row.tier, row.release = tier, release
    with session_scope(engine, write=True) as session:
        upsert_interactions(session=session, interactions=rows)
    await judge_items(items, rubric, ReferenceJudge(), engine=engine, source=source)
