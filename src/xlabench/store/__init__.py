"""SQLite result store: schema, reads, writes, exports."""

from xlabench.store.db import DEFAULT_DB, ResultStore, check_db_file
from xlabench.store.merge import MergeSummary, SourceSummary, merge_databases
from xlabench.store.schema import SCHEMA_VERSION

__all__ = [
    "DEFAULT_DB",
    "SCHEMA_VERSION",
    "MergeSummary",
    "ResultStore",
    "SourceSummary",
    "check_db_file",
    "merge_databases",
]
