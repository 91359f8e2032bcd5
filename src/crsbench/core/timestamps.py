"""The one timestamp format of records, runs and reports: UTC, ISO 8601, to the second."""

from __future__ import annotations

import datetime as dt


def now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
