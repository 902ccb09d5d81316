"""The reference judge's four development domains, its fit, and the leave-one-domain-out measurement.

Development rows only: HaluEval QA items 40-249; HalluQA's development half by category (`by_category_dev`) but
question_ids 1-40; BEGIN's CMU-DoG and TopicalChat development files but the `Generic` rows. HaluEval items 0-39
and HalluQA's question_ids 1-40 are the mini golden sets (the demo's and the gate's trust sets), held out of every
fit. `fit` is the logistic regression scripts/fit_reference_judge.py writes (`judges.reference_fit`); `leave_one_out`
fits it on three domains and scores the fourth beside plain word recall.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from judges.reference_fit import fit_balanced
from judgewatch.contract.items import JudgeItem
from judgewatch.settings import REPO_ROOT
from judgewatch.stats.auroc import auroc as stats_auroc

DATASETS = REPO_ROOT / "datasets"

BEGIN = DATASETS / "begin_dev"
BEGIN_FILES = {"begin_cmu": ("cmu-dog/begin_dev_cmu.tsv", "cmu"), "begin_tc": ("topicalchat/begin_dev_tc.tsv", "tc")}
RIGHT, WRONG, GENERIC = "Fully attributable", "Not fully attributable", "Generic"
# the demo's and the gate's trust sets: never fitted on (see `domains`)
TRUST_SETS = (DATASETS / "halueval_qa_mini" / "data.jsonl", DATASETS / "halluqa_mini" / "data.jsonl")


@dataclass(frozen=True)
class Case:
    item: JudgeItem
    right: bool
    group: str  # the question: bootstrap unit
    dev: bool  # in the half the judge's design choices were tuned on


def halueval_cases(folder: Path, variant: str = "one-turn") -> list[Case]:
    path = folder / "generation" / "qa" / f"qa_{variant}_data.json"
    cases = []
    for i, line in enumerate(path.read_text(encoding="utf-8").splitlines()):
        row = json.loads(line)
        for right, answer in ((True, row["right_answer"]), (False, row["hallucinated_answer"])):
            item = JudgeItem(
                id=f"halueval-{i}-{'right' if right else 'hallucinated'}",
                question=row["question"],
                answer=answer,
                reference_facts=[row["knowledge"]],
                language="en",
            )
            cases.append(Case(item, right, f"q{i}", i < 250))
    return cases


def by_category_dev(case: Case) -> bool:
    """HalluQA's development half by category: question_id <= 225 and the even ids above (the id split, `Case.dev`,
    holds out every "Misleading-hard" and most "Knowledge" questions)."""
    qid = int(case.group.removeprefix("q"))
    return qid <= 225 or qid % 2 == 0


def halluqa_cases(folder: Path, *, leaky: bool = False) -> tuple[list[Case], int]:
    """(cases, questions left out: their only correct answer would be its own reference). `leaky=True` puts the
    judged answer among its own references, only to show how much that leak would inflate the figure."""
    rows = json.loads((folder / "HalluQA.json").read_text(encoding="utf-8"))
    cases: list[Case] = []
    left_out = 0
    for row in rows:
        qid = row["question_id"]
        best = [(row.get(f"Best Answer{k}") or "").strip() for k in range(1, 5)]
        wrong = [(row.get(f"Wrong_Answer{k}") or "").strip() for k in range(1, 5)]
        source = (row.get("Source") or "").strip()
        evidence = [source] if source and not source.startswith("http") else []
        question, dev, group = row["Question"], qid <= 225, f"q{qid}"

        def add(kind: str, answer: str, right: bool, ref_answer: str | None, facts: list[str]) -> None:
            item = JudgeItem(
                id=f"halluqa-{group}-{kind}",  # noqa: B023 - called only within this iteration
                question=question,  # noqa: B023
                answer=answer,
                reference_answer=ref_answer,
                reference_facts=facts,
                language="zh",
            )
            cases.append(Case(item, right, group, dev))  # noqa: B023

        if sum(1 for b in best if b) >= 2:
            for k in range(4):
                others = [b for j, b in enumerate(best) if (j != k or leaky) and b]
                if best[k]:
                    add(f"best{k + 1}", best[k], True, others[0], others + evidence)
                if wrong[k]:
                    add(f"wrong{k + 1}", wrong[k], False, others[0], others + evidence)
        elif evidence:
            add("best1", next(b for b in best if b), True, None, evidence)
            for k, answer in enumerate(wrong):
                if answer:
                    add(f"wrong{k + 1}", answer, False, None, evidence)
        else:
            left_out += 1
    return cases, left_out


def auroc(scores: np.ndarray, right: np.ndarray) -> float:
    """AUROC of `scores` separating the right answers from the wrong ones, ties counted 1/2."""
    return stats_auroc(scores[right], scores[~right])


@dataclass(frozen=True)
class BeginRow:
    """One BEGIN response: its item (id `begin_dev-<cmu|tc>-NNNN`, 1-based data row), label and generation model."""

    item: JudgeItem
    label: str
    model: str


def begin_rows(domain: str, folder: Path = BEGIN) -> list[BeginRow]:
    """Every row of one BEGIN file; ValueError naming the row when it has not six tab-separated fields."""
    relative, tag = BEGIN_FILES[domain]
    path = folder / relative
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").split("\n")[1:], start=1):
        if not line:
            continue
        fields = line.split("\t")
        if len(fields) != 6:
            raise ValueError(f"{path}: data row {number} has {len(fields)} tab-separated fields, expected 6")
        model, _, knowledge, message, response, label = fields
        label = label.strip()
        if label not in (RIGHT, WRONG, GENERIC):
            raise ValueError(f"{path}: data row {number}: unknown begin_label {label!r}")
        item = JudgeItem(
            id=f"begin_dev-{tag}-{number:04d}", question=message, answer=response, context=[knowledge], language="en"
        )
        rows.append(BeginRow(item, label, model))
    return rows


def begin_cases(domain: str, folder: Path = BEGIN) -> list[Case]:
    """The rows with a faithfulness label (not `Generic`), as benchmark cases (each response its own group)."""
    return [Case(r.item, r.label == RIGHT, r.item.id, True) for r in begin_rows(domain, folder) if r.label != GENERIC]


def trust_set_ids(sets: Sequence[Path] = TRUST_SETS) -> frozenset[str]:
    """The item ids of the golden sets `sets` (`data.jsonl`, one JSON object with an `id` a line)."""
    return frozenset(
        json.loads(line)["id"] for path in sets for line in path.read_text(encoding="utf-8").splitlines() if line
    )


def domains() -> dict[str, list[Case]]:
    """The four development domains without the mini golden sets' items (`TRUST_SETS`): trust validation takes no
    in-sample item as evidence, so the sets the demo and the gate trust the judge on stay out of every fit."""
    held_out = trust_set_ids()
    sets = {
        "halueval": [c for c in halueval_cases(DATASETS / "halueval_upstream") if c.dev],
        "halluqa": [c for c in halluqa_cases(DATASETS / "halluqa_upstream")[0] if by_category_dev(c)],
        **{name: begin_cases(name) for name in BEGIN_FILES},
    }
    return {name: [c for c in cases if golden_id(c) not in held_out] for name, cases in sets.items()}


def golden_id(case: Case) -> str:
    """The id of the data-set item a case comes from, as `fit_items` names it: `halueval_qa-NNNN` (1-based upstream
    row, the golden set's id), `halluqa-NNNN` (question_id, the golden set's id), `begin_dev-<cmu|tc>-NNNN`."""
    if case.item.id.startswith("halueval-"):
        return f"halueval_qa-{int(case.group.removeprefix('q')) + 1:04d}"
    if case.item.id.startswith("halluqa-"):
        return f"halluqa-{int(case.group.removeprefix('q')):04d}"
    return case.item.id


Inputs = Callable[[Case], Mapping[str, float]]


def matrix(cases: Sequence[Case], inputs: Inputs, names: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    values = [inputs(c) for c in cases]
    return np.array([[v[n] for n in names] for v in values], dtype=float), np.array([c.right for c in cases])


def fit(sets: Mapping[str, Sequence[Case]], inputs: Inputs, names: Sequence[str], l2: float) -> np.ndarray:
    """Coefficients then intercept, fitted on `sets` with each set weighing the same in the fit."""
    return fit_balanced([matrix(cases, inputs, names) for cases in sets.values()], l2)


@dataclass(frozen=True)
class LeftOut:
    """One left-out domain: the scores of the model fitted on the others and the baseline's, on the same rows."""

    domain: str
    model: np.ndarray
    baseline: np.ndarray

    def auroc(self, cases: Sequence[Case]) -> tuple[float, float]:
        right = np.array([c.right for c in cases])
        return auroc(self.model, right), auroc(self.baseline, right)


