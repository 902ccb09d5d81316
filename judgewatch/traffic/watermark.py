"""How far a source has been read: the caller stores it and passes it back to read only what is new."""

from __future__ import annotations

from datetime import date, datetime

from pydantic import BaseModel, ConfigDict, Field


class FileMark(BaseModel):
    """Rows already read from one file; `offset` (plain JSONL only) lets the next read seek past them."""

    model_config = ConfigDict(frozen=True)

    rows: int = 0
    offset: int | None = None


class Watermark(BaseModel):
    """Files: a mark per file. SQL: the (order value, id) of the last row read, rows after it come next.
    JSON-serializable, so the lead can keep it in one text column."""

    model_config = ConfigDict(frozen=True)

    files: dict[str, FileMark] = Field(default_factory=dict)
    last_order: int | float | str | None = None  # datetimes as ISO text
    last_id: int | str | None = None


class WatermarkState:
    """The mutable watermark a reader advances row by row; `snapshot()` freezes it for the caller."""

    def __init__(self, since: Watermark | None) -> None:
        since = since or Watermark()
        # (rows, offset) per file: plain tuples, because this is updated for every row read
        self.files: dict[str, tuple[int, int | None]] = {p: (m.rows, m.offset) for p, m in since.files.items()}
        self.last_order = since.last_order
        self.last_id = since.last_id

    def advance_sql(self, order: object, row_id: int | str) -> None:
        if isinstance(order, datetime | date):
            self.last_order = order.isoformat()
        elif order is None or isinstance(order, int | float | str):
            self.last_order = order
        else:
            self.last_order = str(order)
        self.last_id = row_id

    def snapshot(self) -> Watermark:
        files = {path: FileMark(rows=rows, offset=offset) for path, (rows, offset) in self.files.items()}
        return Watermark(files=files, last_order=self.last_order, last_id=self.last_id)
