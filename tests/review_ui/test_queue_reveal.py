"""What a reviewer sees after submitting: the judge's overall rounded to two places (issue 35 §6.12: the screen
showed `overall 4.6667`)."""

from __future__ import annotations

from judgewatch.review.views import Revealed
from review_ui.queue_page import reveal_md


def test_the_judges_overall_is_shown_to_two_places() -> None:
    shown = Revealed(
        item_id="i1",
        your_scores={"faithfulness": 5, "relevance": 4, "completeness": 5},
        judge_scores={"faithfulness": 5, "relevance": 4, "completeness": 5},
        judge_overall=14 / 3,
        judge_status="scored",
        judge_unscored_reason=None,
        judge_reason="supported by the references",
        judge_name="reference:reference-overlap",
        tier="full",
        item_state="done",
    )
    text = reveal_md(shown)
    assert "overall 4.67" in text and "4.6667" not in text
