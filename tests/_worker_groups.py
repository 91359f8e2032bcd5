"""Fixture params that keep each value's tests on one pytest-xdist worker (tests/conftest.py picks the
grouped distribution), so that a module fixture built per value is built once, not once per worker."""

from __future__ import annotations

from typing import Iterable

import pytest


def one_worker_each(prefix: str, values: Iterable[str]) -> list:
    return [pytest.param(value, marks=pytest.mark.xdist_group(f"{prefix}-{value}")) for value in values]
