"""Tiers files: strict validation with errors naming file, tier and field; keys and headers from the environment."""

from __future__ import annotations

from pathlib import Path

import pytest

from judgewatch.regression.answer_prompt import TemplateError
from judgewatch.regression.serving import TierError, TierParams, parse_tiers
from judgewatch.regression.tier_config import (
    baseline_tier,
    credentials,
    load_configured_tiers,
    load_tiers_file,
    load_tiers_value,
)

TEMPLATE = """{% block system %}You are Acme's support bot ({{ language }}).{% endblock %}
{% block user %}{{ question }}
{% for fact in reference_facts %}* {{ fact }}
{% endfor %}{% endblock %}
"""


def write(folder: Path, text: str, name: str = "tiers.yaml") -> Path:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def test_a_full_tier_is_read_with_its_template_relative_to_the_file(tmp_path: Path) -> None:
    (tmp_path / "prompts").mkdir()
    write(tmp_path / "prompts", TEMPLATE, "support.j2")
    path = write(
        tmp_path,
        """
tiers:
- name: full
  base_url: https://gateway.example/v1/
  model: acme-chat
  api_key_env: GATEWAY_KEY
  headers: {X-Route: full, X-Tenant: "${TENANT}"}
  prompt_template: prompts/support.j2
  params: {temperature: 0.3, max_tokens: 64, seed: 7, stop: "END", extra_body: {top_k: 20}}
  concurrency: 3
- name: quantized
  base_url: http://127.0.0.1:8000/v1
  model: acme-chat-awq
""",
    )
    full, quantized = load_tiers_file(path)
    assert (full.name, full.kind, full.base_url, full.model) == (
        "full",
        "live",
        "https://gateway.example/v1",
        "acme-chat",
    )
    assert full.api_key_env == "GATEWAY_KEY" and full.headers == {"X-Route": "full", "X-Tenant": "${TENANT}"}
    assert full.template is not None and full.template.name == "support.j2" and full.template.text == TEMPLATE
    assert full.params.stop == ["END"] and full.concurrency == 3 and full.origin == str(path)
    assert full.params.request(max_tokens=256, seed=1) == {
        "temperature": 0.3,
        "max_tokens": 64,
        "seed": 7,
        "stop": ["END"],
        "top_k": 20,
    }
    assert quantized.template is None and quantized.api_key_env is None and quantized.headers == {}
    assert quantized.params.request(max_tokens=256, seed=1) == {"temperature": 0.0, "max_tokens": 256, "seed": 1}


def test_a_bare_list_of_tiers_is_accepted(tmp_path: Path) -> None:
    path = write(tmp_path, "- {name: full, base_url: 'http://h:1/v1', model: m}\n")
    assert [s.name for s in load_tiers_file(path)] == ["full"]


def test_the_baseline_tier_is_the_one_the_file_marks_or_the_one_asked_for_never_a_name(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "- {name: big, base_url: 'http://h:1/v1', model: m, baseline: true}\n"
        "- {name: full, base_url: 'http://h:2/v1', model: m}\n"
        "- {name: quantized, base_url: 'http://h:3/v1', model: m}\n",
    )
    specs = load_tiers_file(path)
    assert baseline_tier(specs) == "big"  # not "full": roles come from the file
    assert baseline_tier(specs, "quantized") == "quantized"
    with pytest.raises(TierError, match="--baseline-tier 'fp8' is not a tier of this run"):
        baseline_tier(specs, "fp8")
    unmarked = load_tiers_file(write(tmp_path, "- {name: full, base_url: 'http://h:1/v1', model: m}\n", "b.yaml"))
    assert baseline_tier(unmarked) is None  # no role declared: no within-release comparison


