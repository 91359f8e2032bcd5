"""Builds that several report test modules read: made once per test session."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def simulated_cohort():
    """The simulated cohort with stored predictions (_simulated_report), unscored; tests score their own copy."""
    import _simulated_report

    return _simulated_report.simulated_cohort()
