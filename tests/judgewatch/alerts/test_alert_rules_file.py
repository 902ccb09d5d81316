"""A bad alert rules file is one line naming the file, the rule (or webhook) and the field; `alerts check` exits 2."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from judgewatch.alerts.rules import AlertRulesError, JudgeSpendAbove, load_rules
from judgewatch.cli import get_app

HOOK = "webhooks:\n- {name: oncall, format: slack, url_env: ONCALL_URL}\n"


@pytest.mark.parametrize(
    ("rules", "error"),
    [
        (
            "rules:\n- {name: low, condition: corrected_score_below, threshold: high, webhook: oncall}\n",
            "rule 'low' (rules[0]): field 'threshold': Input should be a valid number",
        ),
        (
            "rules:\n- {name: spend, condition: judge_spend_above, threshold: 5, tier: full, webhook: oncall}\n",
            "rule 'spend' (rules[0]): field 'tier': Extra inputs are not permitted",
        ),
        (
            "rules:\n- {name: x, condition: score_below, threshold: 5, webhook: oncall}\n",
            "rule 'x' (rules[0]): field 'condition': Input tag 'score_below' found using 'condition' does not match",
        ),
        (
            "rules:\n- {name: share, condition: unscored_share_above, threshold: 20, webhook: oncall}\n",
            "rule 'share' (rules[0]): field 'threshold': Input should be less than 1",
        ),
        (
            "rules:\n- {name: d, condition: drift_alert, webhook: pager}\n",
            "rule 'd' (rules[0]): field 'webhook': no webhook named 'pager' (declared: oncall)",
        ),
        (
            "rules:\n- {name: d, condition: drift_alert, webhook: oncall}\n- {name: d, condition: drift_alert, "
            "webhook: oncall}\n",
            "rules[1]: field 'name': duplicate name 'd'",
        ),
        ("rules: []\n", "field 'rules': List should have at least 1 item"),
    ],
)
def test_a_bad_rules_file_is_one_line_naming_the_file_rule_and_field(tmp_path: Path, rules: str, error: str) -> None:
    path = tmp_path / "alerts.yaml"
    path.write_text(HOOK + rules, encoding="utf-8")
    with pytest.raises(AlertRulesError) as raised:
        load_rules(path)
    message = str(raised.value)
    assert message.startswith(f"{path}: {error}") and "\n" not in message


def test_a_webhook_url_in_the_file_is_refused_its_variable_is_named(tmp_path: Path) -> None:
    path = tmp_path / "alerts.yaml"
    path.write_text(
        "webhooks:\n- {name: oncall, format: slack, url: 'https://hooks.slack.com/services/T/B/x'}\n"
        "rules:\n- {name: spend, condition: judge_spend_above, threshold: 5, webhook: oncall}\n",
        encoding="utf-8",
    )
    with pytest.raises(
        AlertRulesError, match=r"webhook 'oncall' \(webhooks\[0\]\): field 'url': a webhook URL is a secret"
    ):
        load_rules(path)


def test_a_good_rules_file_loads_every_condition(tmp_path: Path) -> None:
    path = tmp_path / "alerts.yaml"
    path.write_text(
        HOOK + "rules:\n- {name: spend, condition: judge_spend_above, threshold: 5, webhook: oncall}\n"
        "- {name: d, condition: drift_alert, rubric: answer_quality, tier: quantized, webhook: oncall}\n"
        "- {name: s, condition: unscored_share_above, threshold: 0.2, window_hours: 6, webhook: oncall}\n"
        "- {name: c, condition: corrected_score_below, threshold: 3.5, estimand: release_quality, webhook: oncall}\n",
        encoding="utf-8",
    )
    document = load_rules(path)
    assert [r.condition for r in document.rules] == [
        "judge_spend_above",
        "drift_alert",
        "unscored_share_above",
        "corrected_score_below",
    ]
    assert isinstance(document.rules[0], JudgeSpendAbove) and document.webhooks[0].url_env == "ONCALL_URL"


def test_alerts_check_exits_2_with_the_line_on_a_bad_file(tmp_path: Path, db: str) -> None:
    path = tmp_path / "alerts.yaml"
    path.write_text(HOOK + "rules:\n- {name: spend, condition: judge_spend_above, webhook: oncall}\n", encoding="utf-8")
    result = CliRunner().invoke(get_app(), ["alerts", "check", "--rules", str(path), "--database-url", db])
    assert result.exit_code == 2
    assert result.output.strip() == f"error: {path}: rule 'spend' (rules[0]): field 'threshold': Field required"
    assert not Path(db.removeprefix("sqlite:///")).exists()  # nothing opened