def leave_one_out(
    sets: Mapping[str, Sequence[Case]],
    inputs: Inputs,
    names: Sequence[str],
    baseline: Callable[[Case], float],
    l2: float,
) -> list[LeftOut]:
    """For each domain: fit on every other one, score this one with the fit and with the baseline."""
    out = []
    for domain, cases in sets.items():
        coef = fit({d: c for d, c in sets.items() if d != domain}, inputs, names, l2)
        x, _ = matrix(cases, inputs, names)
        out.append(LeftOut(domain, x @ coef[:-1] + coef[-1], np.array([baseline(c) for c in cases])))
    return out


def group_resamples(groups: Sequence[str], right: np.ndarray, n: int, seed: int) -> Iterator[np.ndarray]:
    """The rows of `n` seeded resamples of whole groups; a resample holding one class only is skipped (no AUROC)."""
    index: dict[str, list[int]] = {}
    for i, g in enumerate(groups):
        index.setdefault(g, []).append(i)
    members = list(index.values())
    rng = np.random.default_rng(seed)
    for _ in range(n):
        rows = np.concatenate([members[p] for p in rng.integers(0, len(members), len(members))])
        if 0 < right[rows].sum() < len(rows):
            yield rows


def paired_bootstrap(
    model: np.ndarray, baseline: np.ndarray, right: np.ndarray, groups: Sequence[str], n: int, seed: int
) -> dict[str, tuple[float, float]]:
    """95% percentile intervals of the model's AUROC, the baseline's and their difference, from the same
    resamples of whole groups (questions, or BEGIN responses)."""
    resamples = group_resamples(groups, right, n, seed)
    pairs = np.array([(auroc(model[rows], right[rows]), auroc(baseline[rows], right[rows])) for rows in resamples])
    bounds = {
        "model": np.percentile(pairs[:, 0], [2.5, 97.5]),
        "baseline": np.percentile(pairs[:, 1], [2.5, 97.5]),
        "difference": np.percentile(pairs[:, 0] - pairs[:, 1], [2.5, 97.5]),
    }
    return {name: (float(low), float(high)) for name, (low, high) in bounds.items()}


def pasted(item: JudgeItem) -> JudgeItem:
    """The fault audit's answer: the known-bad answer followed by the item's reference facts ("First for Women was
    started first. (As the references say: ...)")."""
    facts = " ".join(item.reference_facts or [item.reference_answer or ""])
    tail = f"（参考资料说：{facts}）" if item.lang == "zh" else f" (As the references say: {facts})"
    return item.model_copy(update={"id": f"{item.id}:pasted", "answer": item.answer + tail})


def high_share(verdicts: Sequence[Mapping[str, int | None]], criterion: str, level: int = 4) -> float:
    """Share of the verdicts scoring `criterion` >= level, among those that score it."""
    scored = [v[criterion] for v in verdicts if v.get(criterion) is not None]
    return sum(1 for s in scored if s is not None and s >= level) / len(scored) if scored else float("nan")
