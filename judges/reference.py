"""The offline reference judge: scores from where the references support the answer's words, and how.

No language model and no I/O but its fitted coefficients, read once: deterministic and fast, the last link of every
fallback chain and the tests' fast judge. What it scores, and cannot see, measured: docs/judges.md, section 1.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from judges._claims import (
    claims,
    fact_recall,
    features,
    judged_text,
    makes_claim,
    recall,
    reference_texts,
    unsegmented_features,
)
from judges._evidence import Evidence, evidence
from judges._text import is_bare_yes_no, negated, tokenize, union
from judges._text import share as _share
from judges.alignment import Alignment, for_rubric
from judges.base import config_hash, no_reference_verdict, none_scored, plan, scored_verdict, unscored
from judges.reference_model import FaithfulnessModels, load_models
from judgewatch.contract.items import JudgeItem
from judgewatch.contract.rubric import Rubric
from judgewatch.contract.verdicts import JudgeIdentity, UnscoredReason, Verdict

logger = logging.getLogger(__name__)

# Bump on ANY change that can alter a score (tokenizer, weights, formulas, cuts): it is in the config hash.
ALGORITHM_VERSION = "3.0.0"  # 3.0.0: four-domain faithfulness model; relevance counts the claim sentences
NAME = "reference-overlap"
CRITERIA = ("relevance", "faithfulness", "completeness")

# Languages without word boundaries (no sentence order): faithfulness is the `zh` model over coverage,
# polarity and recall of the references (judges/reference_model.py), fitted on a development half that holds
# every HalluQA category (bench/README.md, 2.2.0: a model fitted on "Misleading" questions alone did not carry over).
UNSEGMENTED_LANGUAGES = frozenset({"zh"})
RELEVANCE_SATURATION = 0.5  # repeating half of the question's content words is fully on-topic
ON_TOPIC_FLOOR = 0.6  # relevance floor = this x support, when the references are on-topic
ON_TOPIC_MIN_OVERLAP = 0.2  # references are on-topic when they hold this share of the question's tokens

# Raw-score cut points of levels 2, 3, 4, 5 on a 1-5 scale (the anchors' wording, read as coverage):
#   faithfulness (a probability): 5 = >= 0.8 (an answer supported as written by one sentence of a passage,
#                 with nothing against it, reaches 0.84; in Chinese, one that restates every reference
#                 text, 0.9996), 4 = >= 0.6, 3 = >= 0.4, 2 = >= 0.2, 1 = less.
#   completeness: 5 = >= 85% of the reference covered, 4 = >= 60%, 3 = >= 35% (about half), 2 = >= 15%.
#   relevance:    5 = >= 0.8, 4 = >= 0.6, 3 = >= 0.4, 2 = >= 0.2.
# Other scales: the cuts define a piecewise-linear map of [0, 1] onto [0, 1] (cut k -> k/5), and that position
# is split into equal bins, one per level; on a 1-5 scale this gives exactly the cuts above.
CUTS: Mapping[str, tuple[float, float, float, float]] = {
    "faithfulness": (0.2, 0.4, 0.6, 0.8),
    "completeness": (0.15, 0.35, 0.6, 0.85),
    "relevance": (0.2, 0.4, 0.6, 0.8),
}


@dataclass(frozen=True)
class Coverage:
    """Raw scores of one item and what the reason sentence needs; a criterion it cannot measure is None."""

    relevance: float
    faithfulness: float | None
    completeness: float | None
    unsupported_numbers: tuple[str, ...] = ()
    unsupported_names: tuple[str, ...] = ()
    polarity_flip: bool = False
    empty_answer: bool = False
    bare_yes_no: bool = False
    completeness_target: str = ""  # "reference answer" | "reference facts" | ""
    support: float = 0.0  # share of the answer found anywhere in the references (one bag of words)
    evidence: Evidence | None = None
    no_claim: bool = False  # small talk or nothing: faithfulness not applicable
    costs: Mapping[str, float] = field(default_factory=dict)  # log-odds each evidence feature cost
    inputs: Mapping[str, float] = field(default_factory=dict)  # the faithfulness model's feature values

    def raw(self) -> dict[str, float]:
        values = {"relevance": self.relevance, "faithfulness": self.faithfulness, "completeness": self.completeness}
        return {name: value for name, value in values.items() if value is not None}


def feature_set(item: JudgeItem) -> str:
    """Which fitted model reads the item's faithfulness: `zh` for UNSEGMENTED_LANGUAGES, else `default`."""
    return "zh" if item.lang in UNSEGMENTED_LANGUAGES else "default"


