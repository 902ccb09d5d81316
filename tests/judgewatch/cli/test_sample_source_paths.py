"""A traffic source that reads nothing is an error, never a success: a missing file, a folder, a glob matching no
file and a folder that cannot be listed each fail with their own one-line reason, exit 2 and save no watermark."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from judgewatch.cli.sample_cmd import standalone_app
from judgewatch.settings import REPO_ROOT
from judgewatch.storage.db import make_engine, session_scope
from judgewatch.storage.migrations import migrate
from judgewatch.storage.watermarks import load_watermark

DEMO = REPO_ROOT / "examples" / "traffic"


def source_with(tmp_path: Path, paths: list[str]) -> Path:
    config = yaml.safe_load((DEMO / "demo_source.yaml").read_text(encoding="utf-8"))
    config["paths"] = paths
    path = tmp_path / "source.yaml"
    path.write_text(yaml.safe_dump(config, allow_unicode=True), encoding="utf-8")
    return path


def saved_watermark(db: str, source: str) -> object:
    engine = make_engine(db)
    migrate(engine)
    try:
        with session_scope(engine) as session:
            row = load_watermark(session=session, source=source)
            return row.watermark if row is not None else None
    finally:
        engine.dispose()


@pytest.mark.usefixtures("prefect_server")
@pytest.mark.parametrize(
    ("make_path", "reason"),
    [
        (lambda tmp: str(tmp / "gone.jsonl"), "gone.jsonl: no such file"),
        (lambda tmp: str(tmp), "is a folder, not a file"),
        (lambda tmp: str(tmp / "*.parquet"), "*.parquet: no file matches"),
        (lambda tmp: str(tmp / "absent" / "*.jsonl"), "no such folder"),
    ],
    ids=["missing-file", "folder", "empty-glob", "glob-in-missing-folder"],
)
def test_a_source_path_that_reads_nothing_exits_2_naming_it_and_saves_no_watermark(
    db: str, tmp_path: Path, make_path, reason: str
) -> None:
    source = source_with(tmp_path, [make_path(tmp_path)])
    result = CliRunner().invoke(standalone_app(), ["sample", "--source", str(source), "--database-url", db])
    assert result.exit_code == 2, result.output
    (line,) = [x for x in result.output.splitlines() if x.startswith("error: ")]  # Prefect logs the flow run too
    assert line.startswith("error: the source reads nothing from ") and reason in line
    assert saved_watermark(db, "halluqa-demo") is None


def test_a_folder_the_reader_may_not_list_is_permission_denied_not_an_empty_glob(tmp_path: Path) -> None:
    """A real permission error: as root, the reader runs without the capabilities that let root read any folder."""
    folder = tmp_path / "logs"
    folder.mkdir()
    (folder / "a.jsonl").write_text("{}\n", encoding="utf-8")
    folder.chmod(0o000)
    code = (
        "import sys\n"
        "from judgewatch.traffic.files import SourcePathError, expand_paths\n"
        "try:\n"
        f"    expand_paths([{str(folder / '*.jsonl')!r}])\n"
        "except SourcePathError as exc:\n"
        "    print(exc)\n"
        "    sys.exit(3)\n"
    )
    caps = "-dac_override,-dac_read_search"
    unprivileged = ["setpriv", f"--inh-caps={caps}", f"--bounding-set={caps}"] if os.geteuid() == 0 else []
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    command = [*unprivileged, sys.executable, "-c", code]
    try:
        result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120, check=False)
    finally:
        folder.chmod(0o755)
    assert result.returncode == 3, result.stdout + result.stderr[-2000:]
    assert f"permission denied listing the folder {folder}" in result.stdout
