"""The store: SQLModel tables, the engine, migrations and the data-access functions of judgewatch.

Each `storage/<concept>.py` holds its tables and its keyword-only access functions taking a `session`
(`storage.verdicts.upsert_verdicts`, `storage.runs.start_run`, ...); `storage.db` holds the engine, sessions,
`table()` and the one dialect upsert. Nothing here creates an engine at import time.
"""
