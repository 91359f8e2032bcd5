"""Record keys of planned units, and what of a plan is still missing from the store."""

from __future__ import annotations

from crsbench.plan.conditions import Condition
from crsbench.embed.cache import encoder_facts
from crsbench.plan.fit_units import FitUnit, record_key
from crsbench.run.resolve import Resolved

UnitKeys = dict[FitUnit, dict[Condition, str]]


def shift_material(resolved: Resolved, task: str) -> str:
    """The shift data a record was scored on: its content, and how its labels were mapped."""
    shift = resolved.shifts.get(task)
    if shift is None:
        return ""
    return shift.fingerprint() + repr(sorted((resolved.shift_maps.get(task) or {}).items()))


def unit_keys(units: list[FitUnit], resolved: Resolved, probe_fingerprint: str) -> UnitKeys:
    keys: UnitKeys = {}
    for unit in units:
        encoder, dataset = encoder_facts(resolved.encoders[unit.encoder]), resolved.datasets[unit.task]
        material = shift_material(resolved, unit.task) if any(c.on_shift_data for c in unit.conditions) else ""
        keys[unit] = {
            c: record_key(encoder.fingerprint, unit.task, dataset.fingerprint(), probe_fingerprint, unit.seed,
                          unit.fraction, c, c.record_material(material), unit.refit)
            for c in unit.conditions
        }
    return keys


def missing(keys: UnitKeys, stored: set[str]) -> dict[FitUnit, tuple[Condition, ...]]:
    """Per unit with anything to do, the conditions whose records are not stored yet (in plan order)."""
    todo = {unit: tuple(c for c, key in by_condition.items() if key not in stored) for unit, by_condition in keys.items()}
    return {unit: conditions for unit, conditions in todo.items() if conditions}
