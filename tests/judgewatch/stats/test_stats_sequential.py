"""Confidence sequences and the anytime-valid drift monitor: they hold at every look where repeated intervals do not."""

from __future__ import annotations

import numpy as np
import pytest

from judgewatch.stats.drift import drift_monitor
from judgewatch.stats.estimate import t_bounds
from judgewatch.stats.sequential import batch_cs, boundary, rho2, shift_p_values, window_stretches


def test_a_confidence_sequence_keeps_the_truth_at_every_look_where_repeated_intervals_lose_it() -> None:
    rng = np.random.default_rng(11)
    runs, periods, n = 300, 60, 30  # 60 daily estimates of a mean, each from 30 values
    cs_missed = single_missed = 0
    for _ in range(runs):
        days = rng.integers(1, 6, size=(periods, n)).astype(float)  # uniform on 1-5: mean 3
        means, ses = days.mean(axis=1), days.std(axis=1, ddof=1) / np.sqrt(n)
        cs = batch_cs(means, ses)
        cs_missed += bool(np.any((cs.low > 3.0) | (cs.high < 3.0)))
        counts = np.arange(1, periods + 1) * n  # the pooled mean's t interval, read after each day
        pooled = np.cumsum(days.sum(axis=1)) / counts
        sds = np.array([days[: k + 1].std(ddof=1) for k in range(periods)])
        low, high = t_bounds(pooled, sds, counts, 0.95)
        single_missed += bool(np.any((low > 3.0) | (high < 3.0)))
    assert cs_missed / runs <= 0.05
    assert single_missed / runs > 0.15  # 60 looks at a 95% interval: far more than 5% of runs miss somewhere


def test_the_one_sided_bound_is_narrower_than_the_two_sided_one_and_both_grow_slowly() -> None:
    r = rho2(100.0, 0.05)
    two, one = boundary([100.0, 10_000.0], 0.05, r), boundary([100.0, 10_000.0], 0.05, r, one_sided=True)
    assert np.all(one < two)
    # per observation the bound shrinks like sqrt(log(v) / v): 100x the variance, about a 7x narrower mean
    assert 5.0 < (two[0] / 100.0) / (two[1] / 10_000.0) < 10.0


def test_batch_cs_refuses_a_missing_standard_error() -> None:
    with pytest.raises(ValueError, match="positive standard error"):
        batch_cs([3.0, 3.1], [0.1, 0.0])


def pairs(rng: np.random.Generator, n: int, lenient_from: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    human = rng.integers(1, 6, n).astype(float)
    judge = np.where(rng.random(n) < 0.7, human, np.clip(human + rng.choice([-1.0, 1.0], n), 1, 5))
    if lenient_from is not None:
        late = np.arange(n) >= lenient_from
        judge = np.where(late & (judge < 5) & (rng.random(n) < 0.5), judge + 1, judge)
    return judge, human


def test_the_drift_monitor_checked_after_every_window_stays_quiet_without_drift() -> None:
    rng = np.random.default_rng(5)
    alarms = 0
    for _ in range(100):
        judge, human = pairs(rng, 1500)
        window = np.arange(1500) // 50  # 30 windows of 50 pairs, a look after every 10 pairs
        _, p_agree, p_bias = drift_monitor(judge, human, window, looks=np.arange(10, 1501, 10))
        alarms += bool(np.any(np.minimum(p_agree, p_bias) < 0.025))
    assert alarms <= 8  # at most 5% by construction; 8 of 100 leaves room for chance


def test_the_drift_monitor_alarms_after_a_lenient_turn_and_names_the_stretch() -> None:
    judge, human = pairs(np.random.default_rng(6), 1500, lenient_from=1000)
    test, _, _ = drift_monitor(judge, human, np.arange(1500) // 50)
    assert test.alert and test.p_agreement_drop < 0.001 and test.p_bias_shift < 0.001
    assert test.stretch_start == 1000  # the stretch from the window the judge turned in
    assert test.bias_cur.estimate > test.bias_ref.estimate + 0.2 and test.agreement_cur.n == 500


def test_a_stretch_needs_its_minimum_of_labels_and_values_that_all_agree_never_give_zero_width() -> None:
    stretches = window_stretches(np.repeat([0, 1], [30, 5]), reference_windows=28)
    same = np.ones(35)
    p, which = shift_p_values(same, stretches, [35], bounds=(0.0, 1.0), min_current=10)
    assert p[0] == 1.0 and which[0] == -1  # five labels in the stretch: not tested
    drop = np.concatenate([np.ones(30), np.zeros(10)])
    stretches = window_stretches(np.repeat([0, 1], [30, 10]), reference_windows=28)
    p, which = shift_p_values(drop, stretches, [40], bounds=(0.0, 1.0), one_sided=True)
    assert 0.0 < p[0] < 0.05 and which[0] == 0  # a clear fall, yet a p-value, not a zero-width certainty


def test_values_out_of_time_order_are_refused() -> None:
    with pytest.raises(ValueError, match="time order"):
        window_stretches([0, 2, 1], reference_windows=28)
