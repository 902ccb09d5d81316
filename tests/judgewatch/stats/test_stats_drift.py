"""Judge drift: per-window series and the Bonferroni-corrected change test."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import numpy as np
import pytest

from judgewatch.stats.drift import agreement_series, drift_test, time_windows


def test_timestamps_fall_into_utc_day_windows() -> None:
    stamps = [
        datetime(2025, 3, 1, 23, 59, tzinfo=UTC),
        datetime(2025, 3, 2, 1, 0, tzinfo=timezone(timedelta(hours=3))),  # 2025-03-01 22:00 UTC
        datetime(2025, 3, 2, 0, 0, tzinfo=UTC),
    ]
    windows = time_windows(stamps, timedelta(days=1))
    assert [str(w)[:10] for w in windows] == ["2025-03-01", "2025-03-01", "2025-03-02"]


def test_series_reports_agreement_and_bias_per_window_in_order() -> None:
    windows = ["w2", "w1", "w1", "w2", "w1", "w2"]
    judge = [3.0, 4.0, 2.0, 5.0, 3.0, np.nan]
    human = [3.0, 4.0, 3.0, 3.0, 3.0, 4.0]
    series = agreement_series(windows, judge, human)
    assert [s.window for s in series] == ["w1", "w2"]
    w1, w2 = series
    assert (w1.n, w1.agreement.estimate, w1.bias.estimate) == (3, pytest.approx(2 / 3), pytest.approx(-1 / 3))
    assert (w2.n, w2.agreement.estimate, w2.bias.estimate) == (2, 0.5, 1.0)
    assert w1.agreement.low < 2 / 3 < w1.agreement.high


def windows_with_agreement(hits: int, total: int, plus: int) -> tuple[np.ndarray, np.ndarray]:
    """Judge and human scores where `hits` agree and the misses are `plus` +1s and the rest -1s."""
    human = np.full(total, 3.0)
    judge = human.copy()
    judge[hits : hits + plus] += 1.0
    judge[hits + plus :] -= 1.0
    return judge, human


def test_a_judge_that_stays_the_same_raises_no_alert() -> None:
    rng = np.random.default_rng(0)
    human = rng.integers(1, 6, size=800).astype(float)
    judge = np.where(rng.random(800) < 0.8, human, np.clip(human + 1, 1, 5))
    result = drift_test(judge[:400], human[:400], judge[400:], human[400:])
    assert not result.alert


def test_a_drop_in_agreement_and_a_bias_shift_raise_an_alert() -> None:
    ref_judge, ref_human = windows_with_agreement(180, 200, plus=10)
    cur_judge, cur_human = windows_with_agreement(120, 200, plus=70)
    result = drift_test(ref_judge, ref_human, cur_judge, cur_human)
    assert result.p_agreement_drop < 0.001
    assert result.p_bias_shift < 0.001
    assert result.alert


def test_alert_applies_the_bonferroni_correction_across_both_tests() -> None:
    # 80/100 vs 69/100: one-sided pooled z = 1.785, p = 0.037; misses balanced so the bias barely moves
    ref = windows_with_agreement(80, 100, plus=10)
    cur = windows_with_agreement(69, 100, plus=16)
    strict = drift_test(*ref, *cur, alpha=0.05)
    assert strict.p_agreement_drop == pytest.approx(0.0372, abs=5e-4)
    assert strict.p_bias_shift > 0.5
    assert not strict.alert  # 0.037 > 0.05 / 2
    assert drift_test(*ref, *cur, alpha=0.1).alert  # 0.037 < 0.1 / 2


def test_an_improving_judge_is_not_a_drop() -> None:
    ref = windows_with_agreement(60, 100, plus=20)
    cur = windows_with_agreement(95, 100, plus=2)
    result = drift_test(*ref, *cur)
    assert result.p_agreement_drop > 0.99


def test_an_empty_window_cannot_alert() -> None:
    result = drift_test([], [], [3.0, 4.0], [3.0, 4.0])
    assert np.isnan(result.p_agreement_drop) and np.isnan(result.p_bias_shift)
    assert not result.alert
