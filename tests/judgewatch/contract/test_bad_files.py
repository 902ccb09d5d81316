"""Bad files get one line naming the file and field, never a traceback: rubrics, templates, cards, inputs."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from judgewatch.cli import get_app
from judgewatch.contract.raw_rows import InputFileError, sniff_jsonl_file
from judgewatch.judging.input_rows import read_judge_input
from judgewatch.regression.golden import check_golden_set
from judgewatch.settings import REPO_ROOT

RUBRICS = REPO_ROOT / "rubrics"
ROW = {"id": "a", "question": "What is the capital of France?", "answer": "Paris.", "language": "en"}


@pytest.fixture
def rubric_copy(tmp_path: Path) -> Path:
    for file in RUBRICS.glob("answer_quality*"):
        shutil.copy(file, tmp_path / file.name)
    return tmp_path / "answer_quality.yaml"


def _check(path: Path) -> str:
    result = CliRunner().invoke(get_app(), ["rubric", "check", str(path)])
    assert result.exit_code == 1, result.output
    assert isinstance(result.exception, SystemExit), result.exception  # not a traceback
    return result.output


def test_invalid_utf8_in_a_template_is_named(rubric_copy: Path) -> None:
    template = rubric_copy.parent / "answer_quality.en.j2"
    template.write_bytes(template.read_bytes() + b"\n\xff\xfe\n")
    output = _check(rubric_copy)
    assert "field 'templates.en'" in output and "answer_quality.en.j2 is not valid UTF-8" in output


def test_invalid_utf8_in_the_rubric_yaml_is_named(rubric_copy: Path) -> None:
    rubric_copy.write_bytes(rubric_copy.read_bytes() + b"\n# \xc3\x28\n")
    assert "answer_quality.yaml is not valid UTF-8" in _check(rubric_copy)


def test_a_template_path_that_is_a_directory_is_named(rubric_copy: Path) -> None:
    (rubric_copy.parent / "folder.j2").mkdir()
    rubric_copy.write_text(rubric_copy.read_text().replace("answer_quality.en.j2", "folder.j2"))
    assert "template path 'folder.j2' is a directory" in _check(rubric_copy)


@pytest.mark.parametrize("escape", [str(Path("..") / "outside.j2"), "/etc/passwd", "link.j2"])
def test_a_template_path_may_not_leave_the_rubric_folder(rubric_copy: Path, escape: str) -> None:
    outside = rubric_copy.parent.parent / "outside.j2"
    outside.write_text((RUBRICS / "answer_quality.en.j2").read_text())
    (rubric_copy.parent / "link.j2").symlink_to(outside)
    rubric_copy.write_text(rubric_copy.read_text().replace("answer_quality.en.j2", escape))
    assert "leaves the rubric folder" in _check(rubric_copy)


def test_invalid_utf8_in_a_dataset_card_is_named(tmp_path: Path) -> None:
    folder = tmp_path / "carded"
    folder.mkdir()
    (folder / "data.jsonl").write_text(json.dumps({"id": "a", "question": "Q?", "language": "en"}) + "\n")
    (folder / "card.yaml").write_bytes(b"name: carded\ndescription: caf\xe9\n")
    assert check_golden_set(folder) == ["carded: card.yaml: not valid UTF-8 (invalid continuation byte at byte 29)"]


def test_a_utf8_bom_is_accepted_by_judge_input_and_dataset_check_alike(tmp_path: Path) -> None:
    bom = b"\xef\xbb\xbf"
    judged = tmp_path / "judged.jsonl"
    judged.write_bytes(bom + json.dumps(ROW).encode() + b"\n")
    folder = tmp_path / "golden"
    folder.mkdir()
    golden_rows = [{"id": "a", "question": "Q?", "language": "en"}, {"id": "b", "question": "R?", "language": "en"}]
    (folder / "data.jsonl").write_bytes(bom + b"".join(json.dumps(r).encode() + b"\n" for r in golden_rows))

    items = list(read_judge_input(judged, max_field_bytes=1 << 20))
    assert [getattr(i, "id", None) for i in items] == ["a"]
    assert check_golden_set(folder) == []
    result = CliRunner().invoke(get_app(), ["dataset", "check", str(folder)])
    assert result.exit_code == 0, result.output


def test_an_elf_binary_is_called_a_binary_not_utf16(tmp_path: Path) -> None:
    binary = tmp_path / "program.jsonl"
    binary.write_bytes(Path(sys.executable).resolve().read_bytes()[:70_000])
    with pytest.raises(InputFileError, match="ELF binary") as caught:
        sniff_jsonl_file(binary)
    assert "UTF-16" not in str(caught.value)


def test_other_binaries_are_binaries_and_utf16_is_still_utf16(tmp_path: Path) -> None:
    gz = tmp_path / "rows.jsonl"
    gz.write_bytes(b"\x1f\x8b\x08\x00" + bytes(range(256)) * 4)
    with pytest.raises(InputFileError, match="gzip-compressed"):
        sniff_jsonl_file(gz)
    noise = tmp_path / "noise.jsonl"
    noise.write_bytes(bytes(range(256)) * 8)
    with pytest.raises(InputFileError, match="is a binary file"):
        sniff_jsonl_file(noise)
    for encoding in ("utf-16-le", "utf-16-be", "utf-16"):
        utf16 = tmp_path / f"{encoding}.jsonl"
        utf16.write_bytes((json.dumps(ROW) + "\n").encode(encoding))
        with pytest.raises(InputFileError, match="UTF-16 encoded"):
            sniff_jsonl_file(utf16)
