"""A release tier's scores read from the store: baselines, per-item scores, unscored and missing items, worst items."""

from __future__ import annotations

from sqlalchemy import Engine

from judges.reference import ReferenceJudge
from judgewatch.contract.rubric import Rubric
from judgewatch.contract.verdicts import JudgeIdentity, UnscoredReason, Verdict
from judgewatch.regression.gate import compare_scores
from judgewatch.regression.golden import GoldenItem, GoldenSet
from judgewatch.regression.scores import (
    FALLBACK_ONLY,
    NO_ANSWER,
    TierScores,
    find_baselines,
    read_scores,
    worst_items,
)
from judgewatch.storage.db import session_scope
from judgewatch.storage.interactions import Interaction, upsert_interactions
from judgewatch.storage.releases import accept_baseline, record_release_tier, regression_source
from judgewatch.storage.verdicts import upsert_verdicts

SET = "facts"


def golden(n: int) -> GoldenSet:
    items = [
        GoldenItem(id=f"g{i}", question=f"What is {i}?", reference_facts=[f"It is {i}."], language="en")
        for i in range(n)
    ]
    return GoldenSet(name=SET, revision="rev1", items=items)


def store_tier(engine: Engine, release: str, tier: str, answers: dict[str, str], verdicts: dict[str, Verdict]) -> None:
    """Store `answers` (golden id -> answer) as the tier's interactions and `verdicts` (golden id -> verdict)."""
    source = regression_source(release, tier, SET)
    gold = {item.id: item for item in golden(10).items}
    rows = [Interaction.from_item(gold[gid].to_judge_item(answer), source=source) for gid, answer in answers.items()]
    for row in rows:
        row.release, row.tier = release, tier
    with session_scope(engine) as session:
        upsert_interactions(session=session, interactions=rows)
        by_id = {row.source_id: row.id for row in rows}
        upsert_verdicts(session=session, run_id=None, verdicts=[(by_id[gid], v) for gid, v in verdicts.items()])


def judged(rubric: Rubric, gid: str, answer: str) -> Verdict:
    item = golden(10).items[int(gid[1:])].to_judge_item(answer)
    return ReferenceJudge().judge_sync(item, rubric)


def test_scores_count_unscored_unjudged_and_unanswered_items_apart(engine: Engine, rubric: Rubric) -> None:
    identity = ReferenceJudge().identity(rubric)
    timeout = Verdict.unscored("g1", UnscoredReason.timeout, judge=identity, rubric=rubric.identity)
    answers = {"g0": "It is 0.", "g1": "It is 1.", "g2": "No idea."}  # g3 has no answer at all
    store_tier(engine, "r1", "full", answers, {"g0": judged(rubric, "g0", "It is 0."), "g1": timeout})
    with session_scope(engine) as session:
        scores = read_scores(
            session=session,
            release="r1",
            tier="full",
            golden=[golden(4)],
            rubric=rubric,
            judge_config_hash=identity.config_hash,
        )
    assert set(scores.scores) == {f"{SET}/g0", f"{SET}/g1"}
    assert scores.overall[f"{SET}/g1"] is None and scores.overall[f"{SET}/g0"] is not None
    assert scores.unscored == {"timeout": 1, "not_judged": 1, NO_ANSWER: 1}
    assert scores.texts[f"{SET}/g0"] == ("What is 0?", None, "It is 0.")
    with session_scope(engine) as session:  # another judge configuration's verdicts are another series
        other = read_scores(
            session=session, release="r1", tier="full", golden=[golden(4)], rubric=rubric, judge_config_hash="x"
        )
    assert other.scores == {} and other.unscored == {FALLBACK_ONLY: 2, "not_judged": 1, NO_ANSWER: 1}


