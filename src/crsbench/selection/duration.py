"""Budget strings: `90s`, `30m`, `2h`, `1h30m`, or a plain number of seconds."""

from __future__ import annotations

import math
import re

from crsbench.errors import DataError

UNIT_SECONDS = {"h": 3600.0, "m": 60.0, "s": 1.0}
_PART = re.compile(r"(\d+(?:\.\d+)?)([hms])")


def parse_duration(text: str) -> float:
    """Seconds in a budget string; anything else is a one-line error naming the option."""
    value = text.strip().lower()
    try:
        seconds = float(value)
    except ValueError:
        parts = _PART.findall(value)
        if not parts or "".join(n + u for n, u in parts) != value.replace(" ", ""):
            raise DataError(f"--budget: cannot read {text!r}; write e.g. 90s, 30m, 2h or 1h30m") from None
        seconds = sum(float(n) * UNIT_SECONDS[u] for n, u in parts)
    if not math.isfinite(seconds) or seconds <= 0:
        raise DataError(f"--budget: {text!r} is not a positive, finite duration")
    return seconds


def format_duration(seconds: float) -> str:
    """`4m10s`, `1h02m`, `45s`: what a person reads in a plan line."""
    seconds = max(0.0, float(seconds))
    if seconds < 60:
        return f"{seconds:.0f}s"
    minutes, secs = divmod(int(round(seconds)), 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"
