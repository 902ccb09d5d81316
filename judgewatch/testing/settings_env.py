"""Settings set through their JUDGEWATCH_ environment variables while a block runs (tests, hypothesis examples)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

from judgewatch.settings import get_settings


@contextmanager
def settings_env(**values: object) -> Iterator[None]:
    """Each setting in `values` as its JUDGEWATCH_<NAME> variable, the cached settings rebuilt on the way in and
    out; the variables are as they were afterwards."""
    names = {f"JUDGEWATCH_{name.upper()}": str(value) for name, value in values.items()}
    before = {name: os.environ.get(name) for name in names}
    os.environ.update(names)
    get_settings.cache_clear()
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                del os.environ[name]
            else:
                os.environ[name] = value
        get_settings.cache_clear()
