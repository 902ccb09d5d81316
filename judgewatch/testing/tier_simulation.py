"""A synthetic population with known truth, to prove the traffic estimators' intervals (bench/tier_inference.py).

The truth is the mean *human* score (`expected_label`); the design, the four estimators per quantity (corrected,
what judgewatch reports; human; naive; pooled) and the figures: bench/README.md, "Traffic tier inference with known
truth".
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from judgewatch.calibration.tier_gap import mix_weights
from judgewatch.stats import SurveyEstimate, difference, ppi_diff_unpaired, ppi_mean, survey_ppi_mean
from judgewatch.stats.estimate import z_value

TIERS = ("full", "int4")
ROUTES = ("chat", "code")
LANGS = ("en", "zh")
QUANTITIES = ("mean full", "mean int4", "gap unadjusted", "gap adjusted")
METHODS = ("corrected", "human", "naive", "pooled")


@dataclass(frozen=True)
class Design:
    """The population and the sampling/routing design; defaults are the bench's."""

    population: int = 40_000
    share_int4: float = 0.5
    code_share: tuple[float, float] = (0.25, 0.6)  # per tier: share of code requests
    long_share: tuple[float, float] = (0.3, 0.55)
    zh_share: float = 0.3
    rates: dict[str, float] = field(
        default_factory=lambda: {"full/chat": 0.03, "full/code": 0.15, "int4/chat": 0.08, "int4/code": 0.25}
    )
    uniform_route: float = 0.10
    borderline_route: float = 0.30
    double_label_share: float = 0.2
    reviewer_error: float = 0.25  # chance a label is one point off
    golden_items: int = 300
    labels_per_tier: int | None = None  # k: route exactly k sampled items per tier at random (the small-n runs)
    weighted: bool = True  # False: the corrected estimator ignores the probabilities (the test's sabotage)


@dataclass
class Outcome:
    """Per replication, quantity and method: covered?, width, error against the truth."""

    covered: dict[tuple[str, str], list[bool]] = field(default_factory=dict)
    width: dict[tuple[str, str], list[float]] = field(default_factory=dict)
    error: dict[tuple[str, str], list[float]] = field(default_factory=dict)

    def add(self, quantity: str, method: str, est: float, low: float, high: float, truth: float) -> None:
        key = (quantity, method)
        ok = bool(np.isfinite(low) and low <= truth <= high)
        self.covered.setdefault(key, []).append(ok)
        self.width.setdefault(key, []).append(float(high - low))
        self.error.setdefault(key, []).append(float(est - truth))

    def coverage(self, quantity: str, method: str) -> float:
        return float(np.mean(self.covered[(quantity, method)]))

    def lowest(self, method: str) -> float:
        return min(self.coverage(q, method) for q in QUANTITIES)


def _population(rng: np.random.Generator, d: Design) -> dict[str, np.ndarray]:
    """Integer-coded columns: tier (0 full, 1 int4), code, long, zh, cell (0-7), truth, judge."""
    n = d.population
    tier = (rng.random(n) < d.share_int4).astype(int)
    code = (rng.random(n) < np.take(d.code_share, tier)).astype(int)
    long = (rng.random(n) < np.take(d.long_share, tier)).astype(int)
    zh = (rng.random(n) < d.zh_share).astype(int)
    mu = 4.1 - 0.7 * code - 0.5 * long - 0.2 * zh - tier * (0.2 + 0.2 * long)
    truth = np.clip(np.rint(mu + rng.normal(0, 0.8, n)), 1, 5)
    bias = 0.1 + tier * (0.2 + 0.4 * code) + (1 - tier) * 0.3 * long  # the judge flatters int4 code answers
    judge = np.clip(np.rint(truth + bias + rng.normal(0, 0.7, n)), 1, 5)
    cell = code * 4 + zh * 2 + long
    return {"tier": tier, "code": code, "long": long, "zh": zh, "cell": cell, "truth": truth, "judge": judge}


def _label(rng: np.random.Generator, truth: np.ndarray, d: Design) -> np.ndarray:
    label = truth + rng.choice([-1.0, 1.0], truth.size) * (rng.random(truth.size) < d.reviewer_error)
    return np.where((label < 1) | (label > 5), truth, label)  # never off the scale


