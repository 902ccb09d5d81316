"""judgewatch's statistics: judge-human agreement, prediction-powered tier estimates, the paired release
comparison and judge drift. Pure numpy/scipy, vectorized, seeded where random."""

from judgewatch.stats.agreement import (
    ConfusionMatrix,
    bias,
    cohen_kappa,
    confusion_matrix,
    exact_agreement,
    spearman,
    weighted_kappa,
)
from judgewatch.stats.coverage import SubsetCoverage, subset_coverage
from judgewatch.stats.drift import DriftTest, WindowStats, agreement_series, drift_test, time_windows
from judgewatch.stats.estimate import Estimate
from judgewatch.stats.krippendorff import krippendorff_alpha
from judgewatch.stats.paired import PairedDiff, align_scores, paired_mean_diff, regressed
from judgewatch.stats.ppi import PPIEstimate, classical_mean, ppi_diff_paired, ppi_diff_unpaired, ppi_mean

__all__ = [
    "ConfusionMatrix",
    "DriftTest",
    "Estimate",
    "PPIEstimate",
    "PairedDiff",
    "SubsetCoverage",
    "WindowStats",
    "agreement_series",
    "align_scores",
    "bias",
    "classical_mean",
    "cohen_kappa",
    "confusion_matrix",
    "drift_test",
    "exact_agreement",
    "krippendorff_alpha",
    "paired_mean_diff",
    "ppi_diff_paired",
    "ppi_diff_unpaired",
    "ppi_mean",
    "regressed",
    "spearman",
    "subset_coverage",
    "time_windows",
    "weighted_kappa",
]
