"""The gate's options and their defaults, one typed model: `judgewatch regress`'s options, the regression flow's
parameters and `prefect.yaml`'s deployment parameters take their defaults from `GateOptions` (a test checks)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class GateOptions(BaseModel):
    """The gate's options beyond its inputs (release, golden sets, tiers, judge)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    baseline: str = Field(default="accepted", description="'accepted' (each tier's accepted baseline) or a release id")
    margin: float = Field(default=0.25, ge=0.0, description="Allowed drop in mean score (rubric scale)")
    max_unscored_share: float = Field(
        default=0.2, ge=0.0, le=1.0, description="Largest share of unscored verdicts per tier before exit 2"
    )
    gap_margin: float | None = Field(
        default=None, ge=0.0, description="Also fail when a tier trails the baseline tier by more than this"
    )
    accept_unvalidated_judge: bool = Field(
        default=False, description="Use a judge that failed or lacks validation (said first in the report)"
    )
    concurrency: int = Field(default=8, ge=1, description="Concurrent answer requests per live tier")
    answer_max_tokens: int = Field(default=256, ge=1, description="max_tokens of a generated answer")
    baseline_tier: str | None = Field(
        default=None,
        description="The tier the release's other tiers are compared with (default: the tiers file's baseline)",
    )


DEFAULTS = GateOptions()
