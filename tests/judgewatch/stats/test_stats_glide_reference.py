"""The project's asymptotic confidence sequence (`stats.sequential`) against glide-py's, on the same arrays.

glide-py (Apache-2.0) cannot be a dependency: it declares Requires-Python >= 3.12 and scipy >= 1.18.1, and the
project runs on Python 3.11 with scipy 1.17.1 at most on PyPI here (docs/statistics.md, "Written once, checked
against references"). It imports and runs on scipy 1.17.1 all the same, so this test installs it with --no-deps
beside numpy and scipy 1.17.1 in a Python 3.12 venv of its own (kept in ~/.cache between runs), runs glide's
one-sided bounds there on fixed arrays, and compares them with `stats.sequential.boundary` given glide's tuning:
they must agree to 1e-9. Skipped, saying why, where no Python 3.12 exists or PyPI cannot be reached.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from judgewatch.stats.sequential import boundary, rho2

pytestmark = pytest.mark.slow  # builds a venv the first time (about a minute), then a subprocess each run

GLIDE = "glide-py==0.11.0"
SCIPY = "scipy==1.17.1"
VENV = Path.home() / ".cache" / "judgewatch" / "glide-py312"
SCRIPT = """
import json, sys
import numpy as np
from glide.confidence_sequences.asymptotic import _compute_asymptotic_bounds
data = json.load(sys.stdin)
means, lower = _compute_asymptotic_bounds(
    np.array(data["estimates"]), np.array(data["ses"]), data["miscoverage"], data["tightest_at_batch"]
)
print(json.dumps({"means": means.tolist(), "lower": lower.tolist()}))
"""


def python312() -> str | None:
    """A Python 3.12 that runs: pyenv's installed versions first (its shim fails where 3.12 is not selected)."""
    candidates = [*sorted(Path.home().glob(".pyenv/versions/3.12*/bin/python")), shutil.which("python3.12")]
    for candidate in filter(None, candidates):
        if subprocess.run([str(candidate), "--version"], capture_output=True, check=False).returncode == 0:
            return str(candidate)
    return None


def glide_python() -> Path:
    """The venv's python with glide importable, built once; skips when it cannot be built here."""
    python = VENV / "bin" / "python"
    marker = VENV / f".{GLIDE}-{SCIPY}"
    if marker.exists():
        return python
    base = python312()
    if base is None:
        pytest.skip("no Python 3.12 here (glide-py requires >= 3.12): the cross-check cannot run")
    shutil.rmtree(VENV, ignore_errors=True)
    subprocess.run([base, "-m", "venv", str(VENV)], check=True, capture_output=True)
    env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    for args in (["numpy", SCIPY], ["--no-deps", GLIDE]):
        done = subprocess.run([str(python), "-m", "pip", "install", "-q", *args], capture_output=True, env=env)
        if done.returncode != 0:
            pytest.skip(f"cannot install {' '.join(args)} from PyPI here: {done.stderr.decode()[-300:]}")
    marker.touch()
    return python


def test_one_sided_bounds_equal_glides_asymptotic_confidence_sequence() -> None:
    python = glide_python()  # one test, one build: parallel workers never build the venv side by side
    for tightest_at_batch in (1, 10, 40):
        compare(python, tightest_at_batch)


def compare(python: Path, tightest_at_batch: int) -> None:
    rng = np.random.default_rng(tightest_at_batch)
    estimates, ses = rng.normal(3.5, 0.2, 40), rng.uniform(0.05, 0.3, 40)
    alpha = 0.05
    run = subprocess.run(
        [str(python), "-c", SCRIPT],
        input=json.dumps(
            {
                "estimates": estimates.tolist(),
                "ses": ses.tolist(),
                "miscoverage": alpha,
                "tightest_at_batch": tightest_at_batch,
            }
        ),
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    theirs = json.loads(run.stdout)
    t = np.arange(1, 41)
    variance = np.cumsum(ses**2)
    # glide tunes rho for a one-sided bound (its log term uses 2 alpha) at the summed variance of batch t*
    rho_sq = rho2(float(variance[min(tightest_at_batch, 40) - 1]), 2 * alpha)
    lower = np.cumsum(estimates) / t - boundary(variance, alpha, rho_sq, one_sided=True) / t
    np.testing.assert_allclose(theirs["means"], np.cumsum(estimates) / t, rtol=1e-12)
    np.testing.assert_allclose(theirs["lower"], lower, rtol=1e-9, atol=1e-9)
    assert sys.version_info[:2] == (3, 11)  # the project's own side ran on its Python, not glide's
