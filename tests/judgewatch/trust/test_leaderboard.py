"""The leaderboard lists every judge configuration measured, with its trust and the reference judge beside it."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Engine

from judges.pairwise import ReferencePairwiseJudge
from judges.reference import ReferenceJudge
from judgewatch.contract.rubric import Rubric
from judgewatch.regression.golden import GoldenSet
from judgewatch.trust.leaderboard import COLUMNS, leaderboard, table
from judgewatch.trust.validate import measure_judge


async def test_leaderboard_compares_each_judge_with_the_reference_on_the_same_items(
    engine: Engine,
    constant_judge: Any,
    always_a_judge: Any,
    answer_quality: Rubric,
    pairwise_rubric: Rubric,
    halluqa_mini: GoldenSet,
) -> None:
    await measure_judge(ReferenceJudge(), answer_quality, halluqa_mini, engine=engine)
    await measure_judge(constant_judge, answer_quality, halluqa_mini, engine=engine)
    await measure_judge(ReferencePairwiseJudge(), pairwise_rubric, halluqa_mini, engine=engine)
    await measure_judge(always_a_judge, pairwise_rubric, halluqa_mini, engine=engine)

    rows = {(r.judge, r.evidence): r for r in leaderboard(engine)}
    assert set(rows) == {
        ("reference:reference-overlap", "known_answers"),
        ("fake:constant", "known_answers"),
        ("reference:reference-overlap", "pairwise"),
        ("fake:always-a", "pairwise"),
    }
    constant = rows[("fake:constant", "known_answers")]
    assert constant.trust_label == "NOT TRUSTED" and constant.auroc == 0.5 and constant.criterion == "faithfulness"
    assert (
        constant.reference_auroc == 0.9437 and constant.vs_reference == -0.4437
    )  # reference judge 2.2.0 (2.1.0: 0.9359)
    assert constant.other_criteria == {"relevance": 0.5, "completeness": 0.5}
    always_a = rows[("fake:always-a", "pairwise")]
    assert always_a.position_consistency == 0.0 and always_a.trust_label == "NOT TRUSTED"
    assert always_a.reference_auroc is not None and always_a.reference_auroc > 0.9  # the reference's pairwise record
    assert rows[("reference:reference-overlap", "known_answers")].trust_label == "not probed"  # AUROC alone
    assert rows[("reference:reference-overlap", "pairwise")].trust_label == "trusted"  # the probes grade one by one

    only = leaderboard(engine, judge_name="always-a")
    assert [r.judge for r in only] == ["fake:always-a"] and only[0].reference_auroc == always_a.reference_auroc

    headers, cells = table(leaderboard(engine))
    assert headers == list(COLUMNS) and all(len(row) == len(COLUMNS) for row in cells)
    assert any(row[0] == "fake:constant" and row[2] == "0.50 [0.50, 0.50]" and row[4] == "-0.44" for row in cells)
