"""Krippendorff's alpha against the published example of Krippendorff (2011)."""

from __future__ import annotations

import numpy as np
import pytest

from judgewatch.stats.krippendorff import krippendorff_alpha

_ = np.nan
# "Computing Krippendorff's Alpha-Reliability" (2011), section C: 4 coders x 12 units, values 1-5, gaps missing
RELIABILITY_DATA = np.array(
    [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, _, _, _],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, _, 3],
        [_, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, _],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, _],
    ]
)


@pytest.mark.parametrize(("level", "published"), [("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849)])
def test_alpha_reproduces_krippendorffs_published_example(level: str, published: float) -> None:
    alpha = krippendorff_alpha(RELIABILITY_DATA, level=level)  # type: ignore[arg-type]
    assert alpha.estimate == pytest.approx(published, abs=5e-4)
    assert alpha.low <= alpha.estimate <= alpha.high


def test_units_with_a_single_value_are_not_pairable() -> None:
    # unit 12 has only coder B's value: 11 pairable units remain
    assert krippendorff_alpha(RELIABILITY_DATA, level="nominal").n == 11


def test_alpha_is_one_when_all_coders_agree_despite_missing_values() -> None:
    data = np.array([[1, 2, 3, 4, _], [1, 2, _, 4, 5], [1, _, 3, 4, 5]])
    assert krippendorff_alpha(data, level="ordinal").estimate == pytest.approx(1.0)


def test_alpha_is_near_zero_for_coders_answering_at_random() -> None:
    rng = np.random.default_rng(0)
    data = rng.integers(1, 6, size=(3, 2000)).astype(float)
    alpha = krippendorff_alpha(data, level="nominal", n_boot=200)
    assert abs(alpha.estimate) < 0.03
    assert alpha.low < 0 < alpha.high


def test_alpha_interval_is_seeded() -> None:
    assert krippendorff_alpha(RELIABILITY_DATA, seed=5) == krippendorff_alpha(RELIABILITY_DATA, seed=5)


def test_alpha_rejects_an_unknown_level() -> None:
    with pytest.raises(ValueError, match="unknown level"):
        krippendorff_alpha(RELIABILITY_DATA, level="ratio")  # type: ignore[arg-type]
