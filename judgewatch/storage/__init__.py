"""The store: SQLModel tables, the engine, migrations and the data-access functions of judgewatch.

Import the tables from their modules (`storage.verdicts`, ...) and the functions from `storage.verdict_store`;
nothing here creates an engine at import time.
"""
