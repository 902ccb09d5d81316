"""`--judge` specs map to the judges and chains they name."""

from __future__ import annotations

import pytest

from judges.config import EndpointConfig
from judges.factory import chain, healthy_links, judge_links
from judges.fallback import FallbackJudge, GuardedJudge
from judges.openai_judge import OpenAIJudge
from judges.reference import ReferenceJudge
from judgewatch.settings import Settings


@pytest.fixture
def settings() -> Settings:
    return Settings(judge_url="http://primary:8011/v1", judge_fallback_urls=["http://backup:8011/v1"], judge_model="m")


def test_reference_alone_is_the_reference_judge(settings: Settings) -> None:
    assert isinstance(chain(judge_links("reference", settings)), ReferenceJudge)


def test_a_url_gets_the_reference_judge_as_its_last_link_by_default(settings: Settings) -> None:
    judge = chain(judge_links("http://a/v1", settings, model="x", concurrency=3))
    assert isinstance(judge, FallbackJudge)
    first, last = judge.links
    assert isinstance(first, OpenAIJudge) and first.model == "x" and first.base_url.startswith("http://a")
    assert isinstance(last, ReferenceJudge)


def test_without_fallback_a_url_is_that_judge_behind_the_circuit_breaker(settings: Settings) -> None:
    judge = chain(judge_links("http://a/v1", settings, fallback_reference=False))
    assert isinstance(judge, GuardedJudge) and isinstance(judge.links[0], OpenAIJudge)
    assert (judge.kind, getattr(judge, "base_url", None)) == ("openai", "http://a/v1")  # reads as the judge it guards
    assert isinstance(chain(judge_links("reference", settings, fallback_reference=False)), ReferenceJudge)


def test_no_spec_means_the_configured_url_then_its_fallback_urls(settings: Settings) -> None:
    links = judge_links(None, settings)
    assert [getattr(link, "base_url", "reference").rstrip("/") for link in links] == [
        "http://primary:8011/v1",
        "http://backup:8011/v1",
        "reference",
    ]


def test_a_comma_separated_list_keeps_its_order_and_its_explicit_reference(settings: Settings) -> None:
    links = judge_links("reference, http://a/v1", settings)
    assert [type(link).__name__ for link in links] == ["ReferenceJudge", "OpenAIJudge"]


@pytest.mark.parametrize("spec", ["", "ftp://x", "refrence", "http://a/v1,nonsense"])
def test_a_malformed_spec_names_the_bad_part(settings: Settings, spec: str) -> None:
    with pytest.raises(ValueError, match="--judge"):
        judge_links(spec, settings)


async def test_health_splits_reachable_from_unreachable_links() -> None:
    down = OpenAIJudge(EndpointConfig("http://127.0.0.1:9/v1", "m", timeout_s=2, max_retries=0))
    reference = ReferenceJudge()
    try:
        up, dead = await healthy_links([down, reference])
    finally:
        await down.aclose()
    assert up == [reference] and dead == [down]
