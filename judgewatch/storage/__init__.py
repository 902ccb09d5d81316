"""The store: one module per concept, each with its SQLModel tables and keyword-only access functions taking a
`session`; `storage.db` holds the engine, sessions, `table()` and the dialect upsert. No engine at import time."""
