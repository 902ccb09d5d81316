"""A report's format-free content (`Block`s) and its renderings, for the Tiers report and `compare`: Markdown with
PNG files beside it, one self-contained HTML file, JSON (`jsonable`); and a block as JSON for the page snapshots."""

from __future__ import annotations

import base64
import dataclasses
import html
import json
import math
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import Any, Literal

import numpy as np

Format = Literal["md", "html", "json"]


@dataclass(frozen=True)
class Block:
    kind: Literal["h1", "h2", "p", "warn", "table", "image"]
    text: str = ""
    headers: tuple[str, ...] = ()
    rows: tuple[tuple[str, ...], ...] = ()
    image: bytes = b""
    name: str = ""


def fmt_num(value: float | None, spec: str = ".2f") -> str:
    """A number as the reports print it: "n/a" where there is none (None, NaN, inf)."""
    return "n/a" if value is None or not math.isfinite(value) else format(value, spec)


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(content: list[Block], path: Path) -> list[Path]:
    """Write `path` (Markdown) and its PNG files beside it (`<stem>_<name>.png`); returns every file written."""
    written, lines = [], []
    for b in content:
        if b.kind == "h1":
            lines += [f"# {b.text}", ""]
        elif b.kind == "h2":
            lines += [f"## {b.text}", ""]
        elif b.kind == "p":
            lines += [b.text, ""]
        elif b.kind == "warn":
            lines += [f"> **Warning:** {b.text}", ""]
        elif b.kind == "table":
            lines.append("| " + " | ".join(_md_cell(h) for h in b.headers) + " |")
            lines.append("|" + "---|" * len(b.headers))
            lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in b.rows]
            lines.append("")
        elif b.kind == "image":
            image = path.with_name(f"{path.stem}_{b.name}.png")
            image.write_bytes(b.image)
            written.append(image)
            lines += [f"![{b.text}]({image.name})", ""]
    path.write_text("\n".join(lines), encoding="utf-8")
    return [path, *written]


def render_html(content: list[Block], path: Path, title: str) -> list[Path]:
    """Write one self-contained HTML file (images inline as base64 PNG)."""
    parts = []
    for b in content:
        text = html.escape(b.text)
        if b.kind in ("h1", "h2"):
            parts.append(f"<{b.kind}>{text}</{b.kind}>")
        elif b.kind == "p":
            parts.append(f"<p>{text}</p>")
        elif b.kind == "warn":
            parts.append(f'<p class="warn"><strong>Warning:</strong> {text}</p>')
        elif b.kind == "table":
            head = "".join(f"<th>{html.escape(h)}</th>" for h in b.headers)
            body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in b.rows)
            parts.append(f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
        elif b.kind == "image":
            data = base64.b64encode(b.image).decode("ascii")
            parts.append(
                f'<figure><img alt="{text}" src="data:image/png;base64,{data}"><figcaption>{text}</figcaption></figure>'
            )
    style = (
        "body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}"
        "table{border-collapse:collapse;margin:.5em 0 1.5em}"
        "td,th{border:1px solid #ccc;padding:.3em .6em;text-align:left}"
        "th{background:#f3f3f3}.warn{background:#fff4e5;border-left:4px solid #f0a020;padding:.5em}img{max-width:100%}"
    )
    document = (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
        f"<style>{style}</style></head><body>\n" + "\n".join(parts) + "\n</body></html>\n"
    )
    path.write_text(document, encoding="utf-8")
    return [path]


def write_blocks(
    content: list[Block], document: dict[str, Any], output: Path, fmt: Format, *, title: str
) -> list[Path]:
    """Render a report's blocks (md, html) or its JSON document at `output`; returns the files written."""
    if fmt not in ("md", "html", "json"):
        raise ValueError(f"unknown report format {fmt!r}: use 'md', 'html' or 'json'")
    output.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "md":
        return render_markdown(content, output)
    if fmt == "html":
        return render_html(content, output, title)
    output.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return [output]


def block_to_json(block: Block) -> dict[str, Any]:
    """A block as JSON (the image as base64), for snapshots."""
    return {**jsonable(block), "image": base64.b64encode(block.image).decode("ascii")}


def block_from_json(data: dict[str, Any]) -> Block:
    return Block(
        data["kind"],
        data.get("text", ""),
        tuple(data.get("headers", ())),
        tuple(tuple(r) for r in data.get("rows", ())),
        base64.b64decode(data.get("image", "")),
        data.get("name", ""),
    )


def jsonable(value: Any) -> Any:
    """A JSON-safe copy of `value`: dataclasses and pydantic models become dicts, non-finite floats None, datetimes
    ISO text, paths text."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if hasattr(value, "model_dump"):
        return jsonable(value.model_dump())
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return jsonable(value.tolist())
    if isinstance(value, np.generic):
        return jsonable(value.item())
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, Path):
        return str(value)
    return value
