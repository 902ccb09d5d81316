"""The gate's power: the stated detectable drop is caught about 80% of the time by the gate's own rule."""

from __future__ import annotations

import numpy as np
import pytest

from judgewatch.stats.paired import paired_mean_diff, regressed
from judgewatch.stats.power import detectable_drop, items_needed


def test_the_gate_catches_the_stated_detectable_drop_about_80_percent_of_the_time() -> None:
    rng = np.random.default_rng(3)
    n, sd, margin = 40, 1.0, 0.25
    drop = detectable_drop(sd, n, margin)
    caught = [
        regressed(paired_mean_diff(rng.normal(-drop, sd, n), np.zeros(n), n_resamples=999, seed=k).high, margin)
        for k in range(300)
    ]
    # 300 draws: a binomial standard error of 0.023 around 0.8; the BCa interval is a little narrower than t
    assert 0.72 <= np.mean(caught) <= 0.9


def test_a_drop_of_exactly_the_margin_is_caught_about_2_5_percent_of_the_time() -> None:
    rng = np.random.default_rng(4)
    n, sd, margin = 40, 1.0, 0.25
    caught = [
        regressed(paired_mean_diff(rng.normal(-margin, sd, n), np.zeros(n), n_resamples=999, seed=k).high, margin)
        for k in range(300)
    ]
    assert np.mean(caught) <= 0.06


def test_items_needed_is_the_fewest_items_that_reach_the_drop() -> None:
    n = items_needed(1.0, 0.25, 0.5)
    assert detectable_drop(1.0, n, 0.25) <= 0.5 < detectable_drop(1.0, n - 1, 0.25)
    assert n == pytest.approx(((1.96 + 0.8416) / 0.25) ** 2, rel=0.05)  # the normal formula, t a few items more


def test_a_drop_not_beyond_the_margin_or_a_zero_spread_is_refused() -> None:
    with pytest.raises(ValueError, match="must exceed the margin"):
        items_needed(1.0, 0.25, 0.25)
    with pytest.raises(ValueError, match="standard deviation"):
        items_needed(0.0, 0.25, 0.5)
