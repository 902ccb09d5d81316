"""judgewatch's statistics: agreement, prediction-powered estimates, release comparisons and judge drift.
Pure numpy/scipy, vectorized, seeded where random."""

from judgewatch.stats.agreement import (
    ConfusionMatrix,
    bias,
    cohen_kappa,
    confusion_matrix,
    exact_agreement,
    gwet_ac1,
    spearman,
    weighted_kappa,
)
from judgewatch.stats.coverage import SubsetCoverage, subset_coverage
from judgewatch.stats.drift import DriftTest, WindowStats, agreement_series, drift_test, time_windows
from judgewatch.stats.estimate import Estimate, two_sided_p
from judgewatch.stats.krippendorff import krippendorff_alpha
from judgewatch.stats.paired import PairedDiff, align_scores, paired_mean_diff, regressed
from judgewatch.stats.ppi import (
    Difference,
    PPIEstimate,
    SurveyEstimate,
    classical_mean,
    difference,
    ppi_diff_unpaired,
    ppi_mean,
    survey_ppi_mean,
)
from judgewatch.stats.unpaired import UnpairedDiff, shares_items, welch_mean_diff

__all__ = [
    "ConfusionMatrix",
    "Difference",
    "DriftTest",
    "Estimate",
    "PPIEstimate",
    "PairedDiff",
    "SubsetCoverage",
    "SurveyEstimate",
    "UnpairedDiff",
    "WindowStats",
    "agreement_series",
    "align_scores",
    "bias",
    "classical_mean",
    "cohen_kappa",
    "confusion_matrix",
    "difference",
    "drift_test",
    "exact_agreement",
    "gwet_ac1",
    "krippendorff_alpha",
    "paired_mean_diff",
    "ppi_diff_unpaired",
    "ppi_mean",
    "regressed",
    "shares_items",
    "spearman",
    "subset_coverage",
    "survey_ppi_mean",
    "time_windows",
    "two_sided_p",
    "weighted_kappa",
    "welch_mean_diff",
]