def test_fallback_verdicts_are_another_judge_never_pooled_with_the_configured_judges(
    engine: Engine, rubric: Rubric
) -> None:
    identity = ReferenceJudge().identity(rubric)
    fallback = JudgeIdentity(kind="reference", name="fallback-copy", config_hash="f" * 16)
    answers = {f"g{i}": f"It is {i}." for i in range(4)}
    baseline = {gid: judged(rubric, gid, answer) for gid, answer in answers.items()}
    store_tier(engine, "r1", "full", answers, baseline)
    # r2: the judge went down after g1; g2 and g3 were judged by the fallback, which scores everything 1.
    low = dict.fromkeys(baseline["g2"].scores, 1)
    candidate = {gid: baseline[gid] for gid in ("g0", "g1")}
    for gid in ("g2", "g3"):
        fell = {"judge": fallback, "fallback_from": ["openai:judge@http://down/v1"], "scores": low, "overall": 1.0}
        candidate[gid] = baseline[gid].model_copy(update=fell)
    store_tier(engine, "r2", "full", answers, candidate)
    with session_scope(engine) as session:
        now, before = (
            read_scores(
                session=session,
                release=release,
                tier="full",
                golden=[golden(4)],
                rubric=rubric,
                judge_config_hash=identity.config_hash,
            )
            for release in ("r2", "r1")
        )
    assert set(now.scores) == {f"{SET}/g0", f"{SET}/g1"}  # the fallback's 1s are not the configured judge's scores
    assert now.unscored == {FALLBACK_ONLY: 2}
    comparisons = compare_scores(
        now.scores, before.scores, [c.name for c in rubric.criteria], candidate_label="r2", baseline_label="r1"
    )
    assert comparisons and all(c.diff.n <= 2 and c.candidate_mean == c.baseline_mean for c in comparisons)


def test_worst_items_are_the_biggest_drops_against_the_baseline_unscored_first() -> None:
    def tier(overall: dict[str, float | None]) -> TierScores:
        out = TierScores()
        for key, value in overall.items():
            out.scores[key], out.overall[key] = {"relevance": value}, value
            out.texts[key] = (f"q {key}", None, f"a {key}")
        return out

    candidate = tier({"a": 4.0, "b": 2.0, "c": 5.0, "d": None})
    baseline = tier({"a": 5.0, "b": 5.0, "c": 4.0, "d": 3.0})
    worst = worst_items(candidate, baseline, n=5)
    assert [w.key for w in worst] == ["d", "b", "a"]  # unscored now, then -3, then -1; "c" improved: left out
    assert worst[1].baseline_answer == "a b" and worst[1].delta == -3.0
    assert [w.key for w in worst_items(candidate, None, n=2)] == ["d", "b"]  # no baseline: the lowest scores


def test_baselines_are_the_latest_accepted_release_or_the_named_one(engine: Engine) -> None:
    with session_scope(engine) as session:
        for release, revision in (("r1", "rev0"), ("r2", "rev1")):
            record_release_tier(
                session=session, release=release, tier="full", source="recorded:x", model=None, datasets={SET: revision}
            )
        accept_baseline(session=session, release="r1", by="ci")
    with session_scope(engine) as session:
        accepted = find_baselines(
            session=session, release="r3", tiers=["full", "quantized"], baseline="accepted", datasets={SET: "rev1"}
        )
        named = find_baselines(session=session, release="r3", tiers=["full"], baseline="r2", datasets={SET: "rev1"})
        missing = find_baselines(session=session, release="r3", tiers=["full"], baseline="r9", datasets={})
        itself = find_baselines(session=session, release="r3", tiers=["full"], baseline="r3", datasets={})
    assert accepted.by_tier == {"full": "r1", "quantized": None} and accepted.problems == []
    assert accepted.notes and "revision rev0 -> rev1" in accepted.notes[0]
    assert named.by_tier == {"full": "r2"} and named.notes == [] and named.problems == []
    assert missing.by_tier == {} and "baseline release r9 has no stored answers" in missing.problems[0]
    assert "cannot be its own baseline" in itself.problems[0]
