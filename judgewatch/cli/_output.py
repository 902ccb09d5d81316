"""A command's output file: one writer at a time (`<output>.lock`, a second run stops at once naming it), written
through a temporary file of its own beside it and moved in place only when complete."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from filelock import FileLock, Timeout

from judgewatch.cli._store import CannotRun


@contextmanager
def output_lock(output: Path) -> Iterator[None]:
    """Hold `<output>.lock` while the run writes `output`; CannotRun when another run holds it."""
    lock_path = output.with_name(output.name + ".lock")
    try:
        output.parent.mkdir(parents=True, exist_ok=True)
        lock = FileLock(lock_path)
        lock.acquire(timeout=0)
    except Timeout:
        raise CannotRun(
            f"--output {output} is being written by another run (it holds {lock_path}): wait for it to finish "
            "or choose another --output"
        ) from None
    except OSError as exc:
        raise CannotRun(f"cannot write output file {output}: {exc.strerror or exc}") from exc
    try:
        yield
    finally:
        lock.release()


@contextmanager
def partial_output(output: Path) -> Iterator[IO[str]]:
    """A new temporary file beside `output` (`.<name>.<random>.partial`; its folder made first), moved over `output`
    when the block ends without an error and removed when it does not."""
    try:
        output.parent.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(dir=output.parent, prefix=f".{output.name}.", suffix=".partial")
    except OSError as exc:
        raise CannotRun(f"cannot write output file {output}: {exc.strerror or exc}") from exc
    partial = Path(name)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            yield out
        partial.replace(output)
    finally:
        partial.unlink(missing_ok=True)
