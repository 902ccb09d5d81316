"""Without Debian's prometheus package the deploy tests skip on a laptop but fail under CI."""

from __future__ import annotations

import pytest

from judgewatch.testing.debian_tools import debian_tool


def test_a_missing_promtool_fails_under_ci_and_skips_elsewhere(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("shutil.which", lambda _name: None)
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="apt-get install -y prometheus"):
        debian_tool("promtool")
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception):
        debian_tool("promtool")