def coverage(item: JudgeItem, models: FaithfulnessModels | None = None) -> Coverage:
    """Raw scores of `item` in [0, 1]: pure function of the item's texts, cached per text."""
    models = models or load_models()
    answer_text = judged_text(item)  # "I am not certain, but X" claims X; quotes of the references claim nothing
    answer = tokenize(answer_text)
    question = tokenize(item.question)
    texts = reference_texts(item)
    references = union(texts)
    claim_text = claims(answer_text, question, references)
    # Polarity from the claims: a filler sentence's "not" ("if anything is not clear...") answers nothing.
    flip = bool(item.reference_answer) and negated(claim_text) != negated(item.reference_answer or "")
    bare = not answer and is_bare_yes_no(answer_text)  # "No.": nothing to check but the polarity
    empty = not answer and not bare
    claim = makes_claim(answer_text, item)

    faithfulness: float | None = None
    numbers: tuple[str, ...] = ()
    names: tuple[str, ...] = ()
    support = 0.0
    ev: Evidence | None = None
    costs: dict[str, float] = {}
    values: dict[str, float] = {}
    claimed = tokenize(claim_text)
    if item.has_references:
        support = 1.0 if not answer else (_share(answer, references) or 0.0)
        if feature_set(item) == "zh":
            values = unsegmented_features(support, flip, fact_recall(item, claimed, question))
        else:
            ev = evidence(answer_text, claim_text, texts)
            values = features(ev, answer_text)
        model = models.for_language(feature_set(item))
        if claim:  # small talk ("i agree!") claims nothing: faithfulness is not applicable, not a pass or a fail
            faithfulness = model.probability(values)
            costs = model.costs(values)
        missing = [n for n in answer.numbers if n not in references.weights]
        # "1850-05-03" stands for its own "1850" and "1850-05" (judges._numbers.spelled_dates)
        numbers = tuple(sorted(n for n in missing if not any(m != n and m.startswith(n + "-") for m in missing)))
        names = tuple(sorted(word for n, word in answer.names.items() if n not in references.weights))

    completeness: float | None = None
    target = ""
    if item.reference_answer:
        completeness, target = recall(item.reference_answer, claimed, question, flip), "reference answer"
    elif item.reference_facts:
        recalls = [recall(fact, claimed, question, False) for fact in item.reference_facts]
        completeness, target = sum(recalls) / len(recalls), "reference facts"

    repeated = _share(question, claimed)  # a restated question is not an answer to it (see `claims`)
    relevance = 0.0 if repeated is None or empty else min(1.0, repeated / RELEVANCE_SATURATION)
    if references and not empty and (_share(question, references) or 0.0) >= ON_TOPIC_MIN_OVERLAP:
        relevance = max(relevance, ON_TOPIC_FLOOR * support)
    if bare or (repeated is None and not empty):  # a bare yes/no, or a question with no content words
        relevance = max(relevance, ON_TOPIC_FLOOR)

    return Coverage(
        relevance=relevance, faithfulness=faithfulness, completeness=completeness, unsupported_numbers=numbers,
        unsupported_names=names, polarity_flip=flip, empty_answer=empty, bare_yes_no=bare, no_claim=not claim,
        completeness_target=target, support=support, evidence=ev, costs=costs, inputs=values,
    )  # fmt: skip


