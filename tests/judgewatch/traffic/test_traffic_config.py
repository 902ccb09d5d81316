"""Source configs: readable errors naming file and field; the demo source loads and reads as its card says."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from judgewatch.settings import REPO_ROOT
from judgewatch.traffic import (
    QuarantineReason,
    RejectedTrafficRow,
    Sampler,
    SourceConfigError,
    TrafficRow,
    load_source_config,
    parse_source_config,
    read_source,
)

DEMO = REPO_ROOT / "examples" / "traffic" / "demo_source.yaml"


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "source.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_unknown_field_error_names_the_file_and_the_field(tmp_path):
    path = _write(tmp_path, "name: x\nkind: jsonl\npaths: [a.jsonl]\nsampling:\n  rate: 0.1\n")
    with pytest.raises(SourceConfigError) as err:
        load_source_config(path)
    assert f"{path}: sampling.rate: Extra inputs are not permitted" in str(err.value)


def test_rates_outside_zero_one_are_rejected_with_their_field(tmp_path):
    path = _write(tmp_path, "name: x\nkind: jsonl\npaths: [a.jsonl]\nsampling:\n  rates: {full: 1.5}\n")
    with pytest.raises(SourceConfigError, match=r"source\.yaml: sampling\.rates: .*between 0 and 1"):
        load_source_config(path)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("name: x\nkind: jsonl\n", "a jsonl source needs `paths`"),
        ("name: x\nkind: sql\nurl: sqlite://\n", "needs `url` (or `url_env`) and `table`"),
        ("name: x\nkind: csv\npaths: [a]\n", "kind: Input should be 'jsonl', 'parquet', 'sql' or 'otlp'"),
        ("name: x\nkind: jsonl\npaths: [a]\ntimezone: Mars/Olympus\n", "timezone: Value error, unknown timezone"),
        ("name: x\nkind: jsonl\npaths: [a]\nmax_row_bytes: many\n", "max_row_bytes: Input should be a valid integer"),
        ("name: [unclosed\n", "not valid YAML"),
        ("- just\n- a list\n", "expected a mapping"),
    ],
)
def test_invalid_configs_give_readable_errors(tmp_path, text, message):
    path = _write(tmp_path, text)
    with pytest.raises(SourceConfigError) as err:
        load_source_config(path)
    assert str(path) in str(err.value) and message in str(err.value)


def test_relative_paths_resolve_against_the_config_folder(tmp_path):
    config = load_source_config(_write(tmp_path, "name: x\nkind: jsonl\npaths: [logs/*.jsonl, /abs/x.jsonl]\n"))
    assert config.paths == [str(tmp_path / "logs" / "*.jsonl"), "/abs/x.jsonl"]


def test_database_url_can_come_from_the_environment(monkeypatch):
    config = parse_source_config({"name": "x", "kind": "sql", "url_env": "JW_TEST_LOG_DB", "table": "t"})
    monkeypatch.setenv("JW_TEST_LOG_DB", "sqlite:///logs.db")
    assert config.database_url() == "sqlite:///logs.db"
    monkeypatch.delenv("JW_TEST_LOG_DB")
    with pytest.raises(SourceConfigError, match="JW_TEST_LOG_DB is not set"):
        config.database_url()


def test_tier_comes_from_the_exact_model_name_else_the_longest_prefix():
    config = parse_source_config(
        {"name": "x", "kind": "jsonl", "paths": ["a"], "tiers": {"qwen": "quantized", "qwen-14b": "full"}}
    )
    assert config.tier_for("qwen-14b-chat") == "full"
    assert config.tier_for("qwen-7b-chat") == "quantized"
    assert config.tier_for("llama") == config.tier_for(None) == "unknown"


def test_demo_source_loads_and_reads_its_log_as_the_card_says():
    config = load_source_config(DEMO)
    read = read_source(config)
    items = list(read)
    rows = [i for i in items if isinstance(i, TrafficRow)]
    bad = [i for i in items if isinstance(i, RejectedTrafficRow)]
    assert len(rows) == 2700
    assert [(q.position.rsplit(":", 1)[1], q.reason) for q in bad] == [
        ("901", QuarantineReason.invalid_json),
        ("1801", QuarantineReason.missing_response),
    ]
    assert Counter(r.tier for r in rows) == {"full": 1350, "quantized": 1350}
    assert Counter(r.model for r in rows)["baichuan2-13b-chat"] == 450
    assert {r.language for r in rows} == {"zh"}
    assert all(r.reference_facts and r.timestamp.tzinfo is not None for r in rows)
    assert len({r.interaction_id for r in rows}) == 2700


def test_demo_sampler_picks_about_its_configured_rate():
    config = load_source_config(DEMO)
    sampler = Sampler(config, on_quarantine=lambda _row: None)
    picks = list(sampler.run(read_source(config)))
    stats = sampler.stats
    assert stats.read == 2702 and stats.quarantined == 2
    assert 200 < len(picks) < 340  # 10% of ~2,700
    assert {p.inclusion_probability for p in picks} == {0.1}
