"""Subcommand: sweep (filled in by the sweep issue)."""

from __future__ import annotations

REGISTRARS: list = []
