"""`judgewatch dataset promote`: judged items whose scores people settled become a golden set the gate uses at once;
PII is scrubbed again; promoting the same items twice adds nothing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from judgewatch.cli import get_app
from judgewatch.regression.golden import load_golden_set
from judgewatch.regression.serving import write_recorded_answers
from judgewatch.review.routing import Route, item_row
from judgewatch.settings import REPO_ROOT
from judgewatch.storage.db import make_engine, session_scope
from judgewatch.storage.review import PickReason, Reviewer, ReviewItem, ReviewLabel
from judgewatch.storage.types import utcnow
from judgewatch.workbench.items import ItemFilter, find_items

pytestmark = pytest.mark.slow

GOOD, BAD = 5, 1
TWO_LABELS = Route(PickReason.uniform, inclusion_probability=1.0, labels_needed=2)


def invoke(*args: str) -> str:
    result = CliRunner().invoke(get_app(), list(args))
    assert result.exit_code == 0, result.output
    return result.output


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """Twelve HaluEval items judged from a file, half with their known-bad answer (one question holds an e-mail);
    reviewed: 4 by two agreeing people, 1 adjudicated, 1 with disagreeing labels, the rest never labeled."""
    tmp = tmp_path_factory.mktemp("promote")
    golden = load_golden_set(str(REPO_ROOT / "datasets" / "halueval_qa_mini")).items[:12]
    lines = []
    for k, item in enumerate(golden):
        question = item.question + (" Reply to jane.doe@example.com." if k == 0 else "")
        answer = (item.good_answers if k % 2 == 0 else item.bad_answers)[0]
        lines.append({"id": f"t{k}", "question": question, "answer": answer, "reference_facts": item.reference_facts})
    items = tmp / "items.jsonl"
    items.write_text("".join(json.dumps(row) + "\n" for row in lines))
    url = f"sqlite:///{tmp / 'jw.db'}"
    invoke(
        "judge",
        "--rubric",
        "answer_quality",
        "--input",
        str(items),
        "--judge",
        "reference",
        "--output",
        str(tmp / "v.jsonl"),
        "--database-url",
        url,
    )
    engine = make_engine(url)
    now = utcnow()
    with session_scope(engine) as session:
        rows, _ = find_items(session, ItemFilter(), limit=None)
    by_id = {r.verdict.item_id: r for r in rows}

    def label(item_id: str, reviewer: str, score: int) -> ReviewLabel:
        return ReviewLabel(
            review_item_id=item_id, reviewer=reviewer, scores={"faithfulness": score, "relevance": 5},
            started_at=now - timedelta(seconds=30), submitted_at=now, duration_ms=30_000,
            rubric_version_shown="1.0.0", via="ui",
        )  # fmt: skip

    with session_scope(engine, write=True) as session:
        session.add_all([Reviewer(name=n, password_hash="x") for n in ("ana", "bo", "cy")])
        session.flush()
        for k in range(12):
            row = by_id[f"t{k}"]
            verdict = row.verdict
            item = ReviewItem(**item_row(verdict.id, row.interaction.id, verdict.rubric_name, verdict.rubric_version,
                                         TWO_LABELS, now=now))  # fmt: skip
            settled = GOOD if k % 2 == 0 else BAD
            if k == 4:  # adjudicated
                item.final_scores, item.adjudicated_by = {"faithfulness": settled, "relevance": 5}, "cy"
            session.add(item)
            session.flush()
            if k < 4:  # two agreeing people
                session.add_all([label(item.id, "ana", settled), label(item.id, "bo", settled)])
            elif k == 5:  # two people who disagree: not settled
                session.add_all([label(item.id, "ana", 1), label(item.id, "bo", 4)])
            elif k == 6:  # one person only: not settled
                session.add(label(item.id, "ana", settled))
    engine.dispose()
    yield url, tmp


def test_settled_items_become_a_golden_set_with_known_answers_and_pii_scrubbed(judged: tuple[str, Path]) -> None:
    url, tmp = judged
    datasets = tmp / "datasets"
    said = invoke("dataset", "promote", "reviewed", "--datasets-dir", str(datasets), "--database-url", url)
    assert "reviewed 1.0.0: 5 items added" in said and "1 labels disagree" in said, said
    golden = load_golden_set(str(datasets / "reviewed"))
    assert len(golden.items) == 5  # t0-t3 (agreeing), t4 (adjudicated); not t5 (disagree), t6 (one label), the rest
    by_source = {i.metadata["interaction_id"]: i for i in golden.items}
    assert sum(1 for i in golden.items if i.good_answers) == 3 and sum(1 for i in golden.items if i.bad_answers) == 2
    assert all(i.reference_facts for i in golden.items) and len(by_source) == 5
    assert not any("jane.doe@example.com" in i.question for i in golden.items)
    card = (datasets / "reviewed" / "README.md").read_text()
    assert "internal traffic" in card and "version: 1.0.0" in card

    again = invoke("dataset", "promote", "reviewed", "--datasets-dir", str(datasets), "--database-url", url)
    assert "nothing new for reviewed: 5 already in it" in again
    assert load_golden_set(str(datasets / "reviewed")).revision == golden.revision


def test_the_gate_uses_a_promoted_set_at_once(judged: tuple[str, Path], prefect_server: None) -> None:
    url, tmp = judged
    datasets = tmp / "gate-datasets"
    invoke("dataset", "promote", "gated", "--datasets-dir", str(datasets), "--database-url", url)
    golden = load_golden_set(str(datasets / "gated"))
    answers = tmp / "answers.jsonl"
    write_recorded_answers(answers, [(i.id, (i.good_answers or i.bad_answers)[0]) for i in golden.items])
    result = CliRunner().invoke(
        get_app(),
        [
            "regress",
            "--release",
            "p1",
            "--dataset",
            str(datasets / "gated"),
            "--answers",
            f"full={answers}",
            "--judge",
            "reference",
            "--accept-unvalidated-judge",
            "--database-url",
            f"sqlite:///{tmp / 'gate.db'}",
            "--report",
            str(tmp / "p1.md"),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "gated" in (tmp / "p1.md").read_text()


def test_a_bad_set_name_or_unknown_id_fails_in_one_line(judged: tuple[str, Path]) -> None:
    url, tmp = judged
    for args, says in (
        ([str(Path("..") / "escape")], "set name"),  # a climb out of the datasets folder
        (["ok-name", "--id", "nope"], "no current verdict for interaction(s) nope"),
    ):
        result = CliRunner().invoke(
            get_app(), ["dataset", "promote", *args, "--datasets-dir", str(tmp / "d"), "--database-url", url]
        )
        assert result.exit_code == 2 and says in result.output and "Traceback" not in result.output