def to_level(raw: float, cuts: tuple[float, ...], low: int, high: int) -> int:
    """Map a raw score in [0, 1] to an integer level of low..high through the documented cut points."""
    knots = (0.0, *cuts, 1.0)
    steps = len(knots) - 1
    raw = min(1.0, max(0.0, raw))
    position = 1.0
    for k in range(steps):
        if raw < knots[k + 1]:
            position = (k + (raw - knots[k]) / (knots[k + 1] - knots[k])) / steps
            break
    levels = high - low + 1
    return low + min(levels - 1, math.floor(position * levels + 1e-9))


def _listed(label: str, values: tuple[str, ...]) -> str:
    shown = ", ".join(values[:3]) + (", ..." if len(values) > 3 else "")
    return f"{len(values)} unsupported {label}{'' if len(values) == 1 else 's'}: {shown}"


DECISIVE_COST = 0.5  # log-odds: a feature that costs less than this is not named as the decisive evidence


def _decisive(cov: Coverage) -> str:
    """The evidence feature that lowered faithfulness most, in words, or "" when none mattered."""
    ev = cov.evidence
    if ev is None or not cov.costs:
        return ""
    name, cost = max(cov.costs.items(), key=lambda pair: pair[1])
    if cost < DECISIVE_COST:
        return ""
    if name == "asserts":
        return "decisive: it asks a question instead of claiming anything the references could support"
    quote = ev.best_sentence if len(ev.best_sentence) <= 60 else ev.best_sentence[:57].rstrip() + "..."
    return f'decisive: no one reference sentence supports it ({ev.sentence_support * 100:.0f}%; best "{quote}")'


def reason_for(cov: Coverage, scored: list[str], limit: int) -> str:
    """A short human sentence: how the answer is supported, the decisive evidence, unsupported numbers/names."""
    parts: list[str] = []
    if cov.empty_answer:
        parts.append("the answer has no content words")
    if cov.bare_yes_no:
        parts.append("a bare yes/no answer")
    if cov.no_claim and not cov.empty_answer:
        parts.append("it makes no factual claim (small talk): faithfulness not applicable")
    faithful = "faithfulness" in scored and cov.faithfulness is not None
    if faithful and not (cov.empty_answer or cov.bare_yes_no):
        parts.append(f"references support {cov.support * 100:.0f}% of the answer")
        if "fact_recall" in cov.inputs:  # the zh model's strongest input: say how much of the references it restates
            parts.append(f"it recalls {cov.inputs['fact_recall'] * 100:.0f}% of the reference answer and facts")
    if "faithfulness" in scored:
        if cov.unsupported_numbers:
            parts.append(_listed("number", cov.unsupported_numbers))
        if cov.unsupported_names:
            parts.append(_listed("name", cov.unsupported_names))
    # The decisive evidence explains a lowered score: beside a top score it would contradict the score it explains.
    lowered = cov.faithfulness is not None and cov.faithfulness < CUTS["faithfulness"][-1]
    if faithful and lowered and (decisive := _decisive(cov)):
        parts.append(decisive)
    if "completeness" in scored and cov.completeness is not None:
        parts.append(f"answer covers {cov.completeness * 100:.0f}% of the {cov.completeness_target}")
    if "relevance" in scored:
        parts.append(f"relevance {cov.relevance:.2f}")
    if cov.polarity_flip:
        parts.append("its yes/no polarity differs from the reference answer")
    text = "; ".join(parts)
    return text if len(text) <= limit else text[: limit - 3].rstrip() + "..."


