"""Credentials in URLs are masked before a URL is logged, printed, stored or reported."""

from __future__ import annotations

import logging

import pytest

from judges.factory import describe, judge_links
from judgewatch.redact import mask_url, mask_urls_in
from judgewatch.regression.serving import parse_tier
from judgewatch.settings import Settings

# Each text and what it reads masked; `mask_url` takes the single-URL ones, `mask_urls_in` all of them.
MASKED = [
    ("http://user:secret@host:8000/v1", "http://user:***@host:8000/v1"),
    ("https://sk-token@api.example.com/v1", "https://***@api.example.com/v1"),
    ("http://host/v1?api_key=sk-123&x=1", "http://host/v1?api_key=***&x=1"),
    ("http://127.0.0.1:8012/v1", "http://127.0.0.1:8012/v1"),
    ("postgresql+psycopg://jw:pa%40ss@db:5432/jw", "postgresql+psycopg://jw:***@db:5432/jw"),
    ("https://hooks.example/alert?token=abc123&x=1", "https://hooks.example/alert?token=***&x=1"),
    ("reference", "reference"),
    ("http://a:pw1@h1/v1,http://tok@h2/v1 and reference", "http://a:***@h1/v1,http://***@h2/v1 and reference"),
    ("judge http://judge:s3cret@10.0.0.5:8000/v1 down", "judge http://judge:***@10.0.0.5:8000/v1 down"),
    ("https://:tok3n@host/x and https://a:b@c/d", "https://:***@host/x and https://a:***@c/d"),
    ("GET /v1?api_key=sk-123 done", "GET /v1?api_key=*** done"),
    ("http://127.0.0.1:8012/v1 and user@example.com", "http://127.0.0.1:8012/v1 and user@example.com"),
]
SINGLE_URLS = [(text, masked) for text, masked in MASKED if not any(c in text for c in " ,")]


@pytest.mark.parametrize(("url", "masked"), SINGLE_URLS)
def test_mask_url_hides_passwords_tokens_and_secret_query_values(url: str, masked: str) -> None:
    assert mask_url(url) == masked


@pytest.mark.parametrize(("text", "masked"), MASKED)
def test_mask_urls_in_text_masks_every_url_and_secret_parameter_and_keeps_the_rest(text: str, masked: str) -> None:
    """One masker for messages, stored options and log lines (judgewatch.logs masks every record with it); on a
    single URL it agrees with `mask_url`."""
    assert mask_urls_in(text) == masked


def test_judge_descriptions_and_identities_carry_no_secret() -> None:
    settings = Settings(judge_url="http://alice:hunter22@127.0.0.1:9/v1")
    links = judge_links(None, settings, None, None, fallback_reference=False)
    assert "hunter22" not in describe(links[0]) and "alice:***@" in describe(links[0])
    assert "hunter22" not in repr(links[0])


def test_serving_tier_sources_are_stored_masked(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG):
        spec = parse_tier("full=http://bob:pa55word@127.0.0.1:9/v1#m")
    assert "pa55word" not in spec.source and "pa55word" not in spec.describe()


def test_fallback_link_labels_and_webhook_failures_carry_no_secret(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch, closed_port_url: str
) -> None:
    from judges.fallback import link_label
    from judgewatch.alerts.rules import Webhook
    from judgewatch.alerts.webhooks import deliver

    settings = Settings(judge_url="http://alice:hunter22@127.0.0.1:9/v1")
    (link,) = judge_links(None, settings, None, None, fallback_reference=False)
    assert link_label(link).endswith("@http://alice:***@127.0.0.1:9/v1")

    # A webhook URL is a secret twice over: a password, and (Slack) a token in its path.
    secret_url = closed_port_url.replace("http://", "http://hook:t0ps3cret@") + "/services/T0/B0/p4thT0ken"
    monkeypatch.setenv("HOOK_URL", secret_url)
    with caplog.at_level(logging.WARNING):
        outcome = deliver(Webhook(name="oncall", format="json", url_env="HOOK_URL"), {"text": "drift"}, timeout_s=1.0)
    assert outcome is not None and "ConnectError" in outcome and "webhook 'oncall' (127.0.0.1)" in outcome
    assert not any(secret in text for secret in ("t0ps3cret", "p4thT0ken") for text in (outcome, caplog.text))
