"""Items whose reference material is longer than a small judge's context window (tests and bench/context_fit)."""

from __future__ import annotations

from judgewatch.contract.items import JudgeItem

PASSAGE_CHARS = 1200
SUPPORTING = (
    "The Meridian Bridge opened in 1932 and was designed by the engineer Clara Voss. "
    "It spans the river Aldwater at its narrowest point."
)


def filler_passage(k: int, chars: int = PASSAGE_CHARS) -> str:
    """About `chars` characters of on-topic but unhelpful context, different per `k`."""
    sentence = f"Archive record {k} describes the harbour district, its warehouses and the tides of season {k}. "
    return (sentence * (chars // len(sentence) + 1))[:chars]


def long_context_item(item_id: str = "long-1", *, passages: int = 30) -> JudgeItem:
    """`passages` context passages of about 1,200 characters; the one supporting the answer sits in the middle."""
    context = [filler_passage(k) for k in range(passages)]
    context[passages // 2] = SUPPORTING + " " + filler_passage(99, PASSAGE_CHARS - len(SUPPORTING) - 1)
    return JudgeItem(
        id=item_id,
        question="Who designed the Meridian Bridge and when did it open?",
        answer="Clara Voss designed the Meridian Bridge, which opened in 1932.",
        context=context,
    )


def long_answer_item(item_id: str = "long-answer", *, repeats: int = 400) -> JudgeItem:
    """An answer alone longer than a 2,048-token window."""
    return long_context_item(item_id).model_copy(update={"answer": "The bridge was designed by Clara Voss. " * repeats})
