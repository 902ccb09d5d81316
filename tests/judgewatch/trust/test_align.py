"""`judgewatch judges align` on a real store: the reviewers' labels it uses, the held-out measurement, the decision,
and the switch. Labels go through the real review queue (route, lease, submit, adjudicate); the items are the mini
HaluEval set's known-good and known-bad answers, labelled by a reviewer as its annotators did."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import Engine, update
from typer.testing import CliRunner, Result

from judges.alignment import Alignment
from judges.base import content_key
from judges.factory import judge_links
from judges.reference import ReferenceJudge
from judges.reference_model import load_models
from judgewatch.cli import judges_cmd
from judgewatch.contract.items import JudgeItem
from judgewatch.contract.rubric import Rubric
from judgewatch.regression.golden import load_golden_set
from judgewatch.review.accounts import ensure_reviewer, set_role
from judgewatch.review.adjudication import Adjudication
from judgewatch.review.queue import ReviewQueue
from judgewatch.review.routing import RoutingPolicy, route_verdicts
from judgewatch.settings import REPO_ROOT, get_settings
from judgewatch.storage.alignments import JudgeAlignment, active_alignments, save_alignment, switch_alignment
from judgewatch.storage.db import session_scope, table
from judgewatch.storage.interactions import Interaction, upsert_interactions
from judgewatch.storage.review import ReviewItem, review_item_id
from judgewatch.storage.trust import get_trust_records
from judgewatch.storage.verdict_tables import verdict_id
from judgewatch.storage.verdicts import upsert_verdicts
from judgewatch.testing.simulator import run_simulator_in_thread
from judgewatch.testing.synthetic_labels import label_routed
from judgewatch.trust.align import EVIDENCE_SOURCE, CriterionFigures, decide
from judgewatch.trust.align_labels import held_out, reviewer_labels, split
from judgewatch.trust.validate import known_pairs

GOOD = {"faithfulness": 5, "relevance": 5, "completeness": 5}
BAD = {"faithfulness": 1, "relevance": 5, "completeness": 1}
FLIPPED = {"faithfulness": 5, "relevance": 5, "completeness": 5}


def _answers() -> list[tuple[JudgeItem, dict[str, int]]]:
    pairs = known_pairs(load_golden_set("halueval_qa_mini", datasets_dir=REPO_ROOT / "datasets"))
    return [(item, GOOD) for item in pairs.good] + [(item, BAD) for item in pairs.bad]


def _store(engine: Engine, rubric: Rubric, labelled: list[tuple[JudgeItem, dict[str, int]]], **label: str) -> list[str]:
    """Interactions, the reference judge's verdicts, every one routed and labelled; returns the interaction ids."""
    judge, rows, verdicts, human = ReferenceJudge(), [], [], {}
    for item, labels in labelled:
        row = Interaction.from_item(item, source="test:align")
        rows.append(row)
        verdicts.append((row.id, judge.judge_sync(item, rubric)))
        human[row.id] = labels
    with session_scope(engine, write=True) as session:
        upsert_interactions(session=session, interactions=rows)
        upsert_verdicts(session=session, run_id=None, verdicts=verdicts)
    label_routed(
        engine, rubric, human, review_share=1.0, reviewer=label.get("reviewer", "alice"), via=label.get("via", "ui")
    )
    return [row.id for row in rows]


def _weak_combiner_in_use(engine: Engine, rubric: Rubric) -> str:
    """A reference alignment whose faithfulness barely reads the evidence, switched on: the current judge."""
    shipped = load_models()
    models = {
        name: {"coefficients": dict(m.coefficients), "intercept": m.intercept} for name, m in shipped.models.items()
    }
    models["default"] = {
        "coefficients": {"sentence_support": 0.5, "consistency": 0.0, "asserts": 0.0},
        "intercept": 0.0,
    }
    weak = {"version": "weak", "models": models, "fit_items": {}}
    alignment = Alignment(rubric_name=rubric.name, rubric_hash=rubric.content_hash, kind="reference", models=weak)
    row = JudgeAlignment(
        id="", rubric_name=rubric.name, rubric_hash=rubric.content_hash, judge_kind="reference", digest="weak",
        config_hash="", based_on="", alignment=alignment.model_dump(mode="json"), accepted=True,
    )  # fmt: skip
    with session_scope(engine, write=True) as session:
        save_alignment(session=session, row=row)
        return switch_alignment(session=session, row_id=row.id).id


def _align(db_url: str, *options: str) -> Result:
    return CliRunner().invoke(judges_cmd.app, ["align", "--judge", "reference", "--database-url", db_url, *options])


def _reference_in_use(engine: Engine, rubric: Rubric) -> str:
    [judge] = judge_links("reference", get_settings(), fallback_reference=False, engine=engine)
    return judge.identity(rubric).config_hash


