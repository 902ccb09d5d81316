"""A guard that records every file a test opens beside the checkout, so the repository keeps standing alone.

Installed by tests/conftest.py through `sys.addaudithook`: an `open`, `os.listdir` or `os.scandir` of a path in the
checkout's parent folder but outside the checkout fails the test (that is where stray data lives on a developer's
machine, and where a fresh clone has nothing). Allowed anywhere: the interpreter and its site-packages, the
temporary folder, system folders, hidden entries beside the checkout (user configuration), and extra roots
(pytest's tmp_path base). An allowed root holding the checkout's parent is not allowed wholesale, or nothing beside
the checkout could be caught. Audit hooks cannot be removed: one guard per process, switched with `active`.
"""

from __future__ import annotations

import logging
import os
import sys
import sysconfig
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

logger = logging.getLogger(__name__)

WATCHED_EVENTS = frozenset({"open", "os.listdir", "os.scandir"})
SYSTEM_ROOTS = ("/usr", "/etc", "/proc", "/sys", "/dev", "/lib", "/lib64", "/bin", "/sbin", "/var/lib", "/run")


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


class PathGuard:
    """Records opens below `repo_root.parent` that are outside `repo_root` and outside every allowed root."""

    def __init__(self, repo_root: Path, allowed: Iterable[Path | str] = ()) -> None:
        self.repo_root = os.path.realpath(repo_root)
        self.watched = os.path.dirname(self.repo_root)
        paths = sysconfig.get_paths()
        roots = [sys.prefix, sys.base_prefix, sys.exec_prefix, paths["purelib"], paths["platlib"], paths["stdlib"]]
        roots += [tempfile.gettempdir(), *SYSTEM_ROOTS, *map(str, allowed)]
        self.allowed: list[str] = []
        for root in roots:
            self.allow(root)
        self.offenders: list[str] = []
        self.active = False

    def allow(self, root: Path | str) -> None:
        """Also allow `root` and everything below it (pytest's tmp_path base, known once the session starts);
        ignored when it holds the watched folder (it would allow everything beside the checkout)."""
        real = os.path.realpath(root)
        if _within(self.watched, real) and real != self.watched:
            return
        self.allowed = sorted({*self.allowed, real})

    def offends(self, path: str) -> bool:
        """True when `path` (absolute, or relative to the working folder) lies beside the checkout."""
        real = os.path.realpath(path)
        if not _within(real, self.watched) or _within(real, self.repo_root):
            return False
        first = os.path.relpath(real, self.watched).split(os.sep)[0]
        if first.startswith(".") and first not in (".", ".."):
            return False  # hidden: a home folder's caches and settings when the checkout sits in ~
        return not any(_within(real, root) for root in self.allowed)

    def hook(self, event: str, args: tuple[object, ...]) -> None:
        """The audit hook: cheap for everything but the watched events, and never raises."""
        if not self.active or event not in WATCHED_EVENTS or not args:
            return
        path = args[0]
        if isinstance(path, bytes):
            path = os.fsdecode(path)
        if not isinstance(path, str | os.PathLike):
            return  # a file descriptor: its path was checked when it was opened
        self.active = False  # realpath and logging must not re-enter the hook
        try:
            text = os.fspath(path)
            if isinstance(text, str) and self.offends(text):
                self.offenders.append(os.path.realpath(text))
        finally:
            self.active = True

    def take(self) -> list[str]:
        """The offending paths recorded since the last call, and forget them."""
        found, self.offenders = self.offenders, []
        return found

    @contextmanager
    def watching(self) -> Iterator[list[str]]:
        """Record while the block runs; yields the list that collects this block's offending paths."""
        previous, self.active = self.active, True
        found: list[str] = []
        try:
            yield found
        finally:
            self.active = previous
            found.extend(self.take())


def install(repo_root: Path, allowed: Iterable[Path | str] = ()) -> PathGuard:
    """A new guard, registered as this process's audit hook (inactive until `active` is set)."""
    guard = PathGuard(repo_root, allowed)
    sys.addaudithook(guard.hook)
    logger.debug("path guard on %s (checkout %s)", guard.watched, guard.repo_root)
    return guard
