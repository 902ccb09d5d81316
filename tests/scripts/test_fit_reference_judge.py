"""scripts/fit_reference_judge.py: the committed faithfulness model is what a refit from the repository gives."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from judges.reference_model import MODEL_PATH, parse_models
from judgewatch.settings import REPO_ROOT

SCRIPT = REPO_ROOT / "scripts" / "fit_reference_judge.py"


@pytest.mark.slow  # in the full tier only (make test): seconds of work
def test_a_refit_on_the_development_halves_reproduces_the_committed_model(tmp_path: Path) -> None:
    out = tmp_path / "model.json"
    subprocess.run(
        [sys.executable, str(SCRIPT), "--out", str(out)],
        check=True,
        capture_output=True,
        cwd=REPO_ROOT,
        env={"PYTHONPATH": str(REPO_ROOT), "PATH": ""},
    )
    refit, committed = json.loads(out.read_text()), json.loads(MODEL_PATH.read_text())
    assert refit == committed
    models = parse_models(refit)
    for model in models.models.values():
        assert all(c >= 0 for c in model.coefficients.values())  # more support never lowers the score
