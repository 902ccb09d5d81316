"""What the rubric template tests share: a copy of the shipped rubric with one line injected into its template."""

from __future__ import annotations

import shutil
from pathlib import Path

from judgewatch.settings import REPO_ROOT


def rubric_with(folder: Path, injected: str) -> Path:
    """A copy of answer_quality in `folder` whose English template has `injected` as its (new) third line."""
    for file in (REPO_ROOT / "rubrics").glob("answer_quality*"):
        shutil.copy(file, folder / file.name)
    template = folder / "answer_quality.en.j2"
    lines = template.read_text(encoding="utf-8").splitlines(keepends=True)
    lines.insert(2, injected + "\n")
    template.write_text("".join(lines), encoding="utf-8")
    return folder / "answer_quality.yaml"
