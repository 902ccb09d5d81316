"""Benchmark: 30 days of hourly drift checks, anytime-valid (`stats.drift_monitor`) against today's single-look test.

Real judge-human pairs (BEGIN dev, the reference judge) arrive as Poisson labels and are checked every hour; with
drift the judge turns 0.3 points lenient from a day in 8-22 (what is assumed is printed; bench/README.md, "Hourly
checks for 30 days"). Printed: the share of runs without drift with any false alarm (limit 0.05), the single-look
rate beside it, the detection delay, and how often the traffic confidence sequence misses the truth.

Run: .venv/bin/python bench/monitoring.py [--runs 400] [--labels-per-hour 10] [--seed 20261206]
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.tier_truth import population
from judgewatch.calibration.drift import DriftConfig
from judgewatch.contract.rubric import load_rubric
from judgewatch.settings import REPO_ROOT
from judgewatch.stats.drift import drift_monitor, drift_test
from judgewatch.stats.ppi import survey_ppi_mean
from judgewatch.stats.sequential import batch_cs

LIMIT = 0.05
DAYS, HOURS = 30, 24
DRIFT = 0.3
SEED = 20261206


def labels(rng: np.random.Generator, pairs: np.ndarray, rate: float) -> tuple[np.ndarray, np.ndarray]:
    """One run's labels: (judge, human) pairs drawn from `pairs`, and how many arrived by each hour's end."""
    per_hour = rng.poisson(rate, DAYS * HOURS)
    drawn = pairs[rng.integers(0, len(pairs), per_hour.sum())]
    return drawn, np.cumsum(per_hour)


def lenient(rng: np.random.Generator, judge: np.ndarray, high: float, step_prob: float) -> np.ndarray:
    """The judge after drift: each score below the top goes up a point with `step_prob` (mean shift DRIFT)."""
    return judge + ((judge < high) & (rng.random(judge.size) < step_prob))


def monitor_alarms(pairs: np.ndarray, seen: np.ndarray, cfg: DriftConfig) -> np.ndarray:
    """Whether the anytime-valid check alarms at each hourly look (one series: alpha / 2 per hypothesis)."""
    day = np.repeat(np.arange(DAYS * HOURS) // HOURS, np.diff(seen, prepend=0))
    _, p_agree, p_bias = drift_monitor(
        pairs[:, 0],
        pairs[:, 1],
        day,
        alpha=cfg.family_alpha,
        reference_windows=cfg.reference_windows["daily"],
        min_reference=cfg.min_reference,
        min_current=cfg.min_current,
        looks=seen,
    )
    return np.minimum(p_agree, p_bias) < cfg.family_alpha / 2


def fixed_alarm(pairs: np.ndarray, seen: np.ndarray, cfg: DriftConfig, every: int = 1) -> bool:
    """Whether today's single-look test alarms at any look (every `every` hours, each at an hour's end): the day
    so far against the days before."""
    days = cfg.reference_windows["daily"]
    for hour in range(HOURS + every - 1, DAYS * HOURS, every):
        day = hour // HOURS
        start = seen[day * HOURS - 1]
        ref = seen[max(day - days, 0) * HOURS - 1] if day > days else 0
        cur, past = pairs[start : seen[hour]], pairs[ref:start]
        if len(cur) < cfg.min_current or len(past) < cfg.min_reference:
            continue
        if drift_test(past[:, 0], past[:, 1], cur[:, 0], cur[:, 1], alpha=cfg.family_alpha).alert:
            return True
    return False


def traffic_misses(rng: np.random.Generator, pop: np.ndarray, per_day: int, share: float) -> tuple[bool, bool]:
    """One run of 30 daily traffic estimates (uniform sample of the population, `share` labeled): whether the
    confidence sequence ever misses the truth, and whether any single-look interval does."""
    truth = pop[:, 1].mean()
    estimates, ses, single_miss = [], [], False
    for _ in range(DAYS):
        day = pop[rng.integers(0, len(pop), per_day)]
        human = np.where(rng.random(per_day) < share, day[:, 1], np.nan)
        e = survey_ppi_mean(day[:, 0], np.ones(per_day), human, np.full(per_day, share))
        estimates.append(e.estimate)
        ses.append(e.se)
        single_miss |= not e.low <= truth <= e.high
    cs = batch_cs(estimates, ses)
    return bool(np.any((cs.low > truth) | (cs.high < truth))), single_miss


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=400, help="simulated 30-day runs, each with and without drift")
    parser.add_argument("--fixed-runs", type=int, default=200, help="runs of today's single-look test (slower)")
    parser.add_argument("--labels-per-hour", type=float, default=10.0)
    parser.add_argument("--seed", type=int, default=SEED)
    args = parser.parse_args()
    logging.getLogger("judgewatch.stats.drift").setLevel(logging.ERROR)  # each single-look alert would log

    from judges.reference import ReferenceJudge

    rubric = load_rubric("answer_quality", REPO_ROOT / "rubrics")
    pairs = population(ReferenceJudge(), rubric).frame[["judge", "human_all"]].to_numpy(dtype=float)
    d = pairs[:, 0] - pairs[:, 1]
    high = float(rubric.scale.max)
    step_prob = DRIFT / float(np.mean(pairs[:, 0] < high))
    cfg = DriftConfig()
    print(
        f"pairs: {len(pairs)} BEGIN dev responses (reference judge vs people, faithfulness 1-5): exact agreement "
        f"{np.mean(d == 0):.3f}, bias {d.mean():+.3f}, sd(judge - human) {d.std(ddof=1):.3f}"
    )
    print(
        f"assumed: {args.labels_per_hour:g} labels/hour (Poisson), {DAYS} days, a check every hour, daily windows, "
        f"family alpha {cfg.family_alpha}, min labels {cfg.min_reference} reference / {cfg.min_current} current; "
        f"drift +{DRIFT} (P(step up) {step_prob:.3f}) from an hour in days 8-22"
    )
    rng = np.random.default_rng(args.seed)
    t0 = time.perf_counter()
    false_runs, delays = 0, []
    for _ in range(args.runs):
        drawn, seen = labels(rng, pairs, args.labels_per_hour)
        false_runs += bool(monitor_alarms(drawn, seen, cfg).any())
        drawn, seen = labels(rng, pairs, args.labels_per_hour)
        onset = int(rng.integers(7 * HOURS, 22 * HOURS))
        after = slice(seen[onset - 1], None)
        drawn[after, 0] = lenient(rng, drawn[after, 0], high, step_prob)
        hits = np.flatnonzero(monitor_alarms(drawn, seen, cfg)[onset:])
        delays.append(float(hits[0] + 1) if hits.size else np.inf)  # hours after the drift began, first look
    fixed = daily = 0
    for _ in range(args.fixed_runs):
        drawn, seen = labels(rng, pairs, args.labels_per_hour)
        fixed += fixed_alarm(drawn, seen, cfg)
        daily += fixed_alarm(drawn, seen, cfg, every=HOURS)
    rate, fixed_rate = false_runs / args.runs, fixed / args.fixed_runs
    wait = np.array(delays)
    median, p90 = np.percentile(wait, 50), np.percentile(wait, 90)
    print(
        f"no drift: {false_runs} of {args.runs} runs raised a false alarm in {DAYS * HOURS} hourly checks "
        f"(anytime-valid); today's single-look test: {fixed} of {args.fixed_runs} checked hourly, {daily} of "
        f"{args.fixed_runs} checked once a day (at each day's end)"
    )
    print(
        f"drift +{DRIFT}: detected by day {DAYS} in {np.isfinite(wait).mean():.3f} of {args.runs} runs; delay hours "
        f"median {median:.0f}, 90th percentile {p90:.0f} (inf: not detected by day {DAYS})"
    )
    misses = [traffic_misses(rng, pairs, int(args.labels_per_hour * 10 * HOURS), 0.1) for _ in range(args.runs // 2)]
    cs_miss, single = np.mean([m[0] for m in misses]), np.mean([m[1] for m in misses])
    print(
        f"traffic quality, {len(misses)} runs of {DAYS} daily PPI estimates ({args.labels_per_hour * HOURS:g} labels "
        f"a day): confidence sequence ever missed the truth {cs_miss:.3f}, some single-look interval missed "
        f"{single:.3f}; {time.perf_counter() - t0:.0f} s"
    )
    print(
        f"monitoring false_alarm_rate {rate:.3f} limit {LIMIT} ratio {rate / LIMIT:.2f} "
        f"fixed_interval_rate {fixed_rate:.3f} detection_delay_hours {median:.0f}"
    )


if __name__ == "__main__":
    main()
