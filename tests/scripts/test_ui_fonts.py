"""Every way to start the review UI first makes sure a CJK font is there (scripts/ui_fonts.sh): after `make demo`
Chinese items rendered as empty boxes, as only `make test` installed one (issue 41 §5)."""

from __future__ import annotations

import os
import subprocess

import pytest

from judgewatch.settings import REPO_ROOT


@pytest.mark.parametrize("target", ["demo", "review-ui", "stack-up", "test"])
def test_the_target_that_starts_the_review_ui_installs_a_cjk_font(target: str) -> None:
    dry = subprocess.run(
        ["make", "-n", "-W", "pyproject.toml", target],  # -n: print the commands, run none
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "MAKEFLAGS": ""},
    ).stdout
    if target == "test":
        assert "bash scripts/run_tests.sh" in dry
        assert "bash scripts/ui_fonts.sh" in (REPO_ROOT / "scripts" / "run_tests.sh").read_text(encoding="utf-8")
    else:
        assert "bash scripts/ui_fonts.sh" in dry


@pytest.mark.browser  # the full tier, after scripts/run_tests.sh ran scripts/ui_fonts.sh
def test_with_a_cjk_font_present_the_script_installs_nothing() -> None:
    if not subprocess.run(["fc-list", ":lang=zh"], capture_output=True, text=True, check=False).stdout.strip():
        pytest.fail("no CJK font on this machine: scripts/ui_fonts.sh (run by make test) should have installed one")
    done = subprocess.run(["bash", "scripts/ui_fonts.sh"], cwd=REPO_ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout == "" and done.stderr == ""
