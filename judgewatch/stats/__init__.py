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
from judgewatch.stats.drift import DriftTest, WindowStats, agreement_series, time_windows
from judgewatch.stats.estimate import Estimate, two_sided_p
from judgewatch.stats.krippendorff import krippendorff_alpha
from judgewatch.stats.ppi import (
    PPIEstimate,
    SurveyEstimate,
    classical_mean,
    difference,
    ppi_diff_unpaired,
    ppi_mean,
    survey_ppi_mean,
)

__all__ = [
    "ConfusionMatrix",
    "DriftTest",
    "Estimate",
    "PPIEstimate",
    "SurveyEstimate",
    "WindowStats",
    "agreement_series",
    "bias",
    "classical_mean",
    "cohen_kappa",
    "confusion_matrix",
    "difference",
    "exact_agreement",
    "gwet_ac1",
    "krippendorff_alpha",
    "ppi_diff_unpaired",
    "ppi_mean",
    "spearman",
    "survey_ppi_mean",
    "time_windows",
    "two_sided_p",
    "weighted_kappa",
]
