"""Pairwise preference shares: Wilson intervals per share, the net preference and the exact sign test."""

from __future__ import annotations

import math

import pytest

from judgewatch.stats.preference import preference_shares, sign_test


def test_shares_sum_to_one_and_each_interval_holds_its_share() -> None:
    shares = preference_shares(12, 20, 8)
    assert shares.n == 40 and shares.counts == (12, 20, 8)
    assert shares.worse.estimate + shares.tied.estimate + shares.better.estimate == pytest.approx(1.0)
    for e in (shares.worse, shares.tied, shares.better):
        assert 0.0 <= e.low < e.estimate < e.high <= 1.0
    assert shares.net.estimate == pytest.approx((8 - 12) / 40)
    assert shares.net.low < shares.net.estimate < shares.net.high


def test_sign_test_ignores_ties_and_matches_the_exact_binomial() -> None:
    # 9 better vs 1 worse: P(X <= 1 or X >= 9) under Binomial(10, 1/2) = 22 / 1024.
    assert sign_test(9, 1) == pytest.approx(22 / 1024)
    assert preference_shares(1, 500, 9).p_value == pytest.approx(22 / 1024)
    assert sign_test(5, 5) == pytest.approx(1.0)


def test_all_ties_has_no_sign_test_and_no_pairs_has_no_shares() -> None:
    assert math.isnan(preference_shares(0, 7, 0).p_value)
    empty = preference_shares(0, 0, 0)
    assert empty.n == 0 and math.isnan(empty.better.estimate) and math.isnan(empty.net.estimate)


def test_negative_counts_are_refused_naming_them() -> None:
    with pytest.raises(ValueError, match="worse=-1"):
        preference_shares(-1, 0, 3)
