"""The repository stands alone: nothing opens files beside the checkout, at run time (the audit-hook guard
installed by tests/conftest.py) or in the source (a grep over every Python and shell file that runs)."""

from __future__ import annotations

import contextlib
import re
import tempfile
from pathlib import Path

import pytest

from judgewatch.settings import REPO_ROOT
from judgewatch.testing.path_guard import PathGuard, install

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


# A checkout somewhere no allowed root covers, whatever folder this one was cloned into.
CHECKOUT = Path("/srv/judgewatch-guard-probe/checkout")


def test_guard_flags_a_sibling_of_the_checkout_and_nothing_inside_it_or_on_the_system() -> None:
    guard = PathGuard(CHECKOUT)
    assert guard.offends(str(CHECKOUT.parent / "beside" / "data" / "pandalm" / "data" / "testset-v1.json"))
    assert guard.offends(str(CHECKOUT / ".." / "main" / "README.md"))  # a climb out through ".."
    assert not guard.offends(str(CHECKOUT / "datasets" / "pandalm" / "README.md"))
    assert not guard.offends(str(CHECKOUT.parent / ".cache" / "pip"))  # hidden: user configuration
    assert not guard.offends("/usr/share/zoneinfo/UTC")
    assert not guard.offends(str(Path(tempfile.gettempdir()) / "anything"))


def test_a_checkout_cloned_below_the_temp_folder_is_still_guarded() -> None:
    checkout = Path(tempfile.gettempdir()) / "fresh-clone" / "judgewatch"
    guard = PathGuard(checkout)
    assert guard.offends(str(checkout.parent / "beside" / "data.json"))
    assert not guard.offends(str(Path(tempfile.gettempdir()) / "gradio" / "upload.txt"))  # not beside it


def test_guard_allows_an_extra_root_such_as_pytests_base_temp() -> None:
    guard = PathGuard(CHECKOUT)
    beside = CHECKOUT.parent / "pytest-base"
    assert guard.offends(str(beside / "test_x0" / "db.sqlite"))
    guard.allow(beside)
    assert not guard.offends(str(beside / "test_x0" / "db.sqlite"))


def test_the_session_guard_watches_every_test(path_guard: PathGuard) -> None:
    assert path_guard.active and path_guard.repo_root == str(REPO_ROOT.resolve())


def test_installed_hook_records_an_open_beside_the_checkout() -> None:
    guard = install(CHECKOUT)  # an audit hook of its own, inactive outside `watching()`
    probe = CHECKOUT.parent / "beside" / "no-such-file.json"
    with guard.watching() as found:
        with pytest.raises(OSError):
            probe.read_text()
        (REPO_ROOT / "pyproject.toml").read_text()
    assert found == [str(probe)]


def test_installed_hook_records_a_directory_listing_beside_the_checkout() -> None:
    guard = install(CHECKOUT)
    with guard.watching() as found, contextlib.suppress(OSError):
        list((CHECKOUT.parent / "beside").iterdir())
    assert found == [str(CHECKOUT.parent / "beside")]


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
    # The line as it stood, assembled here so this file itself names no path beside the checkout.
    old = "PANDALM = Path(__file__).resolve().parents[3]" + '.parent / "' + "shared" + '" / "data" / "pandalm"'
    match = FILE_DEPTH.search(old)
    assert match is not None and _levels_up(match) == 4  # tests/judgewatch/stats/x.py sits 3 folders deep
    assert any(p.search(old) for p in ESCAPES)
