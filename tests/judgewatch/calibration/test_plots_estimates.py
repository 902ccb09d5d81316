"""The headline plot draws an interval as it is, also where the point estimate lies outside it.

A PPI estimate can overshoot the rubric's scale while its interval is cut to the scale, and with few labels the
interval's centre moves towards the middle of the scale: `make demo` once failed here with matplotlib's
"'xerr' must not contain negative values" when the plot drew the interval as distances from the point."""

from __future__ import annotations

import io

from PIL import Image

from judgewatch.calibration.estimands import RELEASE, EstimandRow
from judgewatch.calibration.plots import estimates_png
from judgewatch.calibration.tier_gap import GapRow
from judgewatch.regression.tier_gap import GAP_SAME_ITEMS


def row(tier: str, estimate: float, low: float, high: float) -> EstimandRow:
    return EstimandRow(
        estimand=RELEASE, tier=tier, criterion="faithfulness", release="r3", dataset="halluqa", estimate=estimate,
        low=low, high=high, se=0.1, n_sampled=40, n_labeled=6, n_effective=9.0, judge_mean=4.9, human_only=4.8,
        human_low=4.0, human_high=5.0, n_synthetic_labels=0, n_dataset_labels=6,
    )  # fmt: skip


def test_an_estimate_beyond_the_scale_and_outside_its_cut_interval_is_plotted() -> None:
    rows = [row("full", 5.03, 4.71, 5.0), row("quantized", 3.2, 3.35, 4.1)]  # above, and below, the interval
    gap = GapRow(
        estimand=GAP_SAME_ITEMS, criterion="faithfulness", tier="quantized", baseline="full", release="r3",
        estimate=-1.83, low=-1.7, high=-0.9, se=0.2, p_value=0.01, judge_diff=-1.7, n_sampled=40, n_labeled=6,
        n_effective=8.0, reference_mix="",
    )  # fmt: skip
    png = estimates_png(rows, [gap], "release r3")
    image = Image.open(io.BytesIO(png))
    assert image.format == "PNG" and image.size[0] > 100 and image.size[1] > 50
