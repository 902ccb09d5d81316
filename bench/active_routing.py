"""Benchmark: uncertainty-weighted review routing against the uniform share, at an equal label budget, on real labels.

Each draw fits the plan on an earlier period's labels and routes the current period both ways; both estimators'
95% intervals are checked against its all-human mean (data and method: bench/README.md, "Active routing").
Last line: `active-routing coverage C width_ratio W` (C the lowest active coverage, W the traffic estimator's mean
width active / uniform). Goal: W <= 0.85 with C >= 0.93.

Run: .venv/bin/python bench/active_routing.py [--draws 500] [--share 0.1] [--seed 20261207]
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # `python bench/x.py`: the repo root, for bench.*

from bench.reference_domains import DATASETS, GENERIC, RIGHT, begin_rows, halueval_cases
from judges.reference import ReferenceJudge
from judgewatch.contract.rubric import load_rubric
from judgewatch.review.active import WINDOW_DAYS, Plan, cell_keys, fit_spreads, scale_to_budget
from judgewatch.settings import REPO_ROOT
from judgewatch.stats import ppi_mean, survey_ppi_mean
from judgewatch.stats.pandalm import load_pandalm

COVERAGE_LIMIT = 0.93
WIDTH_LIMIT = 0.85
CRITERION = "faithfulness"
ESTIMATORS = ("release", "traffic")


@dataclass(frozen=True)
class DataSet:
    """One population: human label, judge score and the judge's cell (review/active.py) per item, and the scale."""

    name: str
    human: np.ndarray
    judge: np.ndarray
    keys: list[str]
    bounds: tuple[float, float]


def reference_set(name: str, items: list[tuple[object, bool]]) -> DataSet:
    """Items judged by the offline reference judge on `answer_quality`; those it leaves unscored are left out."""
    rubric = load_rubric("answer_quality", REPO_ROOT / "rubrics")
    judge, width = ReferenceJudge(), float(rubric.scale.max - rubric.scale.min)
    human, scores, keys = [], [], []
    for item, right in items:
        verdict = judge.judge_sync(item, rubric)  # type: ignore[arg-type]
        if verdict.scores.get(CRITERION) is None:
            continue
        human.append(float(rubric.scale.max if right else rubric.scale.min))
        scores.append(float(verdict.scores[CRITERION]))
        keys.append(cell_keys(rubric.name, verdict.scores, verdict.expected_scores, width)[CRITERION])
    return DataSet(name, np.array(human), np.array(scores), keys, (rubric.scale.min, rubric.scale.max))


def pandalm_sets() -> list[DataSet]:
    data = load_pandalm(DATASETS / "pandalm")
    code = {1.0: 3.0, 0.0: 2.0, 2.0: 1.0}  # response 1 better, tie, response 2 better
    human = np.array([code[c] for c in data.human_majority])
    gpt = np.array([code.get(c, 2.0) for c in np.nan_to_num(data.judges["gpt-3.5-turbo"], nan=0.0)])
    second = np.array([code[c] for c in data.judges["pandalm-7b"]])
    alone = [cell_keys("pairwise", {"preference": g}, None, 2.0)["preference"] for g in gpt]
    both = [
        cell_keys("pairwise", {"preference": g, "second": s}, None, 2.0)["preference"]
        for g, s in zip(gpt, second, strict=True)
    ]
    return [DataSet("pandalm", human, gpt, alone, (1, 3)), DataSet("pandalm+second-judge", human, gpt, both, (1, 3))]


def data_sets() -> list[DataSet]:
    begin = [(r.item, r.label == RIGHT) for d in ("begin_cmu", "begin_tc") for r in begin_rows(d) if r.label != GENERIC]
    halueval = [(c.item, c.right) for c in halueval_cases(DATASETS / "halueval_upstream") if not c.dev]
    return [reference_set("begin_dev", begin), reference_set("halueval", halueval), *pandalm_sets()]


def plan_for(data: DataSet, fit: np.ndarray, labeled: np.ndarray, share: float, weight: float) -> Plan:
    """The plan fitted on the labels `labeled` (weights `weight` = 1 / their probability) of the items `fit`,
    scaled to `share` of items like `fit`."""
    keys = [data.keys[i] for i in fit]
    spreads = fit_spreads(
        [k for k, lab in zip(keys, labeled, strict=True) if lab],
        (data.human[fit] - data.judge[fit])[labeled],
        np.full(int(labeled.sum()), weight),
    )
    uniform, scale = scale_to_budget([Plan(0.0, 0.0, spreads).spread([k]) for k in keys], share)
    return Plan(uniform, scale, spreads)


