"""SQLite result store: schema, reads, writes, exports."""

from xlabench.store.db import DEFAULT_DB, ResultStore, check_db_file
from xlabench.store.schema import SCHEMA_VERSION

__all__ = ["DEFAULT_DB", "SCHEMA_VERSION", "ResultStore", "check_db_file"]
