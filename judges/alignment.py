"""An aligned judge configuration (`judgewatch judges align`): what reviewers' labels add to a judge, for one rubric.

An LLM judge's alignment is few-shot examples (chat turns after the rubric, dropped last-first by `judges.fit`
before any of the item), the reference judge's its refitted combiners. Its digest is in the config hash, and it
applies only under the rubric content it was built from. docs/judges.md, section 5.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Mapping
from functools import cached_property
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from judges.base import content_key
from judges.reference_model import FaithfulnessModels, parse_models
from judgewatch.contract.items import JudgeItem
from judgewatch.contract.rubric import Rubric

logger = logging.getLogger(__name__)

EXAMPLE_REASON = "Scored as the reviewers scored this answer."  # the reason of every example reply


class Example(BaseModel):
    """One labelled item shown to the judge: its content (PII-scrubbed), the reviewers' scores and the judge's."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    item: JudgeItem  # id: the interaction id
    scores: dict[str, int]  # the reviewers' (adjudicated where they disagreed)
    judge_scores: dict[str, int]  # the current judge's, when the example was chosen


class Alignment(BaseModel):
    """The aligned part of one judge kind's configuration under one rubric."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    rubric_name: str
    rubric_hash: str
    kind: Literal["openai", "reference"]
    examples: list[Example] = Field(default_factory=list)  # openai: in the order they are shown
    models: dict[str, Any] | None = None  # reference: the refitted `reference_model.json` document

    @cached_property
    def digest(self) -> str:
        """What the config hash takes of the alignment (16 hex digits): every example and coefficient."""
        payload = json.dumps(self.model_dump(mode="json", include={"examples", "models"}), sort_keys=True)
        return hashlib.sha256(payload.encode()).hexdigest()[:16]

    @cached_property
    def faithfulness_models(self) -> FaithfulnessModels:
        if self.models is None:
            raise ValueError(f"the {self.kind} alignment of rubric {self.rubric_name!r} holds no refitted models")
        return parse_models(self.models)

    def fit_item_ids(self) -> frozenset[str]:
        """Content keys of the examples, and every item id the refitted models name: in-sample for validation."""
        examples = {content_key(e.item.question) for e in self.examples}
        return frozenset(examples) | (self.faithfulness_models.fit_item_ids() if self.models else frozenset())

    def shots(self, rubric: Rubric) -> list[dict[str, str]]:
        """The examples as chat turns: the rubric's user message of each item, then the reviewers' reply."""
        from judgewatch.contract.prompt import render_messages  # Jinja: not on the reference judge's path

        turns: list[dict[str, str]] = []
        for example in self.examples:
            criteria = [c.name for c in rubric.criteria if c.name in example.scores]
            turns.append(render_messages(rubric, example.item, criteria)[1])
            reply = {**{c: example.scores[c] for c in criteria}, "reason": EXAMPLE_REASON}
            turns.append({"role": "assistant", "content": json.dumps(reply, ensure_ascii=False)})
        return turns


def for_rubric(alignments: Mapping[str, Alignment], rubric: Rubric) -> Alignment | None:
    """The alignment built under this rubric's content, if any (one built under other content is not used)."""
    alignment = alignments.get(rubric.name)
    if alignment is None or alignment.rubric_hash == rubric.content_hash:
        return alignment
    logger.warning(
        "the %s alignment of rubric %r was built under other rubric content (%s, now %s): not used; run "
        "`judgewatch judges align` again",
        alignment.kind,
        rubric.name,
        alignment.rubric_hash,
        rubric.content_hash,
    )
    return None
