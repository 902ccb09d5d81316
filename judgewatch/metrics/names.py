"""The catalogue of exported metrics: name, type, labels and help text, in one place. The collector builds its
families from these specs, and the tests check the alert rules and the Grafana dashboard against them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class MetricSpec:
    """One exported metric family. For counters `name` excludes the `_total` suffix the exposition adds."""

    name: str
    kind: Literal["counter", "gauge", "histogram"]
    labels: tuple[str, ...]
    help: str

    def series_names(self) -> tuple[str, ...]:
        """The sample names this family exposes, as PromQL sees them."""
        if self.kind == "counter":
            return (f"{self.name}_total",)
        if self.kind == "histogram":
            return (f"{self.name}_bucket", f"{self.name}_sum", f"{self.name}_count")
        return (self.name,)


VERDICTS = MetricSpec(
    "judgewatch_verdicts",
    "counter",
    ("judge", "rubric", "tier", "source", "status"),
    "Verdicts written, by the values they were written with. A re-judge (the same item, rubric and judge "
    "configuration judged again) is a new write and adds 1 under its new status; nothing is ever subtracted, "
    "so rate() counts judging work. source is the interaction's origin (traffic, regression, pairwise, golden, file, "
    "other); tier 'none' when the interaction has none. For how many verdicts stand now, see "
    "judgewatch_verdicts_current.",
)
VERDICTS_CURRENT = MetricSpec(
    "judgewatch_verdicts_current",
    "gauge",
    ("judge", "rubric", "tier", "source", "status"),
    "Current verdicts: stored and not superseded (a fallback or endpoint-failure verdict replaced by a normal "
    "one leaves), each under its present values (a re-judged verdict moves from unscored to scored).",
)
UNSCORED = MetricSpec(
    "judgewatch_unscored",
    "counter",
    ("judge", "reason"),
    "Verdicts written without a score, by the judge that gave up and the unscored reason (a counter: a later "
    "re-judge that scores the item does not subtract it).",
)
FALLBACK = MetricSpec(
    "judgewatch_fallback_verdicts",
    "counter",
    ("from_judge", "to_judge"),
    "Verdicts written by a later link of the fallback chain. from_judge is the first link tried (the model of "
    "the first entry of the verdict's stored fallback_from, its endpoint dropped), to_judge the judge that "
    "answered (e.g. 'reference' when the offline judge stood in for a failing endpoint).",
)
LATENCY = MetricSpec(
    "judgewatch_judge_latency_seconds",
    "histogram",
    ("judge",),
    "Judge latency per verdict written (the verdict's latency_ms, retries included; a re-judge is observed again).",
)
TOKENS = MetricSpec(
    "judgewatch_judge_tokens",
    "counter",
    ("judge", "kind"),
    "Tokens the judge used, summed over verdicts written (re-judges included: their tokens were spent too); kind "
    "is prompt, completion or cached (prompt tokens served from the prefix cache).",
)
COST = MetricSpec(
    "judgewatch_judge_cost",
    "counter",
    ("judge", "currency"),
    "Judge cost in money: the tokens of judgewatch_judge_tokens priced by the settings' judge_prices (per million "
    "input, cached input and output tokens). A judge model without a price has no series here, never a 0.",
)
SPEND_TODAY = MetricSpec(
    "judgewatch_judge_spend_today",
    "gauge",
    ("currency",),
    "Judge spend of the current UTC day so far (every verdict written since 00:00 UTC, priced by judge_prices; "
    "models without a price are not counted): what the daily spend cap is held to.",
)
SPEND_CAP_PAUSED = MetricSpec(
    "judgewatch_judge_spend_cap_paused",
    "gauge",
    (),
    "1 while today's judge spend has reached JUDGEWATCH_JUDGE_DAILY_SPEND_CAP: sampling-side judging (traffic "
    "sampling, ingest judging) is paused until 00:00 UTC; release gates are not. 0 otherwise, or without a cap.",
)
PAUSED_PICKS = MetricSpec(
    "judgewatch_judge_paused_picks",
    "gauge",
    (),
    "Sampled picks stored but not judged yet because the daily spend cap held; the first sampling run of the next "
    "UTC day judges them.",
)
QUEUE = MetricSpec(
    "judgewatch_review_queue_items",
    "gauge",
    ("state",),
    "Review items per state: waiting (available, or leased with the lease run out), leased, labeled, "
    "adjudication (labels disagree), flagged (sent to an expert).",
)
LABELS = MetricSpec(
    "judgewatch_review_labels",
    "counter",
    ("tier",),
    "Human labels that score an item (skips and bare flags excluded), by the tier of the labeled interaction.",
)
AGREEMENT = MetricSpec(
    "judgewatch_agreement",
    "gauge",
    ("rubric", "tier", "criterion", "measure"),
    "Judge-human agreement from the latest calibration snapshot of each rubric: measure is weighted_kappa, "
    "cohen_kappa, spearman, exact (share of identical scores) or bias (mean judge minus human).",
)
TIER_SCORE = MetricSpec(
    "judgewatch_tier_score",
    "gauge",
    ("rubric", "tier", "criterion", "kind"),
    "Tier mean score from the latest calibration snapshot: kind raw (judge mean), corrected (prediction-powered "
    "estimate using the human labels), corrected_low / corrected_high (its 95% interval).",
)
DRIFT = MetricSpec(
    "judgewatch_drift_alerts_open",
    "gauge",
    ("tier", "criterion", "test"),
    "Open judge drift alerts; test is what fired (agreement_drop, bias_shift or both). Acknowledge or resolve "
    "them in the calibration flow's alert list.",
)
SERVED_MODEL_CHANGE = MetricSpec(
    "judgewatch_served_model_change_alerts_open",
    "gauge",
    ("tier", "criterion", "release"),
    "Open served-model change alerts: a tier's mean judge score moved within a release while the judge was stable "
    "on the anchor set (the answers changed, not the judge). Separate from judge drift.",
)
GATE = MetricSpec(
    "judgewatch_gate_decisions",
    "counter",
    ("exit_code",),
    "Stored release gate decisions by exit code: 0 pass, 1 regression, 2 could not evaluate. A decision asked "
    "again replaces its row.",
)
LAST_SUCCESS = MetricSpec(
    "judgewatch_last_success_timestamp_seconds",
    "gauge",
    ("flow",),
    "Unix time of the last success: traffic-sampling and judge-file/judge-validation/anchor runs that completed "
    "(or paused at the daily spend cap: they stored their picks), "
    "post-release-regression gate decisions that evaluated (exit 0 or 1), calibration snapshots.",
)
TRUST_AUROC = MetricSpec(
    "judgewatch_judge_trust_auroc",
    "gauge",
    ("judge", "dataset", "criterion"),
    "Latest known-answer AUROC of each judge on each golden set (0.5 is chance): how well the judge separates "
    "known-good from known-bad answers.",
)
STORE_UP = MetricSpec(
    "judgewatch_store_up",
    "gauge",
    (),
    "1 when the last scrape read the store, 0 when the database could not be read (values are then missing).",
)
SCRAPE_SECONDS = MetricSpec("judgewatch_scrape_duration_seconds", "gauge", (), "Seconds the last store read took.")

CATALOGUE: tuple[MetricSpec, ...] = tuple(spec for spec in list(globals().values()) if isinstance(spec, MetricSpec))


def exported_series() -> frozenset[str]:
    """Every sample name the endpoint can expose."""
    return frozenset(name for spec in CATALOGUE for name in spec.series_names())