class ReferenceJudge:
    """Lexical-coverage judge (kind "reference"); grades relevance, faithfulness and completeness only."""

    kind = "reference"
    name = NAME

    def __init__(self, alignments: Mapping[str, Alignment] | None = None) -> None:
        self.alignments = dict(alignments or {})  # rubric name -> refitted combiners (`judgewatch judges align`)
        self._identities: dict[str, JudgeIdentity] = {}
        self._models: dict[str, FaithfulnessModels] = {}

    def models(self, rubric: Rubric) -> FaithfulnessModels:
        """The combiners grading under `rubric`: its alignment's refit, else the shipped ones."""
        key = rubric.content_hash
        if key not in self._models:
            aligned = for_rubric(self.alignments, rubric)
            self._models[key] = aligned.faithfulness_models if aligned else load_models()
        return self._models[key]

    def identity(self, rubric: Rubric) -> JudgeIdentity:
        key = rubric.content_hash
        if key not in self._identities:
            models = self.models(rubric)
            digest = config_hash(
                rubric, algorithm="overlap", version=ALGORITHM_VERSION, model=models.version, coefficients=models.digest
            )
            self._identities[key] = JudgeIdentity(kind=self.kind, name=self.name, config_hash=digest)
        return self._identities[key]

    def fit_item_ids(self) -> frozenset[str]:
        """Ids of every item the fitted models were fit on (golden-set ids `halueval_qa-NNNN`, `halluqa-NNNN`, and
        `begin_dev-<cmu|tc>-NNNN`), and of the reviewers' labels an alignment was refit on (`content_key`s):
        validation on them is in-sample, never trust evidence."""
        return load_models().fit_item_ids().union(*(a.fit_item_ids() for a in self.alignments.values()))

    def raw_scores(self, item: JudgeItem) -> dict[str, float]:
        """Continuous scores in [0, 1] of every criterion this item allows (for AUROC and borderline routing)."""
        return coverage(item).raw()

    async def judge(self, item: JudgeItem, rubric: Rubric) -> Verdict:
        return self.judge_sync(item, rubric)

    def judge_sync(self, item: JudgeItem, rubric: Rubric) -> Verdict:
        """The verdict, computed in this thread (no I/O); for bulk use without an event loop."""
        start = time.perf_counter()
        identity = self.identity(rubric)
        try:
            verdict = self._verdict(item, rubric, identity)
        except Exception as exc:  # the last link of the fallback chain must still return a stored verdict
            logger.exception("reference judge failed on item %s", item.id)
            verdict = unscored(item, rubric, identity, UnscoredReason.judge_error, f"{type(exc).__name__}: {exc}")
        verdict.latency_ms = (time.perf_counter() - start) * 1000.0
        return verdict

    def _verdict(self, item: JudgeItem, rubric: Rubric, identity: JudgeIdentity) -> Verdict:
        unknown = [c.name for c in rubric.criteria if c.name not in CRITERIA and c.check is None]
        if unknown:
            detail = (
                f"the reference judge cannot grade criterion {', '.join(repr(n) for n in unknown)} "
                f"of rubric '{rubric.name}' (it grades {', '.join(CRITERIA)})"
            )
            return unscored(item, rubric, identity, UnscoredReason.judge_error, detail)
        to_score, not_applicable = plan(rubric, item)
        if not to_score:
            return no_reference_verdict(item, rubric, identity)
        cov = coverage(item, self.models(rubric))
        raw = cov.raw()
        measurable = [name for name in to_score if name in raw]
        if not measurable:
            detail = f"{', '.join(to_score)}: needs a reference answer or reference facts; the item has only context"
            return unscored(item, rubric, identity, UnscoredReason.no_reference, detail, **none_scored(rubric))
        low, high = rubric.scale.min, rubric.scale.max
        scores = {name: to_level(raw[name], CUTS[name], low, high) for name in measurable}
        not_applicable = not_applicable + [name for name in to_score if name not in raw]
        reason = reason_for(cov, measurable, rubric.reason_max_chars)
        return scored_verdict(item, rubric, identity, scores, not_applicable, reason)

    async def aclose(self) -> None:
        return None
