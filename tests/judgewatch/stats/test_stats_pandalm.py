"""Real labels: PandaLM's 999 pairs, 3 human annotators, gpt-3.5-turbo and PandaLM-7B as judges.

The calibration statistics must hold on work nobody here tuned: human-human kappa as the dataset's README
reports, and PPI intervals (a real judge on all 999 pairs + the human majority on a 10% subset) that cover
the full-data human mean at least 93% of the time over 1,000 seeded subsets.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from judgewatch.stats.agreement import cohen_kappa
from judgewatch.stats.coverage import subset_coverage
from judgewatch.stats.pandalm import PandaLMSet, load_pandalm, majority, preference_score

PANDALM = Path(__file__).resolve().parents[3] / "datasets" / "pandalm"


@pytest.fixture(scope="module")
def pandalm() -> PandaLMSet:
    return load_pandalm(PANDALM)


def judge_preference(verdicts: np.ndarray) -> np.ndarray:
    """The judge as a PPI predictor: an unscored verdict (gpt-3.5 "garbage") predicts no preference (0.5).

    PPI stays unbiased for any fixed prediction rule; the rule only changes how much the judge helps.
    """
    return np.nan_to_num(preference_score(verdicts), nan=0.5)


def test_loader_reads_the_documented_label_counts(pandalm: PandaLMSet) -> None:
    assert Counter(pandalm.human_majority.tolist()) == {2.0: 472, 1.0: 422, 0.0: 105}
    gpt = pandalm.judges["gpt-3.5-turbo"]
    assert int(np.isnan(gpt).sum()) == 25  # "garbage" verdicts are unscored, not a tie
    assert Counter(gpt[~np.isnan(gpt)].tolist()) == {2.0: 476, 1.0: 460, 0.0: 38}
    assert Counter(pandalm.judges["pandalm-7b"].tolist()) == {2.0: 459, 1.0: 433, 0.0: 107}


def test_preference_encoding_and_majority_rule() -> None:
    np.testing.assert_array_equal(preference_score([1, 2, 0, np.nan]), [1.0, 0.0, 0.5, np.nan])
    labels = np.array([[1, 1, 2], [0, 2, 0], [0, 1, 2]], dtype=float)
    np.testing.assert_array_equal(majority(labels), [1.0, 0.0, 0.0])  # no majority counts as a tie


def test_human_annotators_agree_as_the_dataset_reports(pandalm: PandaLMSet) -> None:
    a = pandalm.annotators
    kappas = [cohen_kappa(a[:, i], a[:, j]).estimate for i, j in [(0, 1), (0, 2), (1, 2)]]
    assert all(0.85 <= k <= 0.885 for k in kappas)  # README: pairwise kappa 0.85-0.88


@pytest.mark.parametrize("judge", ["gpt-3.5-turbo", "pandalm-7b"])
def test_real_judges_agree_with_humans_better_than_chance_but_less_than_humans(pandalm: PandaLMSet, judge: str) -> None:
    kappa = cohen_kappa(pandalm.judges[judge], pandalm.human_majority)
    assert kappa.low > 0.3
    assert kappa.high < 0.85


@pytest.mark.parametrize("judge", ["gpt-3.5-turbo", "pandalm-7b"])
def test_ppi_covers_the_full_data_human_mean_on_random_review_subsets(pandalm: PandaLMSet, judge: str) -> None:
    human = preference_score(pandalm.human_majority)
    check = subset_coverage(human, judge_preference(pandalm.judges[judge]), fraction=0.1, draws=1000, seed=0)
    assert check.subset_size == 100
    assert check.ppi_coverage >= 0.93
    assert check.median_width_ratio < 1.0  # the judge earns its place: narrower than humans alone
