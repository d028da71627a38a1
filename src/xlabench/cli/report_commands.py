"""Subcommands: report, import (filled in by the report issue)."""

from __future__ import annotations

REGISTRARS: list = []