def probabilities(plan: Plan, keys: list[str]) -> np.ndarray:
    table = {k: plan.probability([k]) for k in set(keys)}
    return np.array([table[k] for k in keys])


def intervals(data: DataSet, items: np.ndarray, pi: np.ndarray, rng: np.random.Generator) -> list[tuple[float, ...]]:
    """(covers, width, labels) of the release and the traffic estimator on one Poisson draw at `pi`."""
    y, f = data.human[items], data.judge[items]
    truth, routed = float(y.mean()), rng.random(items.size) < pi
    release = ppi_mean(y[routed], f[routed], f, inclusion_prob=pi[routed], bounds=data.bounds)
    traffic = survey_ppi_mean(f, np.ones(items.size), np.where(routed, y, np.nan), pi, bounds=data.bounds)
    return [(float(e.low <= truth <= e.high), e.high - e.low, float(routed.sum())) for e in (release, traffic)]


def neyman_bound(data: DataSet) -> float:
    """The large-sample floor of W these cells allow: E[s] / E[s^2]^(1/2), s the spread of label - score about its
    mean in the item's cell, on every label (the standard-error ratio of pi proportional to s against uniform)."""
    resid = data.human - data.judge
    keys = np.array(data.keys)
    spread = np.zeros(resid.size)
    for key in set(data.keys):
        spread[keys == key] = np.sqrt(np.mean((resid[keys == key] - resid.mean()) ** 2))
    return float(spread.mean() / np.sqrt(np.mean(spread**2)))


def run(data: DataSet, draws: int, share: float, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Per policy ("active", "uniform", "hindsight"): draws x estimators x (covers, width, labels)."""
    fit_share = min(1.0, WINDOW_DAYS * share)
    out: dict[str, list[list[tuple[float, ...]]]] = {"active": [], "uniform": [], "hindsight": []}
    for _ in range(draws):
        order = rng.permutation(data.human.size)
        earlier, current = order[: order.size // 2], order[order.size // 2 :]
        plan = plan_for(data, earlier, rng.random(earlier.size) < fit_share, share, 1.0 / fit_share)
        hindsight = plan_for(data, current, np.ones(current.size, dtype=bool), share, 1.0)
        cur_keys = [data.keys[i] for i in current]
        out["active"].append(intervals(data, current, probabilities(plan, cur_keys), rng))
        out["uniform"].append(intervals(data, current, np.full(current.size, share), rng))
        out["hindsight"].append(intervals(data, current, probabilities(hindsight, cur_keys), rng))
    return {name: np.array(rows) for name, rows in out.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=500)
    parser.add_argument("--share", type=float, default=0.1, help="label budget: share of a period's items")
    parser.add_argument("--seed", type=int, default=20261207)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    coverages, ratios = [], []
    print(f"{args.draws} draws, budget {args.share:.0%} of the current period, 95% intervals")
    for data in data_sets():
        res = run(data, args.draws, args.share, rng)
        size, human, judge = data.human.size - data.human.size // 2, data.human.mean(), data.judge.mean()
        print(
            f"{data.name}: {size} items a period, all-human mean {human:.3f}, judge mean {judge:.3f};"
            f" large-sample floor of W with these cells {neyman_bound(data):.3f}"
        )
        for k, estimator in enumerate(ESTIMATORS):
            act, uni, hind = (res[policy][:, k, :].mean(axis=0) for policy in ("active", "uniform", "hindsight"))
            ratio = float(act[1] / uni[1])
            print(
                f"  {estimator:<8} coverage active {act[0]:.3f} uniform {uni[0]:.3f};"
                f" labels {act[2]:.1f} / {uni[2]:.1f}; width {act[1]:.3f} / {uni[1]:.3f} W {ratio:.3f}"
                f" (hindsight {hind[1] / uni[1]:.3f}, coverage {hind[0]:.3f})"
            )
            if "+" not in data.name:  # the diagnostic rows stay out of the last line
                coverages.append(float(act[0]))
                ratios += [ratio] if estimator == "traffic" else []
    c, w = min(coverages), float(np.mean(ratios))
    verdict = "OK" if w <= WIDTH_LIMIT and c >= COVERAGE_LIMIT else "NOT MET"
    print(f"goal W <= {WIDTH_LIMIT} with C >= {COVERAGE_LIMIT}: {verdict}")
    print(f"active-routing coverage {c:.3f} width_ratio {w:.3f}")


if __name__ == "__main__":
    main()
