"""The offline reference judge: deterministic, grounded in the references, honest about what it cannot grade."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from scipy.stats import rankdata

import judges._claims as _claims
import judges.reference as reference
import judges.reference_model as reference_model
from judges._text import negated, tokenize
from judges.base import Judge
from judges.reference import CUTS, ReferenceJudge, to_level
from judgewatch.contract.items import JudgeItem
from judgewatch.contract.rubric import Rubric, load_rubric
from judgewatch.contract.verdicts import UnscoredReason, VerdictStatus
from judgewatch.settings import REPO_ROOT

HALUEVAL_QA = REPO_ROOT / "datasets" / "halueval_upstream" / "generation" / "qa" / "qa_one-turn_data.json"
# Measured on these 100 questions: 0.95 (bootstrap 95% 0.92-0.98); the floor leaves room below the interval.
FIRST_100_AUROC_FLOOR = 0.85

EIFFEL_FACTS = ["The Eiffel Tower in Paris was completed in 1889.", "It was designed by the company of Gustave Eiffel."]
GREAT_WALL_FACTS = ["长城是中国古代的军事防御工程，明长城全长约8851公里。", "现存的长城大部分修建于明朝。"]


@pytest.fixture
def quality() -> Rubric:
    return load_rubric("answer_quality", rubrics_dir=REPO_ROOT / "rubrics")


def make_rubric(*criteria: tuple[str, bool]) -> Rubric:
    """A minimal in-memory rubric with the given (name, needs_reference) criteria on a 1-5 scale."""
    anchors = {level: f"level {level}" for level in range(1, 6)}
    return Rubric.model_validate(
        {
            "name": "custom",
            "version": "1",
            "templates": {"en": "custom.en.j2"},
            "criteria": [
                {"name": name, "description": name, "needs_reference": needs, "anchors": anchors}
                for name, needs in criteria
            ],
        }
    )


def item(answer: str, **fields: object) -> JudgeItem:
    values: dict[str, object] = {"id": "x", "question": "When was the Eiffel Tower completed?", "answer": answer}
    values.update(fields)
    return JudgeItem.model_validate(values)


def test_same_input_twice_gives_the_same_verdict(quality: Rubric) -> None:
    judge = ReferenceJudge()
    it = item("The Eiffel Tower was completed in 1887.", reference_facts=EIFFEL_FACTS, reference_answer="In 1889.")
    first, second = judge.judge_sync(it, quality), judge.judge_sync(it, quality)
    assert first.model_dump(exclude={"latency_ms"}) == second.model_dump(exclude={"latency_ms"})
    assert judge.raw_scores(it) == judge.raw_scores(it)


def test_supported_english_answer_is_more_faithful_than_a_contradicting_one(quality: Rubric) -> None:
    judge = ReferenceJudge()
    right = item("The Eiffel Tower was completed in 1889.", reference_facts=EIFFEL_FACTS)
    wrong = item("The Eiffel Tower was completed in 1925 by Alexandre Dumas.", reference_facts=EIFFEL_FACTS)
    assert judge.raw_scores(right)["faithfulness"] > judge.raw_scores(wrong)["faithfulness"]
    right_verdict, wrong_verdict = judge.judge_sync(right, quality), judge.judge_sync(wrong, quality)
    assert right_verdict.scores["faithfulness"] == 5
    assert (wrong_verdict.scores["faithfulness"] or 5) < 5
    assert "1925" in wrong_verdict.reason and "Dumas" in wrong_verdict.reason


def test_supported_chinese_answer_is_more_faithful_than_a_contradicting_one(quality: Rubric) -> None:
    judge = ReferenceJudge()
    question = "现存的长城大部分修建于哪个朝代？"
    right = item("现存的长城大部分是明朝修建的。", question=question, reference_facts=GREAT_WALL_FACTS)
    wrong = item("长城大部分修建于秦朝，由秦始皇下令建造。", question=question, reference_facts=GREAT_WALL_FACTS)
    assert judge.raw_scores(right)["faithfulness"] > judge.raw_scores(wrong)["faithfulness"]
    assert (judge.judge_sync(right, quality).scores["faithfulness"] or 0) > (
        judge.judge_sync(wrong, quality).scores["faithfulness"] or 0
    )


def test_a_wrong_number_costs_more_than_a_wrong_ordinary_word() -> None:
    judge = ReferenceJudge()
    wrong_word = item("The Eiffel Tower was finished in 1889.", reference_facts=EIFFEL_FACTS)
    wrong_year = item("The Eiffel Tower was completed in 1887.", reference_facts=EIFFEL_FACTS)
    assert judge.raw_scores(wrong_year)["faithfulness"] < judge.raw_scores(wrong_word)["faithfulness"]


def test_an_answer_saying_no_where_the_reference_answer_says_yes_loses_faithfulness_and_completeness() -> None:
    judge = ReferenceJudge()
    question = "Were the Eiffel Tower and the Statue of Liberty designed by the same company?"
    reference_answer = "Yes, both were designed by the company of Gustave Eiffel."
    same = item("Yes, Gustave Eiffel's company designed both.", question=question, reference_answer=reference_answer)
    flipped = item("No, not Gustave Eiffel's company.", question=question, reference_answer=reference_answer)
    assert judge.raw_scores(flipped)["faithfulness"] < judge.raw_scores(same)["faithfulness"]
    assert judge.raw_scores(flipped)["completeness"] < judge.raw_scores(same)["completeness"]


def test_a_bare_yes_or_no_is_judged_on_its_polarity_alone(quality: Rubric) -> None:
    judge = ReferenceJudge()
    question = "Did Gustave Eiffel's company design the tower?"
    agree = judge.judge_sync(item("Yes.", question=question, reference_answer="Yes."), quality)
    disagree = judge.judge_sync(item("No.", question=question, reference_answer="Yes."), quality)
    assert agree.status is disagree.status is VerdictStatus.scored
    assert all(score is not None for score in agree.scores.values())
    assert (agree.scores["faithfulness"] or 0) > (disagree.scores["faithfulness"] or 0)
    assert (agree.scores["completeness"] or 0) > (disagree.scores["completeness"] or 0)
    assert agree.scores["relevance"] == disagree.scores["relevance"] == 4


def test_a_full_answer_is_more_complete_than_a_partial_one(quality: Rubric) -> None:
    judge = ReferenceJudge()
    reference_answer = "It was completed in 1889 and designed by the company of Gustave Eiffel."
    full = item("Completed in 1889, designed by Gustave Eiffel's company.", reference_answer=reference_answer)
    partial = item("It was completed in 1889.", reference_answer=reference_answer)
    assert judge.raw_scores(full)["completeness"] > judge.raw_scores(partial)["completeness"]
    assert (judge.judge_sync(full, quality).scores["completeness"] or 0) > (
        judge.judge_sync(partial, quality).scores["completeness"] or 0
    )


def test_an_on_topic_answer_is_more_relevant_than_an_off_topic_one(quality: Rubric) -> None:
    judge = ReferenceJudge()
    on_topic = item("The Eiffel Tower was completed in 1889.")
    off_topic = item("Bananas are rich in potassium and grow in tropical regions.")
    assert judge.raw_scores(on_topic)["relevance"] > judge.raw_scores(off_topic)["relevance"]
    assert judge.judge_sync(off_topic, quality).scores["relevance"] == 1


def test_a_short_answer_supported_by_on_topic_references_is_not_called_off_topic() -> None:
    judge = ReferenceJudge()
    terse = item("1889.", reference_facts=EIFFEL_FACTS)
    assert judge.raw_scores(terse)["relevance"] >= reference.ON_TOPIC_FLOOR


def test_without_references_only_relevance_is_scored_and_the_rest_is_not_applicable(quality: Rubric) -> None:
    verdict = ReferenceJudge().judge_sync(item("The Eiffel Tower was completed in 1889."), quality)
    assert verdict.status is VerdictStatus.scored
    assert verdict.scores["relevance"] is not None
    assert verdict.scores["faithfulness"] is None and verdict.scores["completeness"] is None
    assert set(verdict.not_applicable) == {"faithfulness", "completeness"}
    assert verdict.overall == verdict.scores["relevance"]


def test_only_reference_criteria_and_no_references_is_a_no_reference_verdict() -> None:
    rubric = make_rubric(("faithfulness", True), ("completeness", True))
    verdict = ReferenceJudge().judge_sync(item("Completed in 1889."), rubric)
    assert verdict.status is VerdictStatus.unscored
    assert verdict.unscored_reason is UnscoredReason.no_reference
    assert verdict.scores == {"faithfulness": None, "completeness": None}


def test_completeness_with_only_context_is_not_applicable_rather_than_guessed(quality: Rubric) -> None:
    verdict = ReferenceJudge().judge_sync(item("Completed in 1889.", context=EIFFEL_FACTS), quality)
    assert verdict.status is VerdictStatus.scored
    assert verdict.scores["faithfulness"] is not None
    assert verdict.scores["completeness"] is None and "completeness" in verdict.not_applicable


def test_an_unknown_criterion_is_an_unscored_judge_error_naming_it() -> None:
    rubric = make_rubric(("relevance", False), ("politeness", False))
    verdict = ReferenceJudge().judge_sync(item("Completed in 1889.", reference_facts=EIFFEL_FACTS), rubric)
    assert verdict.status is VerdictStatus.unscored
    assert verdict.unscored_reason is UnscoredReason.judge_error
    assert "politeness" in (verdict.detail or "")
    assert all(score is None for score in verdict.scores.values())


def test_any_scale_gets_levels_within_its_bounds_and_1_to_5_uses_the_documented_cuts() -> None:
    cuts = CUTS["faithfulness"]
    assert [to_level(r, cuts, 1, 5) for r in (0.0, cuts[0], cuts[1], cuts[2], cuts[3], 1.0)] == [1, 2, 3, 4, 5, 5]
    assert to_level(cuts[0] - 0.01, cuts, 1, 5) == 1
    assert {to_level(r / 20, cuts, 0, 1) for r in range(21)} == {0, 1}
    assert all(0 <= to_level(r / 50, cuts, 0, 10) <= 10 for r in range(51))


def test_tokenizer_handles_english_chinese_and_mixed_text() -> None:
    tokens = tokenize("Arthur's magazines cost $1,000 in 2023年，长城很长")
    assert {"arthur", "magazine", "cost", "1000", "2023", "长城", "长"} <= set(tokens.weights)
    assert "in" not in tokens.weights and "很" not in tokens.weights
    assert tokens.numbers == {"1000", "2023"} and dict(tokens.names) == {"arthur": "Arthur"}
    assert negated("经常戴隐形眼镜不会") and not negated("非常好") and negated("It isn't")


async def test_it_is_a_judge_with_a_reference_identity_and_no_token_cost(
    quality: Rubric, monkeypatch: pytest.MonkeyPatch
) -> None:
    judge = ReferenceJudge()
    assert isinstance(judge, Judge)
    identity = judge.identity(quality)
    assert (identity.kind, identity.name) == ("reference", "reference-overlap")
    it = item("The Eiffel Tower was completed in 1889.", reference_facts=EIFFEL_FACTS)
    verdict = await judge.judge(it, quality)
    assert verdict.model_dump(exclude={"latency_ms"}) == judge.judge_sync(it, quality).model_dump(
        exclude={"latency_ms"}
    )
    assert verdict.judge == identity and verdict.tokens.prompt == verdict.tokens.completion == 0
    assert verdict.latency_ms > 0
    monkeypatch.setattr(reference, "ALGORITHM_VERSION", "bumped")
    assert ReferenceJudge().identity(quality).config_hash != identity.config_hash
    await judge.aclose()


def test_faithfulness_separates_right_from_hallucinated_answers_on_the_first_100_halueval_questions() -> None:
    judge = ReferenceJudge()
    scores: list[float] = []
    labels: list[bool] = []
    for i, line in enumerate(Path(HALUEVAL_QA).read_text(encoding="utf-8").splitlines()[:100]):
        row = json.loads(line)
        for right, answer in ((True, row["right_answer"]), (False, row["hallucinated_answer"])):
            it = JudgeItem(id=str(i), question=row["question"], answer=answer, reference_facts=[row["knowledge"]])
            scores.append(judge.raw_scores(it)["faithfulness"])
            labels.append(right)
    ranks = rankdata(scores)
    n_pos = sum(labels)
    auroc = (sum(r for r, y in zip(ranks, labels, strict=True) if y) - n_pos * (n_pos + 1) / 2) / (
        n_pos * (len(labels) - n_pos)
    )
    assert auroc >= FIRST_100_AUROC_FLOOR


STANFORD_FACTS = [
    "Boston College is a private Jesuit Catholic research university located in the affluent village of "
    "Chestnut Hill, Massachusetts, United States.Stanford University is a private research university in "
    "Stanford, California, adjacent to Palo Alto."
]


def test_an_entity_swapped_from_another_sentence_loses_faithfulness_and_the_reason_says_why(quality: Rubric) -> None:
    question = "Which private research university is located in Chestnut Hill, Boston College or Stanford University?"
    judge = ReferenceJudge()
    right = item("Boston College", question=question, reference_facts=STANFORD_FACTS)
    swapped = item(
        "Stanford University is located in Chestnut Hill.", question=question, reference_facts=STANFORD_FACTS
    )
    assert reference.coverage(swapped).support == 1.0  # every word is in the facts: a bag of words sees nothing
    right_verdict, swapped_verdict = judge.judge_sync(right, quality), judge.judge_sync(swapped, quality)
    assert right_verdict.scores["faithfulness"] == 5
    # 3.0.0 has no slot check (it hurt BEGIN left out): no one sentence says it, which costs a level, not four
    assert (swapped_verdict.scores["faithfulness"] or 5) < 5
    assert reference.coverage(swapped).costs["sentence_support"] > 0
    assert "decisive: no one reference sentence supports it (78%" in (swapped_verdict.reason or "")


def test_a_date_that_contradicts_the_reference_is_named_in_the_reason_whatever_its_format(quality: Rubric) -> None:
    facts = ["The bridge was opened on 3 May 1852 by the mayor."]
    question = "When was the bridge opened?"
    judge = ReferenceJudge()
    same = [item(text, question=question, reference_facts=facts) for text in ("May 3, 1852", "1852-05-03", "In 1852.")]
    wrong = item("It was opened on May 3, 1850.", question=question, reference_facts=facts)
    for right in same:
        assert judge.judge_sync(right, quality).scores["faithfulness"] == 5, right.answer
    wrong_verdict = judge.judge_sync(wrong, quality)
    assert (wrong_verdict.scores["faithfulness"] or 5) <= 2
    assert "1 unsupported number: 1850-05-03" in (wrong_verdict.reason or "")


def test_a_hedge_or_a_confident_preamble_neither_costs_nor_earns_faithfulness() -> None:
    judge = ReferenceJudge()
    plain = judge.raw_scores(item("It was completed in 1889.", reference_facts=EIFFEL_FACTS))
    hedged = judge.raw_scores(item("I am not certain, but it was completed in 1889.", reference_facts=EIFFEL_FACTS))
    sure = judge.raw_scores(item("As is well established, it was completed in 1889.", reference_facts=EIFFEL_FACTS))
    assert plain["faithfulness"] == hedged["faithfulness"] == sure["faithfulness"]


def test_sentences_do_not_end_at_initials_titles_or_dotted_abbreviations() -> None:
    from judges._evidence import sentences

    text = "He joined Metro of S.A. Smash and El-P.Jaime Meline met Dr. Who. St. Olaf College was founded in 1874."
    assert sentences(text) == (
        "He joined Metro of S.A. Smash and El-P.",
        "Jaime Meline met Dr. Who.",
        "St. Olaf College was founded in 1874.",
    )


def test_the_faithfulness_model_is_part_of_the_judge_identity(quality: Rubric, monkeypatch: pytest.MonkeyPatch) -> None:
    before = ReferenceJudge().identity(quality).config_hash
    models = reference.load_models()
    for name, model in models.models.items():  # a refit of either model is a new judge
        changed = reference_model.FaithfulnessModel(
            model.version, model.coefficients, model.intercept + 0.1, model.clean
        )
        refit = reference_model.FaithfulnessModels(models.version, {**models.models, name: changed})
        monkeypatch.setattr(reference, "load_models", lambda refit=refit: refit)
        assert ReferenceJudge().identity(quality).config_hash != before


ZH_QUESTION = "长城有多长？"
ZH_REFERENCE = "明长城全长约8851公里，是中国古代的军事防御工程。"


def zh_item(answer: str, **fields: object) -> JudgeItem:
    values: dict[str, object] = {"id": "zh", "question": ZH_QUESTION, "answer": answer, "language": "zh"}
    values.update(fields)
    return JudgeItem.model_validate(values)


def test_fact_recall_is_the_mean_share_of_each_reference_text_that_the_claims_recall() -> None:
    facts = ["明长城全长约8851公里。", "长城修建于明朝。"]
    both = zh_item("明长城全长约8851公里，长城修建于明朝。", reference_facts=facts)
    one = zh_item("明长城全长约8851公里。", reference_facts=facts)
    question = tokenize(ZH_QUESTION)
    full = _claims.fact_recall(both, tokenize(both.answer), question)
    half = _claims.fact_recall(one, tokenize(one.answer), question)
    assert full == pytest.approx(1.0)
    assert 0.4 < half < 0.7  # the first fact whole, little of the second
    # The reference answer counts once even when it is also a fact; context alone asks for nothing.
    repeated = zh_item("明长城全长约8851公里。", reference_answer=facts[0], reference_facts=facts)
    assert _claims.fact_recall(repeated, tokenize(repeated.answer), question) == pytest.approx(half)
    context_only = zh_item("明长城全长约8851公里。", context=[ZH_REFERENCE])
    assert _claims.fact_recall(context_only, tokenize(context_only.answer), question) == 1.0


def test_chinese_faithfulness_is_the_zh_model_over_support_polarity_and_recall() -> None:
    models = reference.load_models()
    right = zh_item("明长城全长约8851公里。", reference_answer="全长约8851公里。", reference_facts=[ZH_REFERENCE])
    wrong = zh_item("长城全长约两万公里。", reference_answer="全长约8851公里。", reference_facts=[ZH_REFERENCE])
    flipped = zh_item("明长城不是8851公里。", reference_answer="全长约8851公里。", reference_facts=[ZH_REFERENCE])
    cov = reference.coverage(right)
    assert set(cov.inputs) == set(models.models["zh"].coefficients)
    assert cov.faithfulness == pytest.approx(models.for_language("zh").probability(cov.inputs))
    assert cov.inputs == _claims.item_unsegmented(right)  # what the refit script fits on
    assert reference.coverage(flipped).inputs["polarity"] == 0.0
    assert cov.faithfulness > (reference.coverage(wrong).faithfulness or 1.0)
    assert cov.faithfulness > (reference.coverage(flipped).faithfulness or 1.0)


def test_a_chinese_reason_says_how_much_of_the_references_the_answer_recalls(quality: Rubric) -> None:
    it = zh_item("明长城全长约8851公里。", reference_facts=["明长城全长约8851公里。", "长城修建于明朝。"])
    recalled = _claims.fact_recall(it, tokenize(it.answer), tokenize(ZH_QUESTION))
    verdict = ReferenceJudge().judge_sync(it, quality)
    assert f"it recalls {recalled * 100:.0f}% of the reference answer and facts" in (verdict.reason or "")
    english = ReferenceJudge().judge_sync(item("It was completed in 1889.", reference_facts=EIFFEL_FACTS), quality)
    assert "recalls" not in (english.reason or "")


def test_english_items_use_the_default_model_and_chinese_ones_the_zh_model() -> None:
    models = reference.load_models()
    assert models.for_language("en") is models.models["default"]
    assert models.for_language("fr") is models.models["default"]
    assert models.for_language("zh") is models.models["zh"]
    english = reference.coverage(item("It was completed in 1889.", reference_facts=EIFFEL_FACTS))
    assert set(english.inputs) == set(models.models["default"].coefficients)


def test_a_model_file_must_hold_both_feature_sets_with_exactly_their_features() -> None:
    document = json.loads(reference_model.MODEL_PATH.read_text(encoding="utf-8"))
    assert reference_model.parse_models(document).version == document["version"]
    with pytest.raises(ValueError, match="feature sets"):
        reference_model.parse_models({**document, "models": {"default": document["models"]["default"]}})
    zh = {**document["models"]["zh"], "coefficients": {"support": 1.0, "polarity": 1.0}}
    with pytest.raises(ValueError, match="zh: coefficients"):
        reference_model.parse_models({**document, "models": {**document["models"], "zh": zh}})


FIRST_FOR_WOMEN = item(
    "First for Women was started first.",
    question="Which magazine was started first Arthur's Magazine or First for Women?",
    reference_answer="Arthur's Magazine",
    reference_facts=[
        "Arthur's Magazine (1844–1846) was an American literary periodical published in Philadelphia in the 19th "
        "century.",
        "First for Women is a woman's magazine published by Bauer Media Group in the USA.",
    ],
)


def with_references_pasted(it: JudgeItem) -> JudgeItem:
    """The fault audit's answer: the known-bad answer, then the item's reference facts after an attribution."""
    facts = " ".join(it.reference_facts or [it.reference_answer or ""])
    tail = f"（参考资料说：{facts}）" if it.lang == "zh" else f" (As the references say: {facts})"
    return it.model_copy(update={"answer": it.answer + tail})


def test_pasting_the_references_after_a_contradicted_claim_earns_nothing(quality: Rubric) -> None:
    judge = ReferenceJudge()
    pasted = with_references_pasted(FIRST_FOR_WOMEN)
    assert _claims.judged_text(pasted).strip() == "First for Women was started first."
    plain_verdict, pasted_verdict = judge.judge_sync(FIRST_FOR_WOMEN, quality), judge.judge_sync(pasted, quality)
    assert pasted_verdict.scores == plain_verdict.scores
    # a right answer followed by the same quote is judged on its own words too, and keeps its 5
    right = with_references_pasted(FIRST_FOR_WOMEN.model_copy(update={"answer": "Arthur's Magazine was first."}))
    assert judge.judge_sync(right, quality).scores["faithfulness"] == 5
    # a sentence that quotes the references whole, beside the answer's own, is left out as well
    quoted = FIRST_FOR_WOMEN.model_copy(
        update={"answer": f"First for Women was started first. {FIRST_FOR_WOMEN.reference_facts[1]}"}
    )
    assert _claims.judged_text(quoted) == "First for Women was started first."


def test_an_answer_restating_the_reference_answer_in_its_own_sentence_keeps_it() -> None:
    it = zh_item("明长城全长约8851公里。", reference_answer="全长约8851公里。", reference_facts=[ZH_REFERENCE])
    assert _claims.judged_text(it) == it.answer
    extractive = item("I agree. " + EIFFEL_FACTS[0], context=EIFFEL_FACTS)  # its own words claim nothing
    assert _claims.judged_text(extractive) == extractive.answer


@pytest.mark.parametrize("dataset", ["halueval_qa", "halluqa"])
def test_golden_known_bad_answers_with_the_references_pasted_score_high_no_more_often(
    quality: Rubric, dataset: str
) -> None:
    from judgewatch.regression.golden import load_golden_set
    from judgewatch.trust.validate import known_pairs

    bad = known_pairs(load_golden_set(dataset, datasets_dir=REPO_ROOT / "datasets")).bad
    judge = ReferenceJudge()
    plain = [judge.judge_sync(it, quality).scores for it in bad]
    pasted = [judge.judge_sync(with_references_pasted(it), quality).scores for it in bad]
    for criterion in ("faithfulness", "completeness"):
        before = sum(1 for s in plain if (s[criterion] or 0) >= 4) / len(bad)
        after = sum(1 for s in pasted if (s[criterion] or 0) >= 4) / len(bad)
        assert abs(after - before) <= 0.05, (criterion, before, after)  # the fault audit saw 15% -> 58%


def test_small_talk_makes_no_factual_claim_and_faithfulness_is_not_applicable(quality: Rubric) -> None:
    judge = ReferenceJudge()
    for answer in ("i agree!", "hello, how are you?", "haha yes", "thanks for the chat!", "yeah"):
        verdict = judge.judge_sync(item(answer, question="i loved the ending", context=EIFFEL_FACTS), quality)
        assert verdict.status is VerdictStatus.scored
        assert verdict.scores["faithfulness"] is None and "faithfulness" in verdict.not_applicable, answer
        assert "no factual claim" in (verdict.reason or "")
    claim = judge.judge_sync(item("i agree, it was completed in 1889.", context=EIFFEL_FACTS), quality)
    assert (claim.scores["faithfulness"] or 0) >= 4
    # a bare yes/no answers a question: it is judged (here against the stance of a short reference)
    asked = judge.judge_sync(item("No.", question="Was it completed in 1889?", context=["Yes."]), quality)
    assert asked.scores["faithfulness"] is not None


def begin_rows() -> list[tuple[str, JudgeItem]]:
    rows = []
    for relative in ("cmu-dog/begin_dev_cmu.tsv", "topicalchat/begin_dev_tc.tsv"):
        lines = (REPO_ROOT / "datasets" / "begin_dev" / relative).read_text(encoding="utf-8").split("\n")[1:]
        for n, line in enumerate(filter(None, lines)):
            _, _, knowledge, message, response, label = line.split("\t")
            it = JudgeItem(id=f"{relative}-{n}", question=message, answer=response, context=[knowledge], language="en")
            rows.append((label.strip(), it))
    return rows


def test_begin_generic_responses_are_mostly_not_applicable_and_labelled_ones_almost_never() -> None:
    rows = begin_rows()
    generic = [it for label, it in rows if label == "Generic"]
    labelled = [it for label, it in rows if label != "Generic"]
    na_generic = sum(1 for it in generic if reference.coverage(it).faithfulness is None) / len(generic)
    na_labelled = sum(1 for it in labelled if reference.coverage(it).faithfulness is None) / len(labelled)
    # measured: 65 of 81 (80%); the rest name a number, a title or a topic ("2009", "oscars", "it's a great plot")
    assert na_generic >= 0.75
    assert na_labelled <= 0.02  # measured: 6 of 718 ("how was yours?", "i am not sure.")


def test_word_recall_is_the_unweighted_share_of_the_answers_distinct_content_words_in_the_references() -> None:
    it = item("Gustave Eiffel completed it in 1889 in Lyon.", reference_facts=EIFFEL_FACTS)
    # content words: gustave, eiffel, completed, 1889, lyon: four of five are in the references
    assert _claims.word_recall(it.answer, it) == pytest.approx(4 / 5)
    assert _claims.word_recall("", it) == 1.0


def test_the_judge_names_the_items_its_model_was_fit_on_and_no_held_out_one() -> None:
    ids = ReferenceJudge().fit_item_ids()
    assert {"halueval_qa-0041", "halueval_qa-0250", "halluqa-0041", "halluqa-0228", "begin_dev-cmu-0001"} <= ids
    # HaluEval items 250-499 (halueval_qa-0251...) and HalluQA's odd question_ids above 225 are held out
    assert not {"halueval_qa-0251", "halueval_qa-0500", "halluqa-0227", "halluqa-0449"} & ids
    assert not any(i.startswith("begin_dev-") and "wow" in i for i in ids)
    document = json.loads(reference_model.MODEL_PATH.read_text(encoding="utf-8"))
    with pytest.raises(ValueError, match="fit_items"):
        reference_model.parse_models({k: v for k, v in document.items() if k != "fit_items"})


def test_the_mini_sets_are_never_fit_on() -> None:
    """The demo and the gate measure the judge on the mini golden sets: every one of their items is held out."""
    mini = {
        json.loads(line)["id"]
        for name in ("halueval_qa_mini", "halluqa_mini")
        for line in (REPO_ROOT / "datasets" / name / "data.jsonl").read_text(encoding="utf-8").splitlines()
        if line
    }
    assert len(mini) == 80
    assert not mini & ReferenceJudge().fit_item_ids()


def test_a_reason_never_names_decisive_evidence_against_a_top_faithfulness_score(quality: Rubric) -> None:
    """A reviewer saw faithfulness 5 beside a "decisive: ..." reason that argued the other way; the decisive
    evidence is named only where it lowered the score."""
    from judgewatch.regression.golden import load_golden_set

    judge = ReferenceJudge()
    tops = 0
    for golden in ("halueval_qa_mini", "halluqa_mini"):
        items = [item for item in load_golden_set(str(REPO_ROOT / "datasets" / golden)).items if item.good_answers]
        for item in items[:40]:
            verdict = judge.judge_sync(item.to_judge_item(item.good_answers[0], item_id=f"{item.id}:good"), quality)
            if verdict.scores.get("faithfulness") == 5:
                tops += 1
                assert "decisive:" not in (verdict.reason or ""), verdict.reason
    assert tops > 40
