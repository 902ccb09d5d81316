"""The judge leaderboard: every judge configuration seen, its trust per rubric, evidence, dataset and tier; one row
per stored trust record under the policy in force now, beside the reference judge's figure on the same items and
the judge's probe record on the same set.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel
from sqlalchemy import Engine

from judgewatch.storage.db import session_scope
from judgewatch.storage.trust import TrustEvidence, TrustRecord, get_trust_records
from judgewatch.trust.policy import TrustPolicy, dataset_label, evaluate_record
from judgewatch.trust.probe_policy import short_label

# What decides first (trust, its figure, the probes), then what it rests on: fits a 1400 px page.
COLUMNS = (
    "judge", "trust", "AUROC [95% CI]", "bias probes", "vs reference", "reference AUROC", "dataset", "n", "criterion",
    "unscored", "consistency", "evidence", "tier", "rubric", "config", "measured",
)  # fmt: skip


NOT_PROBED = "not probed"  # a known-answers row without a conclusive bias-probe record beside it


class LeaderboardRow(BaseModel):
    judge: str  # kind:name
    endpoint: str | None
    config_hash: str
    rubric: str  # name version
    evidence: str
    dataset: str | None
    dataset_revision: str | None
    tier: str | None
    n_items: int
    criterion: str
    auroc: float | None
    low: float | None
    high: float | None
    kappa: float | None
    unscored_rate: float | None
    position_consistency: float | None
    trustworthy: bool | None
    detail: str
    reference_auroc: float | None
    agreement_with_reference: float | None  # exact agreement with the reference judge's scores, same answers
    measured_at: datetime
    other_criteria: dict[str, float | None]
    probes: str = ""  # the bias probes on the same judge, rubric and set: each probe's figure, ok or FAIL
    probes_passed: bool | None = None

    @property
    def trust_label(self) -> str:
        if self.trustworthy is None and self.probes == NOT_PROBED:
            return NOT_PROBED
        return {True: "trusted", False: "NOT TRUSTED", None: "inconclusive"}[self.trustworthy]

    @property
    def vs_reference(self) -> float | None:
        if self.auroc is None or self.reference_auroc is None:
            return None
        return round(self.auroc - self.reference_auroc, 4)

    def cells(self) -> list[str]:
        """The row as display strings, in `COLUMNS` order."""

        def num(value: float | None, spec: str = ".2f") -> str:
            return "" if value is None else format(value, spec)

        if self.evidence == TrustEvidence.human_labels:
            score = f"kappa {num(self.kappa)} [{num(self.low)}, {num(self.high)}]"
        else:
            score = f"{num(self.auroc)} [{num(self.low)}, {num(self.high)}]" if self.auroc is not None else "n/a"
        return [
            self.judge,
            self.trust_label,
            score,
            self.probes,
            num(self.vs_reference, "+.2f"),
            num(self.reference_auroc),
            dataset_label(self.dataset, self.dataset_revision),
            str(self.n_items),
            self.criterion,
            num(self.unscored_rate, ".0%"),
            num(self.position_consistency, ".0%"),
            self.evidence.replace("_", " "),
            self.tier or "",
            self.rubric,
            self.config_hash[:12],
            self.measured_at.strftime("%Y-%m-%d %H:%M UTC"),
        ]


# The figures of the shown criterion a row copies from the record, by their name in both.
_CRITERION_FIGURES = ("auroc", "low", "high", "kappa", "unscored_rate", "position_consistency")


def _criterion_figures(figures: dict[str, Any]) -> dict[str, Any]:
    return {name: figures.get(name) for name in _CRITERION_FIGURES}


def _reference_key(record: TrustRecord) -> tuple[str, str, str | None, str | None, str | None]:
    return (record.rubric_hash, record.evidence, record.dataset, record.dataset_revision, record.tier)


def _probe_key(record: TrustRecord) -> tuple[str, str, str | None, str]:
    """Probes match the AUROC row of the same judge, rubric and set (whatever subset each was measured on)."""
    return (record.judge_config_hash, record.rubric_hash, record.dataset, (record.dataset_revision or "").split("[")[0])


def _with_probes(row: LeaderboardRow, probes: TrustRecord | None, policy: TrustPolicy) -> LeaderboardRow:
    """The row beside its probes: a failed probe takes trust away; known answers without a conclusive probe
    record are not probed, never trusted (`judgewatch.trust.policy.evaluate`)."""
    passed = None
    if probes is not None:
        passed, _ = evaluate_record(probes.evidence, probes.figures, probes.n_items, policy)
    if row.evidence != TrustEvidence.known_answers and probes is None:
        return row
    label = NOT_PROBED if probes is None else short_label(probes.figures, policy.probes) + f" (n={probes.n_items})"
    trust = False if passed is False else (None if passed is None and row.trustworthy else row.trustworthy)
    return row.model_copy(update={"probes": label, "probes_passed": passed, "trustworthy": trust})


def _criterion_auroc(figures: dict[str, Any], name: str) -> Any:
    return figures.get("criteria", {}).get(name, {}).get("auroc")


def _against_reference(record: TrustRecord, name: str, references: dict[Any, TrustRecord]) -> dict[str, Any]:
    """The reference judge's AUROC on the same evidence, and the record's agreement with its scores."""
    embedded = record.figures.get("reference", {})
    reference_auroc = _criterion_auroc(embedded, name)
    agreement = embedded.get("agreement", {}).get(name, {}).get("exact_agreement")
    if record.judge_kind == "reference":
        reference_auroc, agreement = _criterion_auroc(record.figures, name), 1.0
    elif reference_auroc is None and (ref := references.get(_reference_key(record))) is not None:
        reference_auroc = _criterion_auroc(ref.figures, name)
    return {"reference_auroc": reference_auroc, "agreement_with_reference": agreement}


def _row(record: TrustRecord, policy: TrustPolicy, references: dict[Any, TrustRecord]) -> LeaderboardRow:
    criteria: dict[str, Any] = record.figures.get("criteria", {})
    name = policy.criterion if policy.criterion in criteria else next(iter(criteria), policy.criterion)
    figures: dict[str, Any] = criteria.get(name, {})
    passed, detail = evaluate_record(record.evidence, record.figures, record.n_items, policy)
    return LeaderboardRow(
        judge=f"{record.judge_kind}:{record.judge_name}", endpoint=record.judge_endpoint,
        config_hash=record.judge_config_hash, rubric=f"{record.rubric_name} {record.rubric_version}",
        **record.basis().model_dump(), criterion=name, **_criterion_figures(figures), trustworthy=passed, detail=detail,
        **_against_reference(record, name, references), measured_at=record.measured_at,
        other_criteria={k: v.get("auroc", v.get("kappa")) for k, v in criteria.items() if k != name},
    )  # fmt: skip


def leaderboard(
    engine: Engine, policy: TrustPolicy | None = None, *, rubric: str | None = None, judge_name: str | None = None
) -> list[LeaderboardRow]:
    """Rows sorted by rubric, evidence, dataset, tier, then best AUROC first."""
    policy = policy or TrustPolicy()
    with session_scope(engine) as session:
        records = [
            TrustRecord.model_validate(r.model_dump())
            for r in get_trust_records(session=session, rubric_name=rubric, judge_name=judge_name)
        ]
        if judge_name is not None:  # the reference judge's records are needed for the comparison column
            records += [
                TrustRecord.model_validate(r.model_dump())
                for r in get_trust_records(session=session, rubric_name=rubric)
                if r.judge_kind == "reference" and r.judge_name != judge_name
            ]
    references = {_reference_key(r): r for r in records if r.judge_kind == "reference"}
    shown = [r for r in records if judge_name is None or r.judge_name == judge_name]
    # oldest first, so the latest probes of each set win
    probes = {_probe_key(r): r for r in reversed(shown) if r.evidence == TrustEvidence.bias_probes}
    beside = {_probe_key(r) for r in shown if r.evidence == TrustEvidence.known_answers} & set(probes)
    rows = [
        _with_probes(_row(record, policy, references), probes.get(_probe_key(record)), policy)
        if record.evidence in (TrustEvidence.known_answers, TrustEvidence.bias_probes)
        else _row(record, policy, references)
        for record in shown
        if not (record.evidence == TrustEvidence.bias_probes and _probe_key(record) in beside)
    ]
    rows.sort(
        key=lambda r: (r.rubric, r.evidence, r.dataset or "", r.tier or "", -(r.auroc or r.kappa or 0.0), r.judge)
    )
    return rows


def table(rows: list[LeaderboardRow]) -> tuple[list[str], list[list[str]]]:
    """(headers, display rows) for the CLI and the Judges page."""
    return list(COLUMNS), [row.cells() for row in rows]