@pytest.mark.slow
def test_a_better_aligned_reference_judge_is_accepted_measured_held_out_and_switched_only_when_asked(
    engine: Engine, db_url: str, rubric: Rubric
) -> None:
    _store(engine, rubric, _answers())
    weak = _weak_combiner_in_use(engine, rubric)
    current = _reference_in_use(engine, rubric)

    result = _align(db_url, "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    aligned_hash = report["aligned"]["config_hash"]
    assert report["current"]["config_hash"] == current != aligned_hash
    faithfulness = report["comparison"]["criteria"]["faithfulness"]
    assert faithfulness["decisive"] and faithfulness["aligned"] > faithfulness["current"]
    assert faithfulness["interval"][0] > 0  # the weak combiner is far behind: the interval clears zero
    assert report["comparison"]["criteria"]["relevance"]["difference"] == 0  # the refit leaves relevance alone
    assert report["comparison"]["accepted"] and not report["switched"]
    assert _reference_in_use(engine, rubric) == current  # nothing switched silently

    # measured where it was not built: the fit items the refit names and the held-out items never meet
    fit_on = set(report["alignment"]["models"]["fit_items"]["review_labels"])
    held = [x.item for x in split(reviewer_labels(engine, rubric).items, 0.5)[1]]
    assert fit_on and held and not fit_on & {content_key(item.question) for item in held}
    assert report["comparison"]["held_out_items"] == len(held) == sum(held_out(item, 0.5) for item, _ in _answers())
    with session_scope(engine) as session:
        records = get_trust_records(session=session, judge_config_hash=aligned_hash, dataset=EVIDENCE_SOURCE)
        assert [r.n_items for r in records] == [faithfulness["n"]]
        stored = records[0].figures["criteria"]["faithfulness"]  # the trust record holds the figures printed
        assert (stored["kappa"], stored["low"], stored["high"]) == (
            faithfulness["aligned"],
            *faithfulness["aligned_interval"],
        )

    switched = _align(db_url, "--switch")
    assert switched.exit_code == 0, switched.output
    assert "accepted: out of fit" in switched.output and "switched: the reference judge uses it" in switched.output
    assert _reference_in_use(engine, rubric) == aligned_hash
    with session_scope(engine) as session:
        [active] = active_alignments(session=session)
        old = session.get(JudgeAlignment, weak)
        assert active.switched_at is not None and old is not None and old.ended_at is not None and not old.active
    unaligned = CliRunner().invoke(judges_cmd.app, ["unalign", "--kind", "reference", "--database-url", db_url])
    assert unaligned.exit_code == 0, unaligned.output
    assert _reference_in_use(engine, rubric) == ReferenceJudge().identity(rubric).config_hash


@pytest.mark.slow
def test_a_worse_aligned_judge_is_refused_and_the_current_one_kept(engine: Engine, db_url: str, rubric: Rubric) -> None:
    # reviewers who, on the items it is built from only, call the known-bad answers faithful and the good ones not
    labelled = [
        (item, labels if held_out(item, 0.5) else (BAD if labels == GOOD else FLIPPED)) for item, labels in _answers()
    ]
    _store(engine, rubric, labelled)
    current = _reference_in_use(engine, rubric)

    result = _align(db_url, "--switch")
    assert result.exit_code == 1, result.output
    assert "refused: out of fit, the aligned judge agrees less with the reviewers on faithfulness" in result.output
    assert "the current judge is kept" in result.output
    assert _reference_in_use(engine, rubric) == current == ReferenceJudge().identity(rubric).config_hash
    with session_scope(engine, write=True) as session:
        [row] = session.exec(JudgeAlignment.__table__.select()).all()  # type: ignore[attr-defined]
        assert not row.accepted and not row.active
        with pytest.raises(ValueError, match="not accepted"):
            switch_alignment(session=session, row_id=row.id)


def test_align_takes_reviewers_labels_only_and_adjudication_settles_their_disagreements(
    engine: Engine, rubric: Rubric
) -> None:
    answers = _answers()
    uniform, targeted, _ = _store(engine, rubric, answers[:3])
    with session_scope(engine, write=True) as session:  # as an uncertainty-weighted plan would have routed it
        items = table(ReviewItem)
        picked = items.c.interaction_id == targeted
        session.execute(update(items).where(picked).values(pick_reason="active", inclusion_probability=0.25))
    annotated = _store(engine, rubric, answers[40:42], reviewer="dataset-annotation", via="dataset_annotation")
    pair = _store_double(engine, rubric, answers[3:5])
    queue = ReviewQueue(engine)
    for reviewer, scores in (("alice", (4, 1)), ("bob", (5, 5))):  # agree within a point on one, not on the other
        for (item_id, _), faithfulness in zip(pair, scores, strict=True):
            shown = queue.lease_item(reviewer, item_id)
            labels = {**GOOD, "faithfulness": faithfulness}
            queue.submit(reviewer, item_id, labels, rubric_version_shown=shown.rubric_version)

    labels = reviewer_labels(engine, rubric)
    by_id = {x.item.id: x.human for x in labels.items}
    weights = {x.item.id: x.weight for x in labels.items}
    assert (weights[uniform], weights[targeted]) == (1.0, 4.0)  # 1/p: a pick chosen more often counts less
    assert not set(annotated) & set(by_id)  # a dataset annotation is never taken for a reviewer's label
    assert labels.not_reviewers == {"dataset_annotation": 2}
    split_item = pair[1][0]
    assert by_id[pair[0][1]]["faithfulness"] == 4  # agreeing within a point: the first label submitted
    assert "faithfulness" not in by_id[pair[1][1]] and by_id[pair[1][1]]["relevance"] == 5
    assert labels.unsettled == 1 and "1 item criteria left out" in labels.describe()

    with session_scope(engine, write=True) as session:
        ensure_reviewer(session=session, name="carol")
        set_role(session=session, name="carol", role="adjudicator")
    case = Adjudication(queue).next_case("carol")
    assert case is not None and case.item.item_id == split_item
    Adjudication(queue).resolve("carol", split_item, {**GOOD, "faithfulness": 3})
    settled = reviewer_labels(engine, rubric)
    assert {x.item.id: x.human for x in settled.items}[pair[1][1]]["faithfulness"] == 3
    assert settled.adjudicated == 1 and settled.unsettled == 0


def _store_double(
    engine: Engine, rubric: Rubric, labelled: list[tuple[JudgeItem, dict[str, int]]]
) -> list[tuple[str, str]]:
    """Interactions and verdicts routed for two labels each; (review item id, interaction id), not labelled yet."""
    judge, rows, verdicts = ReferenceJudge(), [], []
    for item, _ in labelled:
        row = Interaction.from_item(item, source="test:align")
        rows.append(row)
        verdicts.append((row.id, judge.judge_sync(item, rubric)))
    ids = [
        verdict_id(row.id, rubric.content_hash, v.judge.config_hash) for row, (_, v) in zip(rows, verdicts, strict=True)
    ]
    with session_scope(engine, write=True) as session:
        upsert_interactions(session=session, interactions=rows)
        upsert_verdicts(session=session, run_id=None, verdicts=verdicts)
        route_verdicts(session=session, policy=RoutingPolicy(review_share=1.0, double_label_share=1.0), verdict_ids=ids)
        for name in ("alice", "bob"):
            ensure_reviewer(session=session, name=name)
    return [(review_item_id(v), row.id) for v, row in zip(ids, rows, strict=True)]


@pytest.mark.slow
def test_an_llm_judge_is_measured_on_held_out_items_with_the_scrubbed_examples_in_every_prompt(
    engine: Engine, db_url: str, rubric: Rubric
) -> None:
    mail = " Write to jane.doe@example.org for more."
    answers = [(item.model_copy(update={"answer": item.answer + mail}), labels) for item, labels in _answers()]
    _store(engine, rubric, answers)
    with run_simulator_in_thread(latency_ms=1) as sim:
        result = CliRunner().invoke(
            judges_cmd.app,
            ["align", "--judge", sim.base_url, "--model", "sim-judge", "--max-examples", "3", "--database-url", db_url],
        )
        sent = [body["messages"] for body in sim.state.captured]
    assert result.exit_code in (0, 1), result.output  # the simulator's scores are a hash: either decision may come
    assert "3 few-shot examples (of " in result.output
    with session_scope(engine) as session:
        [row] = session.exec(JudgeAlignment.__table__.select()).all()  # type: ignore[attr-defined]
    alignment = Alignment.model_validate(row.alignment)
    assert not row.active and row.accepted == (result.exit_code == 0)
    assert len(alignment.examples) == 3 and not any(held_out(e.item, 0.5) for e in alignment.examples)
    shots = alignment.shots(rubric)
    aligned = [messages for messages in sent if len(messages) > 2]
    held = [x for x in reviewer_labels(engine, rubric).items if held_out(x.item, 0.5)]
    assert (
        len(aligned) == len(held) == len(sent) - len(answers)
    )  # the current judge saw every item, the aligned the held-out ones
    for messages in aligned:
        assert messages[1:-1] == shots  # the examples, as stored, between the rubric and the item
        assert messages[-1] not in shots[::2]  # never an example judged against itself
        assert "jane.doe@example.org" in messages[-1]["content"]
    assert all("jane.doe@example.org" not in s["content"] and "[EMAIL]" in s["content"] for s in shots[::2])


def test_an_aligned_judge_that_scores_every_held_out_item_as_the_current_one_is_refused() -> None:
    same = CriterionFigures(
        n=44, n_effective=44.0, current=0.0, current_interval=(0.0, 0.0), aligned=0.0, aligned_interval=(0.0, 0.0),
        difference=0.0, interval=(0.0, 0.0), decisive=True, changed=0,
    )  # fmt: skip
    accepted, reason = decide({"faithfulness": same}, 20)  # SmolLM2 through vLLM: one score, examples or not
    assert not accepted and "scored every held-out item as the current one" in reason
    few = same.model_copy(update={"n": 12, "n_effective": 12.0, "decisive": False, "changed": 3, "difference": 0.2})
    assert decide({"faithfulness": few}, 20) == (False, "no criterion has 20 held-out items both judges scored: "
                                                  "the comparison decides nothing")  # fmt: skip
    better = same.model_copy(update={"changed": 5, "difference": 0.1})
    assert decide({"faithfulness": better, "relevance": same}, 20)[0]