def test_two_baseline_tiers_in_one_file_are_refused_with_the_file_named(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "- {name: a, base_url: 'http://h:1/v1', model: m, baseline: true}\n"
        "- {name: b, base_url: 'http://h:2/v1', model: m, baseline: true}\n",
    )
    with pytest.raises(TierError, match=r"tiers.yaml: field 'baseline': only one tier can be the baseline, got 'a'"):
        load_tiers_file(path)


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            "- {name: full, base_url: 'http://h/v1', model: m, api_key: sk-123}",
            "tier 'full' (tiers[0]): field 'api_key': Extra inputs are not permitted",
        ),
        (
            "- {name: full, base_url: 'http://h/v1', model: m, params: {max_token: 5}}",
            "tier 'full' (tiers[0]): field 'params.max_token': Extra inputs",
        ),
        (
            "- {name: full, base_url: 'http://h/v1', model: m, params: {max_tokens: 0}}",
            "field 'params.max_tokens': Input should be greater than or equal to 1",
        ),
        (
            "- {name: full, base_url: 'http://h/v1', model: m, params: {extra_body: {model: x}}}",
            "field 'params.extra_body': ['model'] cannot be set here",
        ),
        (
            "- {name: a, base_url: 'http://h/v1', model: m}\n- {name: full, base_url: 'h:80', model: m}",
            "tier 'full' (tiers[1]): field 'base_url': 'h:80' is not an http(s) URL",
        ),
        ("- {name: full, base_url: 'http://u:secret@h/v1', model: m}", "field 'base_url': the URL carries a password"),
        (
            "- {name: full, base_url: 'http://h/v1', model: m, api_key_env: 'my-key'}",
            "field 'api_key_env': String should match pattern",
        ),
        (
            "- {name: full, base_url: 'http://h/v1', model: m, headers: {Authorization: 'Bearer x'}}",
            "header 'Authorization' is set by judgewatch",
        ),
        (
            "- {name: full, base_url: 'http://h/v1', model: m, headers: {X-T: '${TENANT'}}",
            "header 'X-T': malformed variable reference",
        ),
        ("- {name: full, base_url: 'http://h/v1'}", "tier 'full' (tiers[0]): field 'model': Field required"),
        ("- {base_url: 'http://h/v1', model: m}", "tiers[0]: field 'name': Field required"),
        ("- {name: full, base_url: 'http://h/v1', model: m, concurrency: 0}", "field 'concurrency'"),
        ("tiers: []", "field 'tiers': List should have at least 1 item"),
        ("tier: []", "field 'tier': Extra inputs are not permitted"),
        (
            "- {name: full, base_url: 'http://h/v1', model: m}\n- {name: full, base_url: 'http://g/v1', model: m}",
            "tier 'full' (tiers[1]): field 'name': duplicate of tiers[0]",
        ),
        ("just text", "expected a list of tiers"),
        ("tiers: [", "not valid YAML"),
    ],
)
def test_a_bad_tiers_file_names_the_file_tier_and_field(tmp_path: Path, body: str, expected: str) -> None:
    path = write(tmp_path, body + "\n")
    with pytest.raises(TierError) as caught:
        load_tiers_file(path)
    assert str(caught.value).startswith(f"{path}: ") and expected in str(caught.value)


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        ("{{ question }", "template syntax error line 1"),
        ("{{ question }} {{ answer }}", "unknown template variable(s) ['answer']"),
        ("{% block system %}x{% endblock %}", "needs a 'user' block"),
        ("{% block user %}{{ question }}{% endblock %}{% block footer %}{% endblock %}", "unknown block(s) ['footer']"),
    ],
)
def test_a_bad_prompt_template_names_the_file_tier_field_and_template(
    tmp_path: Path, template: str, expected: str
) -> None:
    write(tmp_path, template, "p.j2")
    path = write(tmp_path, "- {name: full, base_url: 'http://h/v1', model: m, prompt_template: p.j2}\n")
    with pytest.raises(TierError) as caught:
        load_tiers_file(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: tier 'full' (tiers[0]): field 'prompt_template': {tmp_path / 'p.j2'}: ")
    assert expected in message


def test_a_missing_template_or_file_is_named(tmp_path: Path) -> None:
    path = write(tmp_path, "- {name: full, base_url: 'http://h/v1', model: m, prompt_template: nope.j2}\n")
    with pytest.raises(TierError, match=r"field 'prompt_template': .*nope\.j2: cannot read the prompt template"):
        load_tiers_file(path)
    with pytest.raises(TierError, match=r"absent\.yaml: cannot read the tiers file"):
        load_tiers_file(tmp_path / "absent.yaml")


def test_the_template_renders_in_a_sandbox_without_unsafe_attribute_access(tmp_path: Path) -> None:
    write(tmp_path, "{{ question.__class__.__mro__ }}", "evil.j2")
    path = write(tmp_path, "- {name: full, base_url: 'http://h/v1', model: m, prompt_template: evil.j2}\n")
    (spec,) = load_tiers_file(path)
    assert spec.template is not None
    with pytest.raises(TemplateError, match="not allowed in the sandbox"):
        spec.template.render(question="q", reference_facts=[], context=[], language="en")


def test_a_template_renders_system_and_user_messages_from_the_item() -> None:
    from judgewatch.regression.answer_prompt import AnswerTemplate

    template = AnswerTemplate(name="t.j2", text=TEMPLATE)
    template.check("t.j2")
    messages = template.render(question="Who?", reference_facts=["A.", "B."], context=[], language="en")
    assert messages == [
        {"role": "system", "content": "You are Acme's support bot (en)."},
        {"role": "user", "content": "Who?\n* A.\n* B."},
    ]
    plain = AnswerTemplate(name="u.j2", text="Q: {{ question }} ({{ context | join(', ') }})")
    assert plain.render(question="x", reference_facts=[], context=["c1", "c2"], language="zh") == [
        {"role": "user", "content": "Q: x (c1, c2)"}
    ]


def test_credentials_come_from_the_environment_and_a_missing_variable_is_named(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "- {name: full, base_url: 'http://h/v1', model: m, api_key_env: GW_KEY, headers: {X-T: 'team-${TEAM}'}}\n",
    )
    (spec,) = load_tiers_file(path)
    assert credentials(spec, {"GW_KEY": "sk-1", "TEAM": "red"}) == ("sk-1", {"X-T": "team-red"})
    with pytest.raises(
        TierError, match=f"environment variable GW_KEY is not set \\(api_key_env of tier full in {path}\\)"
    ):
        credentials(spec, {"TEAM": "red"})
    with pytest.raises(TierError, match="environment variable TEAM is not set \\(header X-T of tier full"):
        credentials(spec, {"GW_KEY": "sk-1"})
    keyless = spec.model_copy(update={"api_key_env": None, "headers": {}})
    assert credentials(keyless, {}) == ("EMPTY", {})


def test_file_tiers_join_command_line_tiers_and_a_name_may_appear_once(tmp_path: Path) -> None:
    path = write(tmp_path, "- {name: full, base_url: 'http://h/v1', model: m}\n")
    specs = parse_tiers(["quantized=http://h/v1#q"], configured=load_configured_tiers(path))
    assert [s.name for s in specs] == ["full", "quantized"]
    with pytest.raises(TierError, match="'full' is given more than once"):
        parse_tiers(["full=http://h/v1#m"], configured=load_configured_tiers(path))


def test_a_tiers_document_in_a_variable_is_validated_like_a_file(tmp_path: Path) -> None:
    specs = load_tiers_value(
        "- {name: full, base_url: 'http://h/v1', model: m}", origin="variable v", base_dir=tmp_path
    )
    assert specs[0].origin == "variable v"
    as_object = load_configured_tiers(
        variable="v", value={"tiers": [{"name": "q", "base_url": "http://h/v1", "model": "m"}]}
    )
    assert as_object[0].name == "q"
    with pytest.raises(TierError, match="variable 'v': not set"):
        load_configured_tiers(variable="v", value=None)
    with pytest.raises(TierError, match="variable v: tier 'q' \\(tiers\\[0\\]\\): field 'model'"):
        load_configured_tiers(variable="v", value=[{"name": "q", "base_url": "http://h/v1"}])


def test_params_reject_reserved_body_fields_and_keep_a_single_stop_as_a_list() -> None:
    assert TierParams.model_validate({"stop": "\n"}).stop == ["\n"]
    with pytest.raises(ValueError, match="cannot be set here"):
        TierParams.model_validate({"extra_body": {"max_tokens": 3}})


def test_the_shipped_example_is_valid_and_renders_both_languages() -> None:
    from judgewatch.settings import REPO_ROOT

    full, quantized = load_tiers_file(REPO_ROOT / "examples" / "tiers.yaml")
    assert full.base_url == quantized.base_url and full.api_key_env == quantized.api_key_env == "ACME_GATEWAY_KEY"
    assert credentials(full, {"ACME_GATEWAY_KEY": "k", "ACME_TENANT": "t"}) == (
        "k",
        {"X-Gateway-Route": "support-full", "X-Tenant": "t"},
    )
    assert full.template is not None
    en = full.template.render(question="Why?", reference_facts=["F1."], context=["C1."], language="en")
    assert en[0]["content"].startswith("You are Acme's support assistant")
    assert en[1]["content"] == "Knowledge base:\n- F1.\n- C1.\n\nCustomer: Why?"
    zh = full.template.render(question="为什么？", reference_facts=["事实。"], context=[], language="zh")
    assert zh[0]["content"].startswith("你是 Acme 的客服助手") and zh[1]["content"].endswith("Customer: 为什么？")
