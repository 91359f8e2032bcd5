"""Portable results bundles: write one from a results folder, read one safely, compare several as one
scored cohort, and publish them as a static leaderboard page (docs/bundles.md)."""

from crsbench.bundles.compare import Cohort, NotComparable, merge, score_cohort
from crsbench.bundles.content import Bundle, from_results
from crsbench.bundles.read import BundleError, read_bundle
from crsbench.bundles.write import write_bundle

__all__ = ["Bundle", "BundleError", "Cohort", "NotComparable", "from_results", "merge", "open_source", "read_bundle",
           "score_cohort", "write_bundle"]


def open_source(source):
    """A bundle file, or a results folder (or its results.sqlite) read as the bundle it would write."""
    from pathlib import Path

    path = Path(source)
    if path.is_dir() or path.suffix == ".sqlite":
        return from_results(path, with_subgroups=True)  # local results: their attributes never leave this machine
    return read_bundle(path)
