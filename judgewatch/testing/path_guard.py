"""A guard that records every file a test opens beside the checkout, so the repository keeps standing alone.

The test suite installs it (tests/conftest.py) through `sys.addaudithook`: each `open`, `os.listdir` and
`os.scandir` event whose path lies in the folder holding the checkout (its parent and everything below) but
outside the checkout is recorded, and the test that caused it fails. That is where stray data lives on a
developer's machine (a data folder next to the checkout, a sibling worktree) and where a fresh clone has
nothing. System paths stay allowed wherever the checkout sits: the interpreter and its site-packages, the
temporary folder, `/usr`, `/etc`, `/proc`, `/sys`, `/dev`, hidden entries beside the checkout (a home
folder's `.cache`, `.netrc`: user configuration, not data), and any extra root given (pytest's tmp_path base).

An allowed root that holds the checkout's parent (the temporary folder, for a clone in `/tmp/x/checkout`) is
not allowed wholesale, or nothing beside the checkout could be caught; when the checkout sits directly in such
a root (`/tmp/checkout`), its siblings cannot be told from other temporary files and only the source check
(tests/judgewatch/testing/test_path_guard.py) applies. Audit hooks cannot be removed, so one guard is installed
per process and switched with `active`.
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
