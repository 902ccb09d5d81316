"""Typer options that more than one command takes, declared once: the targeted review shares."""

from __future__ import annotations

from typing import Annotated

import typer

# `review route` and `sample`: targeted picks on top of the uniform review share (RoutingPolicy).
UnscoredShare = Annotated[
    float, typer.Option(min=0.0, max=1.0, help="Targeted: share of unscored verdicts sent to review")
]
BorderlineShare = Annotated[
    float, typer.Option(min=0.0, max=1.0, help="Targeted: share of borderline verdicts sent to review")
]
