"""The review app's own /metrics: answered without a login, aggregate counts only, nothing people wrote."""

from __future__ import annotations

import httpx
from prometheus_client.parser import text_string_to_metric_families


def test_metrics_answer_without_login_and_hold_no_text_names_or_ids(served) -> None:
    with httpx.Client(base_url=served.url, timeout=30) as client:
        response = client.get("/metrics")
        assert client.get("/config").status_code == 401  # the app itself still wants a login
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(response.text)
        for s in family.samples
    }
    assert samples[("judgewatch_verdicts_total", (
        ("judge", "fake-judge"), ("rubric", "answer_quality"), ("source", "other"), ("status", "scored"),
        ("tier", "quantized"),
    ))] == 1  # fmt: skip
    assert samples[("judgewatch_review_queue_items", (("state", "waiting"),))] == 1
    assert samples[("judgewatch_store_up", ())] == 1
    for secret in ("capital of France", "Paris", "Definitely", "alice", "mostly right", '"i1"'):
        assert secret not in response.text
