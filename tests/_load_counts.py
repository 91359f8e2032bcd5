"""Counts of the reads of a results folder's records table and stored predictions, by whichever path."""

from __future__ import annotations

from collections import Counter


def counting_loads(monkeypatch) -> Counter:
    """A Counter that every later `load_records` and `load_predictions` call adds one to, by name."""
    import crsbench.results.predictions as predictions
    import crsbench.results.store as store

    counts: Counter = Counter()
    for module, name in ((store, "load_records"), (predictions, "load_predictions")):
        def counted(*args, _name=name, _original=getattr(module, name), **kwargs):
            counts[_name] += 1
            return _original(*args, **kwargs)
        monkeypatch.setattr(module, name, counted)
    return counts
