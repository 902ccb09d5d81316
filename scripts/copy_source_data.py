"""Copy the upstream data files judgewatch reads at run time into datasets/, keeping only what is read.

From a folder laid out as released (one sub-folder per source, each with the upstream `LICENSE` and a `SOURCE.md`
naming the commit), so the repository carries them with their licence and never reads outside itself.
Deterministic: running it again on the same source changes nothing. `UPSTREAMS` lists each source's files and the
fields kept (PandaLM's judge verdict files: `idx` and the verdict only); BEGIN's Wizard-of-Wikipedia part is not
copied (kept out of development on purpose). The cards (`README.md`) beside the copies are written by hand.

    .venv/bin/python scripts/copy_source_data.py SOURCE [--out datasets]
"""

from __future__ import annotations

import argparse
import json
import shutil
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Upstream:
    """One source folder, the commit its SOURCE.md must name, and the files kept (None: every field)."""

    folder: str
    target: str
    commit: str
    files: dict[str, tuple[str, ...] | None]


UPSTREAMS = (
    Upstream(
        "halueval",
        "halueval_upstream",
        "b7253db3cdaa0ab2c382f92b26b390109174f77e",
        {"generation/qa/qa_one-turn_data.json": None, "generation/qa/qa_multi-turn_data.json": None},
    ),
    Upstream("halluqa", "halluqa_upstream", "7e5c67398d7fee013c37ec1d6afafa76f9836180", {"HalluQA.json": None}),
    Upstream(
        "pandalm",
        "pandalm",
        "3871806e72b4832f815ecafd24d3503c73403f48",
        {
            "data/testset-v1.json": None,
            "data/gpt-3.5-turbo-testset-v1.json": ("idx", "gpt_result"),
            "data/pandalm-7b-testset-v1.json": ("idx", "pandalm_result"),
        },
    ),
    Upstream(
        "begin_dev",
        "begin_dev",
        "6e65f0d5a1ed1b9574643a7640ff1678d4e979b5",
        {
            "README.upstream.md": None,
            "cmu-dog/begin_dev_cmu.tsv": None,
            "cmu-dog/LICENSE": None,
            "cmu-dog/NOTICE": None,
            "topicalchat/begin_dev_tc.tsv": None,
            "topicalchat/LICENSE": None,
            "topicalchat/NOTICE": None,
        },
    ),
)


def _keep_fields(text: str, fields: tuple[str, ...], where: Path) -> str:
    """A JSON array of objects reduced to `fields`, one object per line (small diffs, readable)."""
    rows = json.loads(text)
    if not isinstance(rows, list) or not all(isinstance(row, dict) for row in rows):
        raise SystemExit(f"{where}: expected a JSON array of objects")
    missing = [(i, f) for i, row in enumerate(rows) for f in fields if f not in row]
    if missing:
        raise SystemExit(f"{where}: row {missing[0][0]} has no field {missing[0][1]!r}")
    lines = [json.dumps({f: row[f] for f in fields}, ensure_ascii=False) for row in rows]
    return "[\n" + ",\n".join(lines) + "\n]\n"


def copy_upstream(source: Path, out: Path, upstream: Upstream) -> list[Path]:
    """Copy one upstream's kept files and LICENSE into `out/<target>`; refuses a copy of another commit."""
    folder = source / upstream.folder
    card = folder / "SOURCE.md"
    if not card.is_file() or upstream.commit not in card.read_text(encoding="utf-8"):
        raise SystemExit(f"{card} does not name commit {upstream.commit}: update this script first")
    target = out / upstream.target
    written = []
    for relative, fields in {"LICENSE": None, **upstream.files}.items():
        src, dst = folder / relative, target / relative
        if not src.is_file():
            raise SystemExit(f"{src}: missing from the source folder")
        dst.parent.mkdir(parents=True, exist_ok=True)
        if fields is None:
            shutil.copyfile(src, dst)
        else:
            dst.write_text(_keep_fields(src.read_text(encoding="utf-8"), fields, src), encoding="utf-8")
        written.append(dst)
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "source", type=Path, help="folder holding halueval/, halluqa/, pandalm/, begin_dev/ as released"
    )
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "datasets")
    args = parser.parse_args()
    for upstream in UPSTREAMS:
        written = copy_upstream(args.source, args.out, upstream)
        size = sum(path.stat().st_size for path in written)
        print(f"{upstream.target}: {len(written)} files, {size / 1024:.0f} KiB")


if __name__ == "__main__":
    main()
