"""The one modality vocabulary: the names datasets declare (`modality:`), the perturbation sets are keyed
by, and every `--modality` option takes. Older spellings are accepted as aliases, here and nowhere else.

    canonical_modality("xray") -> "chest_xray"       canonical_modality("Fundus") -> "fundus"
"""

from __future__ import annotations

from crsbench.errors import DataError

# dataset metadata, perturbation sets and suites use these names
MODALITIES: tuple[str, ...] = ("dermoscopy", "fundus", "chest_xray", "generic")
DEFAULT_MODALITY = "generic"

# what `select -m` took before the vocabulary was one: still read, never written
ALIASES: dict[str, str] = {"xray": "chest_xray", "other": "generic"}


def known_modalities() -> str:
    """The names for an error message or a help text: `dermoscopy, fundus, chest_xray, generic (aliases: ...)`."""
    aliases = ", ".join(f"{old} = {new}" for old, new in ALIASES.items())
    return f"{', '.join(MODALITIES)} (aliases: {aliases})"


def canonical_modality(name: str, field: str = "--modality") -> str:
    """The vocabulary's name for `name` (case and surrounding blanks ignored, aliases resolved); anything
    else is a one-line DataError naming `field`, the option or suite field it came from."""
    key = str(name).strip().lower()
    key = ALIASES.get(key, key)
    if key not in MODALITIES:
        raise DataError(f"{field}: unknown modality {name!r}; known: {known_modalities()}")
    return key
