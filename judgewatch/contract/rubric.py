"""Rubrics are data: `rubrics/<name>.yaml` (criteria, scale, anchors, version) plus Jinja2 prompt templates.

A broken file raises `RubricError` naming the file, the field and the problem. The rubric's content hash
covers the YAML and every template it uses, so any edit that can change a score starts a new series.
"""

from __future__ import annotations

import hashlib
from functools import cached_property
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from judgewatch.contract.checks import CheckSpec
from judgewatch.contract.items import Language
from judgewatch.contract.verdicts import RubricIdentity


class RubricError(ValueError):
    """A rubric file or template that cannot be used; the message names the file and the field."""


class Scale(BaseModel):
    model_config = ConfigDict(extra="forbid")

    min: int = 1
    max: int = 5

    @model_validator(mode="after")
    def _ordered(self) -> Scale:
        if self.max <= self.min:
            raise ValueError(f"max ({self.max}) must be greater than min ({self.min})")
        return self

    @property
    def levels(self) -> list[int]:
        return list(range(self.min, self.max + 1))


class Criterion(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    description: str = Field(min_length=1)
    needs_reference: bool = False
    weight: float = Field(default=1.0, gt=0)
    anchors: dict[int, str] = Field(default_factory=dict)  # required (covering the scale) for pointwise rubrics
    description_zh: str | None = None
    anchors_zh: dict[int, str] | None = None
    check: CheckSpec | None = None  # scored by a deterministic rule, not by a judge (docs/checks.md)


class Rubric(BaseModel):
    """A validated rubric. `path` and the template texts are attached by `load_rubric`."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    version: str = Field(min_length=1)
    description: str = ""
    kind: Literal["pointwise", "pairwise"] = "pointwise"
    scale: Scale = Field(default_factory=Scale)
    criteria: list[Criterion] = Field(min_length=1)
    templates: dict[Language, str]
    reason_max_chars: int = Field(default=160, ge=20, le=1000)
    pass_threshold: float | None = None

    path: Path | None = Field(default=None, exclude=True)
    template_texts: dict[Language, str] = Field(default_factory=dict, exclude=True)

    @model_validator(mode="after")
    def _anchors_cover_scale(self) -> Rubric:
        levels = set(self.scale.levels)
        seen: set[str] = set()
        for i, criterion in enumerate(self.criteria):
            if criterion.name in seen:
                raise ValueError(f"criteria.{i}.name: duplicate criterion '{criterion.name}'")
            seen.add(criterion.name)
            if criterion.check is not None and self.kind == "pairwise":
                raise ValueError(f"criteria.{i}.check ({criterion.name}): checks need a pointwise rubric")
            # A pairwise verdict names a winner: no scale to anchor; a check without anchors: pass = max, fail = min.
            if self.kind == "pairwise" or (criterion.check is not None and not criterion.anchors):
                continue
            for field, anchors in (("anchors", criterion.anchors), ("anchors_zh", criterion.anchors_zh)):
                if anchors is None:
                    continue
                missing = sorted(levels - set(anchors))
                extra = sorted(set(anchors) - levels)
                if missing:
                    raise ValueError(f"criteria.{i}.{field} ({criterion.name}): missing anchor for level(s) {missing}")
                if extra:
                    raise ValueError(
                        f"criteria.{i}.{field} ({criterion.name}): level(s) {extra} outside the scale "
                        f"{self.scale.min}-{self.scale.max}"
                    )
        return self

    @cached_property
    def content_hash(self) -> str:
        """The first 16 hex digits of `content_digest`: the rubric's identity in verdicts and reports."""
        return self.content_digest[:16]

    @cached_property
    def content_digest(self) -> str:
        """sha256 over the YAML bytes and every template's bytes (all 64 hex digits)."""
        digest = hashlib.sha256(self.path.read_bytes() if self.path is not None else self.model_dump_json().encode())
        for lang in sorted(self.template_texts):
            digest.update(lang.encode() + b"\0" + self.template_texts[lang].encode())
        return digest.hexdigest()

    @property
    def identity(self) -> RubricIdentity:
        return RubricIdentity(name=self.name, version=self.version, hash=self.content_hash)

    def criterion(self, name: str) -> Criterion:
        return {c.name: c for c in self.criteria}[name]

    @property
    def check_criteria(self) -> list[Criterion]:
        """Criteria scored by a deterministic check (`judges/checks.py`), never asked of a judge."""
        return [c for c in self.criteria if c.check is not None]

    @property
    def only_checks(self) -> bool:
        """Every criterion is a check: the rubric needs no judge at all."""
        return all(c.check is not None for c in self.criteria)

    def applicable(self, has_references: bool) -> list[Criterion]:
        """Criteria that can be judged; those needing references are not applicable without them."""
        return [c for c in self.criteria if has_references or not c.needs_reference]

    def overall(self, scores: dict[str, int | None]) -> float | None:
        """Weighted mean of the criteria that have a score."""
        pairs = [(self.criterion(k).weight, v) for k, v in scores.items() if v is not None]
        if not pairs:
            return None
        return round(sum(w * v for w, v in pairs) / sum(w for w, _ in pairs), 4)


def _format_validation_error(path: Path, error: ValidationError) -> str:
    lines = []
    for err in error.errors():
        loc = ".".join(str(p) for p in err["loc"]) or "(top level)"
        msg = {"extra_forbidden": "unknown key", "missing": "required field is missing"}.get(err["type"], err["msg"])
        lines.append(f"{path}: field '{loc}': {msg}")
    return "\n".join(lines)


def rubric_path(name_or_path: str | Path, rubrics_dir: Path) -> Path:
    candidate = Path(name_or_path)
    if candidate.suffix in (".yaml", ".yml") and candidate.exists():
        return candidate
    path = rubrics_dir / f"{name_or_path}.yaml"
    if not path.exists():
        known = ", ".join(sorted(p.stem for p in rubrics_dir.glob("*.yaml"))) or "none"
        raise RubricError(f"unknown rubric '{name_or_path}' (no {path}; rubrics in {rubrics_dir}: {known})")
    return path


def confined_template(rubric_file: Path, lang: str, template: str) -> Path:
    """The template file named by a rubric, which must be a file inside the rubric's own folder. Templates are data the
    rubric owns: a path that leaves the folder (`../`, an absolute path, a symlink out) could read any file on the
    machine into a prompt, so it is refused."""
    folder = rubric_file.parent.resolve()
    where = f"{rubric_file}: field 'templates.{lang}'"
    candidate = (folder / template).resolve()
    if not candidate.is_relative_to(folder):
        raise RubricError(f"{where}: template path {template!r} leaves the rubric folder {folder}: not allowed")
    if candidate.is_dir():
        raise RubricError(f"{where}: template path {template!r} is a directory, not a template file")
    if not candidate.is_file():
        raise RubricError(f"{where}: template file {folder / template} not found")
    return candidate


def _read_text(file: Path, rubric_file: Path, field: str) -> str:
    """A rubric or template file as UTF-8 text (a leading byte-order mark dropped), or a one-line RubricError."""
    try:
        return file.read_bytes().decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        raise RubricError(
            f"{rubric_file}: field '{field}': {file.name} is not valid UTF-8 ({exc.reason} at byte {exc.start})"
        ) from None
    except OSError as exc:
        raise RubricError(f"{rubric_file}: field '{field}': cannot read {file}: {exc.strerror or exc}") from None


def load_rubric(name_or_path: str | Path, rubrics_dir: Path | None = None) -> Rubric:
    """Load, validate and attach templates; raises RubricError naming file, field and problem."""
    if rubrics_dir is None:
        from judgewatch.settings import get_settings

        rubrics_dir = get_settings().rubrics_dir
    path = rubric_path(name_or_path, rubrics_dir)
    try:
        raw = yaml.safe_load(_read_text(path, path, "(top level)"))
    except yaml.YAMLError as exc:
        raise RubricError(f"{path}: not valid YAML: {exc}") from exc
    if not isinstance(raw, dict):
        raise RubricError(f"{path}: expected a mapping at the top level, got {type(raw).__name__}")
    try:
        rubric = Rubric.model_validate(raw)
    except ValidationError as exc:
        raise RubricError(_format_validation_error(path, exc)) from exc
    if rubric.name != path.stem:
        raise RubricError(f"{path}: field 'name': '{rubric.name}' does not match the file name '{path.stem}'")
    rubric.template_texts = {
        lang: _read_text(confined_template(path, lang, template), path, f"templates.{lang}")
        for lang, template in rubric.templates.items()
    }
    rubric.path = path
    return rubric
