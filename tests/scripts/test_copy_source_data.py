"""scripts/copy_source_data.py: the data folders the checks read are exactly what the script copies upstream."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from judgewatch.settings import REPO_ROOT

SCRIPT = REPO_ROOT / "scripts" / "copy_source_data.py"
DATASETS = REPO_ROOT / "datasets"
# folder in an upstream-shaped source -> (folder in datasets/, commit its SOURCE.md names)
SOURCES = {
    "halueval": ("halueval_upstream", "b7253db3cdaa0ab2c382f92b26b390109174f77e"),
    "halluqa": ("halluqa_upstream", "7e5c67398d7fee013c37ec1d6afafa76f9836180"),
    "pandalm": ("pandalm", "3871806e72b4832f815ecafd24d3503c73403f48"),
    "begin_dev": ("begin_dev", "6e65f0d5a1ed1b9574643a7640ff1678d4e979b5"),
}


def upstream_shaped(tmp_path: Path, *, pandalm_extra: bool = True) -> Path:
    """A source folder laid out as released, made from the shipped copies (plus the fields they dropped)."""
    source = tmp_path / "source"
    for folder, (shipped, commit) in SOURCES.items():
        shutil.copytree(DATASETS / shipped, source / folder, ignore=shutil.ignore_patterns("README.md"))
        (source / folder / "SOURCE.md").write_text(f"copied at commit `{commit}`\n", encoding="utf-8")
    if pandalm_extra:  # upstream carries each judge's reasons too; the copy must drop them again
        for name, field in (("gpt-3.5-turbo", "gpt"), ("pandalm-7b", "pandalm")):
            path = source / "pandalm" / "data" / f"{name}-testset-v1.json"
            rows = json.loads(path.read_text(encoding="utf-8"))
            full = [{**row, f"{field}_reason": "because", f"{field}_reference": "ref"} for row in rows]
            path.write_text(json.dumps(full, indent=2), encoding="utf-8")
    return source


def run(source: Path, out: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), str(source), "--out", str(out)], capture_output=True, text=True, check=False
    )


def test_copy_reproduces_the_shipped_data_files_byte_for_byte(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = run(upstream_shaped(tmp_path), out)
    assert result.returncode == 0, result.stderr
    copied = sorted(p.relative_to(out) for p in out.rglob("*") if p.is_file())
    shipped = sorted(
        p.relative_to(DATASETS)
        for folder, _ in SOURCES.values()
        for p in (DATASETS / folder).rglob("*")
        if p.is_file() and p.name != "README.md"
    )
    assert copied == shipped
    for relative in copied:
        assert (out / relative).read_bytes() == (DATASETS / relative).read_bytes(), relative


def test_judge_files_keep_only_the_fields_that_are_read(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert run(upstream_shaped(tmp_path), out).returncode == 0
    rows = json.loads((out / "pandalm" / "data" / "gpt-3.5-turbo-testset-v1.json").read_text(encoding="utf-8"))
    assert len(rows) == 999 and all(set(row) == {"idx", "gpt_result"} for row in rows)


def test_a_source_copied_at_another_commit_is_refused(tmp_path: Path) -> None:
    source = upstream_shaped(tmp_path, pandalm_extra=False)
    (source / "halluqa" / "SOURCE.md").write_text("copied at commit `0000000`\n", encoding="utf-8")
    result = run(source, tmp_path / "out")
    assert result.returncode != 0 and "halluqa/SOURCE.md does not name commit 7e5c673" in result.stderr


def test_the_source_folder_is_required(tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True, check=False)
    assert result.returncode == 2 and "source" in result.stderr
