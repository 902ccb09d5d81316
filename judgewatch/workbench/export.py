"""`judgewatch export`: current verdicts with their interactions, labels and adjudications, as Parquet, JSONL or a
`datasets` Dataset saved to disk; flat columns typed alike in every format (nested values are JSON text). What the
rows rest on is the metadata: in the Parquet schema, the Dataset's description, or `<output>.meta.json`."""

from __future__ import annotations

import itertools
import json
from collections import Counter
from pathlib import Path
from typing import Any

from sqlmodel import Session

from judgewatch.workbench.items import ItemFilter, ItemRow, find_items

PAGE = 2000  # rows read from the store at a time


# Column name -> type, in order; "json" columns hold JSON text.
COLUMNS: dict[str, str] = {
    "verdict_id": "string",
    "interaction_id": "string",
    "item_id": "string",
    "source": "string",
    "dataset": "string",
    "release": "string",
    "tier": "string",
    "model": "string",
    "route": "string",
    "language": "string",
    "question": "string",
    "answer": "string",
    "messages": "json",
    "reference_answer": "string",
    "reference_facts": "json",
    "context": "json",
    "rubric_name": "string",
    "rubric_version": "string",
    "rubric_hash": "string",
    "judge_kind": "string",
    "judge_name": "string",
    "judge_config_hash": "string",
    "status": "string",
    "unscored_reason": "string",
    "overall": "float64",
    "scores": "json",
    "not_applicable": "json",
    "reason": "string",
    "score_reading": "string",
    "prompt_tokens": "int64",
    "completion_tokens": "int64",
    "latency_ms": "float64",
    "judged_at": "string",
    "label_status": "string",
    "labels": "json",
    "final_scores": "json",
    "adjudicated_by": "string",
}


def _json(value: Any) -> str | None:
    return None if value is None else json.dumps(value, ensure_ascii=False, sort_keys=True)


_FROM_INTERACTION = ("source", "release", "tier", "model", "route", "language", "question", "answer",
                     "reference_answer")  # fmt: skip
_FROM_VERDICT = ("item_id", "rubric_name", "rubric_version", "rubric_hash", "judge_kind", "judge_name",
                 "judge_config_hash", "status", "unscored_reason", "overall", "reason", "score_reading")  # fmt: skip


def row_dict(row: ItemRow) -> dict[str, Any]:
    """One export row (the columns of `COLUMNS`, in order)."""
    i, v = row.interaction, row.verdict
    values = {name: getattr(i, name) for name in _FROM_INTERACTION} | {name: getattr(v, name) for name in _FROM_VERDICT}
    values |= {
        "verdict_id": v.id,
        "interaction_id": i.id,
        "dataset": row.dataset,
        "messages": _json(i.messages),
        "reference_facts": _json(list(i.reference_facts)),
        "context": _json(list(i.context)),
        "scores": _json(dict(v.scores)),
        "not_applicable": _json(list(v.not_applicable)),
        "prompt_tokens": int(v.prompt_tokens),
        "completion_tokens": int(v.completion_tokens),
        "latency_ms": float(v.latency_ms),
        "judged_at": v.updated_at.isoformat() if v.updated_at else None,
        "label_status": row.status.value,
        "labels": _json([label.__dict__ for label in row.labels]),
        "final_scores": _json(row.final_scores),
        "adjudicated_by": row.adjudicated_by,
    }
    return {name: values[name] for name in COLUMNS}


def collect(session: Session, filt: ItemFilter) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Every row `filt` matches, and the metadata they rest on."""
    rows: list[dict[str, Any]] = []
    for offset in itertools.count(0, PAGE):
        page, _ = find_items(session, filt, offset=offset, limit=PAGE)
        rows.extend(row_dict(r) for r in page)
        if len(page) < PAGE:
            break
    provenance = Counter(label["via"] for r in rows for label in json.loads(r["labels"]))
    return rows, {
        "format": "judgewatch-export/1",
        "rows": len(rows),
        "filter": filt.model_dump(mode="json", exclude_none=True),
        "rubrics": sorted({f"{r['rubric_name']}@{r['rubric_version']} ({r['rubric_hash']})" for r in rows}),
        "judge_config_hashes": sorted({r["judge_config_hash"] for r in rows}),
        "label_provenance": dict(sorted(provenance.items())),  # LabelVia: ui and replay are people's labels
        "columns": COLUMNS,
    }


def write_export(rows: list[dict[str, Any]], meta: dict[str, Any], fmt: str, output: Path) -> list[Path]:
    """Write the rows as `fmt` at `output` (a file for parquet and jsonl, a folder for hf); the paths written."""
    if fmt not in ("parquet", "jsonl", "hf"):
        raise ValueError(f"unknown export format {fmt!r}: parquet, jsonl or hf")
    output.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "jsonl":
        output.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
        side = output.with_name(output.name + ".meta.json")
        side.write_text(json.dumps(meta, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        return [output, side]
    import pyarrow as pa

    types = {"string": pa.string(), "json": pa.string(), "float64": pa.float64(), "int64": pa.int64()}
    schema = pa.schema([(name, types[kind]) for name, kind in COLUMNS.items()])
    data = pa.Table.from_pylist(rows, schema=schema)
    table = data.replace_schema_metadata({b"judgewatch": json.dumps(meta).encode("utf-8")})
    if fmt == "parquet":
        import pyarrow.parquet as pq

        pq.write_table(table, output)
        return [output]
    from datasets import Dataset, DatasetInfo
    from datasets.utils.logging import disable_progress_bar

    disable_progress_bar()
    dataset = Dataset(table, info=DatasetInfo(description=json.dumps(meta, ensure_ascii=False)))
    dataset.save_to_disk(str(output))
    return [output]