def expected_label(truth: np.ndarray, d: Design) -> np.ndarray:
    """E[label | true quality] under `_label`: the quality, moved inwards by error/2 at the scale's ends."""
    half = d.reviewer_error / 2.0
    return truth + half * (truth == 1) - half * (truth == 5)


def _sample(rng: np.random.Generator, pop: dict[str, np.ndarray], d: Design) -> pd.DataFrame:
    """The sampled interactions as the score frame would hold them, with routing and labels."""
    rate = np.array([[d.rates[f"{t}/{r}"] for r in ROUTES] for t in TIERS])
    pi = rate[pop["tier"], pop["code"]]
    mask = rng.random(pi.size) < pi
    truth, judge = pop["truth"][mask], pop["judge"][mask]
    if d.labels_per_tier is None:
        rho = 1 - (1 - d.uniform_route) * (1 - d.borderline_route * (judge == 3))
        routed = rng.random(truth.size) < rho
    else:
        rho, routed = _fixed_labels(rng, pop["tier"][mask], d.labels_per_tier)
    first = _label(rng, truth, d)
    double = routed & (rng.random(truth.size) < d.double_label_share)
    second = _label(rng, truth, d)
    return pd.DataFrame(
        {
            "tier": np.take(TIERS, pop["tier"][mask]),
            "route": np.take(ROUTES, pop["code"][mask]),
            "language": np.take(LANGS, pop["zh"][mask]),
            "prompt_chars": np.where(pop["long"][mask] == 1, 1500, 120),  # long requests: a request-side cell
            "truth": truth,
            "judge": judge,
            "sample_prob": pi[mask],
            "inclusion_prob": np.where(routed, rho, np.nan),
            "human": np.where(routed, first, np.nan),  # the first label counts, as in the store
            "second": np.where(double, second, np.nan),
        }
    )


