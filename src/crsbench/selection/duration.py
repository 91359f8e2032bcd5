"""Budget strings: `90s`, `30m`, `2h`, `1h30m`, or a plain number of seconds; and back (`format_budget`)."""

from __future__ import annotations

import math
import re

from crsbench.errors import DataError
from crsbench.core.progress import clock

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
    """`4m10s`, `1h02m`, `45s`: what a person reads in a plan line (whole seconds, unlike a progress clock)."""
    seconds = max(0.0, float(seconds))
    return f"{seconds:.0f}s" if seconds < 60 else clock(seconds)


# What a suggested budget is rounded up to: a person types `3m` or `1h15m`, not `2m47s`.
ROUNDING_STEPS = ((120.0, 10.0), (3600.0, 60.0), (math.inf, 300.0))  # (below this many seconds, round up to)


def round_up_budget(seconds: float) -> float:
    step = next(step for below, step in ROUNDING_STEPS if seconds < below)
    return max(step, math.ceil(seconds / step) * step)


def format_budget(seconds: float) -> str:
    """A budget as `--budget` reads it, without zero parts: `50s`, `35m`, `1h05m`, `2h`."""
    hours, rest = divmod(int(math.ceil(seconds)), 3600)
    minutes, secs = divmod(rest, 60)
    text = ""
    for n, unit in ((hours, "h"), (minutes, "m"), (secs, "s")):
        if n:
            text += f"{n:02d}{unit}" if text else f"{n}{unit}"  # after a larger part, two digits: 1h05m
    return text or "0s"
