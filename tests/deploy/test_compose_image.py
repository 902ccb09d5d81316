"""The Compose image's build context and build stage, checked without a Docker engine (none runs here).

- The ignore file next to the Dockerfile, read with docker-py's implementation of .dockerignore rules, keeps
  out virtual environments, local databases, secrets and caches, and keeps every file git tracks (the workers
  clone the code from the image's copy, `.git` included).
- The image's install, done here the same way on the filtered context: `pip wheel .` builds the package from what
  the context holds, with no compiler (the slim base image has none): a pure-Python wheel.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from docker.utils.build import exclude_paths

from judgewatch.settings import REPO_ROOT

COMPOSE_DIR = REPO_ROOT / "deploy" / "compose"
IGNORE = COMPOSE_DIR / "Dockerfile.dockerignore"
MUST_STAY_OUT = [
    ".venv/bin/python",
    ".venv/lib/python3.11/site-packages/x.py",
    ".judge/bin/vllm",
    ".judgewatch/judgewatch.db",
    ".judgewatch/stack/review-ui.pid",
    "local.db",
    "examples/scratch.sqlite",
    ".env",
    "deploy/.env",
    "judgewatch/__pycache__/x.cpython-311.pyc",
    "judgewatch.egg-info/PKG-INFO",
    "models/judge/model.safetensors",
    "bench/out/run.json",
    ".mypy_cache/x.json",
]
MUST_STAY_IN = [
    ".git/HEAD",
    "pyproject.toml",
    "prefect.yaml",
    "judgewatch/__init__.py",
    "rubrics/answer_quality.yaml",
    "datasets/halueval_qa/card.yaml",
    "deploy/compose/Dockerfile",
]


def patterns() -> list[str]:
    lines = IGNORE.read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]


def test_the_ignore_file_keeps_out_venvs_databases_secrets_and_caches(tmp_path: Path) -> None:
    for name in MUST_STAY_OUT + MUST_STAY_IN:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x")
    sent = exclude_paths(str(tmp_path), patterns(), dockerfile="deploy/compose/Dockerfile")
    assert sorted(n for n in MUST_STAY_OUT if n in sent) == []
    assert sorted(n for n in MUST_STAY_IN if n not in sent) == []


def test_the_ignore_file_keeps_every_tracked_file() -> None:
    tracked = subprocess.run(
        ["git", "-C", str(REPO_ROOT), "ls-files"], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    sent = exclude_paths(str(REPO_ROOT), patterns(), dockerfile="deploy/compose/Dockerfile")
    dropped = [f for f in tracked if f not in sent and (REPO_ROOT / f).exists()]
    assert dropped == []


def test_the_dockerfile_installs_the_package_in_one_stage_without_a_compiler() -> None:
    text = (COMPOSE_DIR / "Dockerfile").read_text(encoding="utf-8")
    assert text.count("\nFROM ") + text.startswith("FROM ") == 1
    assert "pip install --no-cache-dir '.[otel]'" in text and "gcc" not in text  # with the otel extra


@pytest.mark.slow
def test_the_filtered_context_builds_a_pure_python_wheel_with_the_flows_and_the_ui(tmp_path: Path) -> None:
    context = tmp_path / "context"
    tracked = set(
        subprocess.run(
            ["git", "-C", str(REPO_ROOT), "ls-files"], capture_output=True, text=True, check=True
        ).stdout.splitlines()
    )
    for name in exclude_paths(str(REPO_ROOT), patterns(), dockerfile="deploy/compose/Dockerfile"):
        source = REPO_ROOT / name
        if name in tracked and source.is_file():  # what a clean checkout holds, after the ignore file
            (context / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, context / name)
    out = tmp_path / "wheels"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(context)],
        check=True,
        capture_output=True,
    )
    (wheel,) = out.glob("judgewatch-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert wheel.name.endswith("-py3-none-any.whl"), wheel.name  # pure Python: nothing to compile
    assert {"judgewatch/cli/__init__.py", "flows/regression.py", "review_ui/app.py", "judges/base.py"} <= set(names)
