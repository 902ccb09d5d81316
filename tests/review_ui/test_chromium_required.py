"""Without chromium a browser test skips on a developer's machine and FAILS in CI (a skip would hide it)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from judgewatch.settings import REPO_ROOT

pytestmark = pytest.mark.child_pytest  # each test runs pytest again in a child process

BROWSER_TEST = "tests/review_ui/test_review_browser.py::test_the_queue_is_not_shown_before_login"


def run_browser_test_without_chromium(tmp_path: Path, ci: str | None) -> subprocess.CompletedProcess[str]:
    """One browser test in a child pytest whose PATH holds only this interpreter's folder (no chromium)."""
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env["PATH"] = str(Path(sys.executable).parent)
    if ci is not None:
        env["CI"] = ci
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", f"--basetemp={tmp_path / 'child'}", BROWSER_TEST],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )


@pytest.mark.slow
def test_missing_chromium_fails_the_browser_test_when_ci_is_set(tmp_path: Path) -> None:
    result = run_browser_test_without_chromium(tmp_path, ci="true")
    assert result.returncode == 1, result.stdout[-2000:]
    assert "1 error" in result.stdout and "CI is set" in result.stdout and "1 skipped" not in result.stdout


@pytest.mark.slow
def test_missing_chromium_skips_the_browser_test_outside_ci(tmp_path: Path) -> None:
    result = run_browser_test_without_chromium(tmp_path, ci=None)
    assert result.returncode == 0, result.stdout[-2000:]
    assert "1 skipped" in result.stdout and "chromium is not installed" in result.stdout


@pytest.mark.browser
def test_a_cjk_font_is_installed_for_chinese_items() -> None:
    """Without a CJK font, chromium draws Chinese questions and answers as empty boxes (scripts/ui_fonts.sh,
    run by scripts/run_tests.sh, installs Debian's fonts-noto-cjk)."""
    fonts = subprocess.run(["fc-list", ":lang=zh", "family"], capture_output=True, text=True, check=False).stdout
    assert fonts.strip(), "no font covers Chinese: apt-get install fonts-noto-cjk"
