"""The repository stands alone: nothing opens files beside the checkout, at run time (the audit-hook guard
installed by tests/conftest.py) or in the source (a grep over every Python and shell file that runs)."""

from __future__ import annotations

import contextlib
import re
import tempfile
from pathlib import Path

import pytest

from judgewatch.settings import REPO_ROOT
from judgewatch.testing.path_guard import PathGuard

CHECKED_FOLDERS = ("tests", "bench", "scripts", "judgewatch", "judges", "flows", "review_ui")
# Path expressions that leave the checkout: a sibling folder of the repository, or a relative climb out of it.
ESCAPES = [
    re.compile(r"\b(?:REPO_ROOT|REPO)\.parent\b"),
    re.compile(r"[\"']\.\./"),
    re.compile(r"\bshared/data\b|[\"']shared[\"']"),
]
FILE_DEPTH = re.compile(r"Path\(__file__\)\.resolve\(\)(?:\.parents\[(\d+)\]|((?:\.parent(?!s))+))((?:\.parent(?!s))*)")


def _checked_files() -> list[Path]:
    files = [p for folder in CHECKED_FOLDERS for p in (REPO_ROOT / folder).rglob("*") if p.suffix in (".py", ".sh")]
    return sorted(p for p in files if p != Path(__file__).resolve())


def _levels_up(match: re.Match[str]) -> int:
    """How many folders above the file's own folder the `Path(__file__)` expression climbs."""
    index, direct, extra = match.group(1), match.group(2), match.group(3)
    up = int(index) if index is not None else direct.count(".parent") - 1
    return up + extra.count(".parent")


def test_guard_flags_a_sibling_of_the_checkout_and_nothing_inside_it_or_on_the_system() -> None:
    guard = PathGuard(REPO_ROOT)
    assert guard.offends(str(REPO_ROOT.parent / "shared" / "data" / "pandalm" / "data" / "testset-v1.json"))
    assert guard.offends(str(REPO_ROOT / ".." / "main" / "README.md"))  # a climb out through ".."
    assert not guard.offends(str(REPO_ROOT / "datasets" / "pandalm" / "README.md"))
    assert not guard.offends(str(REPO_ROOT.parent / ".cache" / "pip"))  # hidden: user configuration
    assert not guard.offends("/usr/share/zoneinfo/UTC")
    assert not guard.offends(str(Path(tempfile.gettempdir()) / "anything"))


def test_guard_allows_an_extra_root_such_as_pytests_base_temp() -> None:
    guard = PathGuard(REPO_ROOT)
    beside = REPO_ROOT.parent / "pytest-base"
    assert guard.offends(str(beside / "test_x0" / "db.sqlite"))
    guard.allow(beside)
    assert not guard.offends(str(beside / "test_x0" / "db.sqlite"))


def test_installed_hook_records_an_open_beside_the_checkout(path_guard: PathGuard) -> None:
    probe = REPO_ROOT.parent / "shared" / "no-such-file-judgewatch-guard-probe.json"
    with path_guard.watching() as found:
        with pytest.raises(OSError):
            probe.read_text()
        (REPO_ROOT / "pyproject.toml").read_text()
    assert found == [str(probe.resolve())]


def test_installed_hook_records_a_directory_listing_beside_the_checkout(path_guard: PathGuard) -> None:
    with path_guard.watching() as found, contextlib.suppress(OSError):
        list(REPO_ROOT.parent.iterdir())
    assert found == [str(REPO_ROOT.parent.resolve())]


@pytest.mark.parametrize("pattern", ESCAPES, ids=lambda p: p.pattern)
def test_no_source_file_names_a_path_beside_the_checkout(pattern: re.Pattern[str]) -> None:
    hits = [
        f"{path.relative_to(REPO_ROOT)}:{number}: {line.strip()}"
        for path in _checked_files()
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if pattern.search(line) and not line.lstrip().startswith("#")
    ]
    assert not hits, "paths outside the repository:\n" + "\n".join(hits)


def test_no_source_file_climbs_above_the_repository_from_its_own_location() -> None:
    hits = []
    for path in _checked_files():
        depth = len(path.relative_to(REPO_ROOT).parts) - 1  # folders between the repository root and the file
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            for match in FILE_DEPTH.finditer(line):
                if _levels_up(match) > depth:
                    hits.append(f"{path.relative_to(REPO_ROOT)}:{number}: {line.strip()}")
    assert not hits, "Path(__file__) climbs out of the repository:\n" + "\n".join(hits)


def test_the_depth_check_would_catch_the_old_pandalm_path() -> None:
    old = 'PANDALM = Path(__file__).resolve().parents[3].parent / "shared" / "data" / "pandalm"'
    match = FILE_DEPTH.search(old)
    assert match is not None and _levels_up(match) == 4  # tests/judgewatch/stats/x.py sits 3 folders deep
    assert any(p.search(old) for p in ESCAPES)
