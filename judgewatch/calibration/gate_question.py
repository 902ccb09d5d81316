"""The gate's question, answered first on the Tiers page and in `report tiers`: which tier regressed, on which
criterion, and by how much (candidate minus its baseline, with the gate's 95% interval). Read from the stored
gate decisions of the shown judge series (the gate's own numbers, not recomputed): the latest per release."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Engine

from judgewatch.storage.db import session_scope
from judgewatch.storage.releases import GateDecision, gate_decisions

MAX_RELEASES = 5  # the newest releases the lead shows; the gate reports hold the rest
OUTCOME_TEXT = {"pass": "pass", "regression": "REGRESSION", "error": "could not evaluate"}
HEADERS = ["release", "decided (UTC)", "gate", "tier", "criterion", "candidate − baseline [95% CI]", "baseline"]
HEADERS += ["what it means"]


@dataclass(frozen=True, slots=True)
class GateRow:
    """One line of the gate's answer for a release (one per regressed tier and criterion)."""

    release: str
    decided_at: datetime
    outcome: str  # pass | regression | error (GateResult.outcome)
    tier: str | None  # regressions only
    criterion: str | None
    baseline: str | None  # the baseline release the tier was compared with, or a tier gap's baseline tier
    estimate: float  # candidate - baseline, the gate's estimate; NaN where there is none
    low: float
    high: float
    margin: float | None  # None: decided before the margin was stored
    meaning: str
    tier_gap: bool = False  # a gap between two tiers of the same release (`baseline` is a tier), not over releases


def gap_text(row: GateRow) -> str:
    """`-1.41 [-1.85, -1.03]` (as the other tables write intervals), or "-" where the row has no difference."""
    if not math.isfinite(row.estimate):
        return "-"
    return f"{row.estimate:+.2f} [{row.low:+.2f}, {row.high:+.2f}]"


def _first_line(text: str, limit: int = 200) -> str:
    line = text.splitlines()[0] if text else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _rows(decision: GateDecision) -> list[GateRow]:
    margin = decision.detail.get("margin")
    at, release, outcome = decision.decided_at, decision.release, decision.outcome
    found = sorted(decision.detail.get("regressions", []), key=lambda r: r["estimate"])
    if outcome == "regression" and found:
        below = f"whole interval below -{margin:g} (the margin)" if margin is not None else "interval below -margin"
        return [
            GateRow(release, at, outcome, r["tier"], r["criterion"], r.get("baseline"), r["estimate"], r["low"],
                    r["high"], margin, below, bool(r.get("basis")))
            for r in found
        ]  # fmt: skip
    why = decision.reasons[0] if outcome == "error" and decision.reasons else decision.summary.partition(": ")[2]
    nan = float("nan")
    return [
        GateRow(release, at, outcome, None, None, None, nan, nan, nan, margin, _first_line(why or decision.summary))
    ]


def gate_rows(engine: Engine, *, judge_config_hash: str, since: datetime | None = None) -> list[GateRow]:
    """The latest decision of each release the series' judge gated (newest first, `MAX_RELEASES` at most)."""
    with session_scope(engine) as session:
        decisions = gate_decisions(session=session, judge_config_hash=judge_config_hash, since=since, limit=200)
        seen: dict[str, GateDecision] = {}
        for d in decisions:
            if d.release not in seen and len(seen) < MAX_RELEASES:
                seen[d.release] = d
        return [row for d in seen.values() for row in _rows(d)]


def lead_line(rows: list[GateRow]) -> str:
    """One sentence: the newest regression's worst tier and criterion and by how much, and the newest decision
    when it is a different release."""
    if not rows:
        return "No gate decision of this judge series in this period: `judgewatch regress` asks the gate."
    newest = rows[0]
    worst = next((r for r in rows if r.outcome == "regression"), None)
    parts = []
    if worst is None or worst.release != newest.release:
        parts.append(
            f"Latest gate: release {newest.release}, {OUTCOME_TEXT.get(newest.outcome, newest.outcome)}"
            f" ({newest.meaning})."
        )
    if worst is not None:
        count = sum(1 for r in rows if r.release == worst.release)
        more = f"; {count} tier-criterion pair(s) regressed in all" if count > 1 else ""
        margin = f", margin {worst.margin:g}" if worst.margin is not None else ""
        kind = "tier {} of the same release" if worst.tier_gap else "release {}"
        against = "baseline " + kind.format(worst.baseline)
        parts.append(
            f"Release {worst.release} regressed: tier {worst.tier}, {worst.criterion} {gap_text(worst)} "
            f"(candidate − baseline) against {against}{margin}{more}."
        )
    else:
        parts.append("No release of this judge series regressed in this period.")
    return " ".join(parts)


def table_rows(rows: list[GateRow]) -> list[list[str]]:
    return [
        [r.release, f"{r.decided_at:%Y-%m-%d %H:%M}", OUTCOME_TEXT.get(r.outcome, r.outcome), r.tier or "-",
         r.criterion or "-", gap_text(r), r.baseline or "-", r.meaning]
        for r in rows
    ]  # fmt: skip