def _fixed_labels(rng: np.random.Generator, tier: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Exactly k routed items per tier, a simple random sample of its sampled items (probability k / n_tier)."""
    rho, routed = np.zeros(tier.size), np.zeros(tier.size, dtype=bool)
    for t in np.unique(tier):
        rows = np.flatnonzero(tier == t)
        rho[rows] = min(k, rows.size) / rows.size
        routed[rng.choice(rows, min(k, rows.size), replace=False)] = True
    return rho, routed


def _golden(rng: np.random.Generator, tier: int, d: Design) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A tier's golden items (easier than traffic): judge scores, labels where routed (NaN), routing prob."""
    truth = np.clip(np.rint(4.4 - 0.2 * tier + rng.normal(0, 0.6, d.golden_items)), 1, 5)
    judge = np.clip(np.rint(truth + 0.1 + rng.normal(0, 0.7, d.golden_items)), 1, 5)
    rho = np.full(d.golden_items, d.uniform_route)
    routed = rng.random(d.golden_items) < rho
    return judge, np.where(routed, _label(rng, truth, d), np.nan), rho


def _corrected(
    s: pd.DataFrame, d: Design, weight: np.ndarray | None = None, lam: float | None = None
) -> SurveyEstimate:
    pi = s["sample_prob"].to_numpy() if d.weighted else np.ones(len(s))
    rho = s["inclusion_prob"].to_numpy() if d.weighted else np.where(s["human"].notna(), 1.0, np.nan)
    return survey_ppi_mean(s["judge"].to_numpy(), pi, s["human"].to_numpy(), rho, weight=weight, lam=lam)


def replicate(rng: np.random.Generator, d: Design, out: Outcome) -> None:
    """One population, one sample, every interval checked against the truth."""
    pop = _population(rng, d)
    sample = _sample(rng, pop, d)
    z = z_value(0.95)
    by = {t: sample[sample["tier"] == t] for t in TIERS}
    human = expected_label(pop["truth"], d)
    truth = {t: float(human[pop["tier"] == k].mean()) for k, t in enumerate(TIERS)}
    est, hum, naive, pooled = {}, {}, {}, {}
    for k, t in enumerate(TIERS):
        s = by[t]
        est[t], hum[t] = _corrected(s, d), _corrected(s, d, lam=0.0)
        f = s["judge"].to_numpy()
        naive[t] = (float(f.mean()), float(f.std(ddof=1) / np.sqrt(f.size)))
        gj, gy, grho = _golden(rng, k, d)
        lab = s["human"].notna().to_numpy()
        y = np.concatenate([s["human"].to_numpy()[lab], gy[np.isfinite(gy)]])
        fl = np.concatenate([f[lab], gj[np.isfinite(gy)]])
        rho = np.concatenate([s["inclusion_prob"].to_numpy()[lab], grho[np.isfinite(gy)]])
        pooled[t] = ppi_mean(y, fl, np.concatenate([f, gj]), inclusion_prob=rho)
        q = f"mean {t}"
        out.add(q, "corrected", est[t].estimate, est[t].low, est[t].high, truth[t])
        out.add(q, "human", hum[t].estimate, hum[t].low, hum[t].high, truth[t])
        out.add(q, "naive", naive[t][0], naive[t][0] - z * naive[t][1], naive[t][0] + z * naive[t][1], truth[t])
        out.add(q, "pooled", pooled[t].estimate, pooled[t].low, pooled[t].high, truth[t])
    a, b = TIERS[1], TIERS[0]
    gap_truth = truth[a] - truth[b]
    for method, (ea, eb) in (("corrected", (est[a], est[b])), ("human", (hum[a], hum[b]))):
        g = difference(ea.estimate, ea.se, eb.estimate, eb.se, df=min(ea.n_labeled, eb.n_labeled) - 1)
        out.add("gap unadjusted", method, g.estimate, g.low, g.high, gap_truth)
    g = difference(naive[a][0], naive[a][1], naive[b][0], naive[b][1])
    out.add("gap unadjusted", "naive", g.estimate, g.low, g.high, gap_truth)
    pg = ppi_diff_unpaired(pooled[a], pooled[b])
    out.add("gap unadjusted", "pooled", pg.estimate, pg.low, pg.high, gap_truth)
    _adjusted(pop, by[a], by[b], d, out)


def _adjusted(pop: dict[str, np.ndarray], a: pd.DataFrame, b: pd.DataFrame, d: Design, out: Outcome) -> None:
    """The gap adjusted to the pooled mix of both tiers' traffic; truth from the population's own cells."""
    cell, tier, truth_i = pop["cell"], pop["tier"], expected_label(pop["truth"], d)
    mean = [np.bincount(cell[tier == k], truth_i[tier == k], 8) / np.bincount(cell[tier == k], None, 8) for k in (0, 1)]
    share = np.bincount(cell, None, 8) / cell.size
    truth = float(share @ (mean[1] - mean[0]))
    mix = mix_weights(a, b)
    for method, lam in (("corrected", None), ("human", 0.0)):
        ea, eb = _corrected(a, d, mix.weight_a, lam), _corrected(b, d, mix.weight_b, lam)
        g = difference(ea.estimate, ea.se, eb.estimate, eb.se, df=min(ea.n_labeled, eb.n_labeled) - 1)
        out.add("gap adjusted", method, g.estimate, g.low, g.high, truth)
    fa, fb = a["judge"].to_numpy(), b["judge"].to_numpy()
    naive = difference(fa.mean(), fa.std(ddof=1) / np.sqrt(fa.size), fb.mean(), fb.std(ddof=1) / np.sqrt(fb.size))
    out.add("gap adjusted", "naive", naive.estimate, naive.low, naive.high, truth)
    ga, gb = a["human"].notna().to_numpy(), b["human"].notna().to_numpy()
    pa = ppi_mean(a["human"][ga], fa[ga], fa, inclusion_prob=a["inclusion_prob"][ga])
    pb = ppi_mean(b["human"][gb], fb[gb], fb, inclusion_prob=b["inclusion_prob"][gb])
    pooled = ppi_diff_unpaired(pa, pb)
    out.add("gap adjusted", "pooled", pooled.estimate, pooled.low, pooled.high, truth)


def run(reps: int, *, seed: int = 20261201, design: Design | None = None) -> Outcome:
    """`reps` independent replications (a fresh population each), seeded."""
    d = design or Design()
    rng = np.random.default_rng(seed)
    out = Outcome()
    for _ in range(reps):
        replicate(rng, d, out)
    return out
