"""The declared schema of a bundle's JSON members: what each holds, with types, and the checks that run
on the parsed value before any of it is used.

Types are strict (a label is a string, never a list or a number; a count is an integer, never a bool),
so a value that reaches compare or the leaderboard is one they can read. The schema follows
`format_version`: `MANIFESTS` maps each version this package reads to its manifest model, and a version
keeps its model when a later one is added, so bundles written by earlier versions still read.

The suite inside a bundle has its path fields blanked and its output and cache dropped, so it is checked
by a looser schema than a suite file: the fields the reading side uses are typed (name, reference,
encoders, tasks), its `crs:` block by the same rules as a suite file's (`CRSConfig`), its `probe:`
block by `ProbeSpec`; other keys are kept as written.
"""

from __future__ import annotations

from typing import Any, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictFloat, StrictInt, StrictStr, ValidationError

from crsbench.bundles.manifest import FORMAT, Limits
from crsbench.core.printable import printable

Count = Field(ge=0)
SHA256 = Field(pattern=r"^[0-9a-f]{64}$")


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class _Open(BaseModel):
    """A mapping whose typed fields are checked and whose other keys are kept as written."""

    model_config = ConfigDict(extra="allow", strict=True)


class FileEntry(_Closed):
    sha256: StrictStr = SHA256
    bytes: StrictInt = Count


class Contents(_Closed):
    records: StrictInt = Count
    predictions: StrictInt = Count
    test_sets: StrictInt = Count
    vectors: StrictInt = Count
    subgroup_sets: StrictInt = Field(0, ge=0)  # test sets with a subgroup member (written only when > 0)
    encoders: list[StrictStr]
    tasks: list[StrictStr]


class Solver(_Closed):
    name: StrictStr
    probe_fingerprints: list[StrictStr]


class ManifestV1(_Closed):
    format: Literal["crsbench-bundle"]
    format_version: Literal[1]
    protocol_version: StrictStr
    solver: Solver
    written_by: StrictStr
    record_schema_versions: list[StrictInt] = []
    record_crsbench_versions: list[StrictStr] = []
    current_record_schema: Optional[StrictInt] = None
    contents: Contents
    files: dict[StrictStr, FileEntry]


MANIFESTS: dict[int, type[BaseModel]] = {1: ManifestV1}


class Run(_Closed):
    run_id: StrictStr
    started_at: Optional[StrictStr] = None
    finished_at: Optional[StrictStr] = None
    suite_hash: Optional[StrictStr] = None
    suite_name: Optional[StrictStr] = None
    crsbench_version: Optional[StrictStr] = None
    records_written: Optional[Union[StrictInt, StrictFloat]] = Field(None, ge=0)  # a store column with nulls reads as float
    status: Optional[StrictStr] = None
    numerics: Any = None  # the session's numeric settings as the store kept them: shown, never computed with


class Dataset(_Closed):
    task: StrictStr
    role: StrictStr
    dataset: StrictStr
    fingerprint: StrictStr
    dropped: Any = None  # what the loader left out, as the store kept it: shown, never computed with


class SuiteEncoder(_Open):
    name: Optional[StrictStr] = None
    label: Optional[StrictStr] = None
    baseline: StrictBool = False
    spec: Optional[dict[str, Any]] = None


class SuiteTask(_Open):
    name: StrictStr
    modality: Optional[StrictStr] = None
    dataset: Optional[dict[str, Any]] = None


class BundleSuite(_Open):
    name: StrictStr
    reference: Optional[StrictStr] = None
    encoders: list[Any] = []  # each a registry name or a SuiteEncoder mapping: checked one by one (suites())
    tasks: list[SuiteTask] = []
    crs: Optional[dict[str, Any]] = None
    probe: Optional[dict[str, Any]] = None


class Suite(_Closed):
    suite_hash: StrictStr
    name: StrictStr
    suite: BundleSuite


class Encoder(_Closed):
    label: StrictStr
    revision: list[StrictStr]
    fingerprint: list[StrictStr]
    pixels: list[StrictStr]
    choice: dict[str, Any]
    spec: dict[str, Any]


class SchemaError(ValueError):
    """A JSON member that is not what the schema declares; the message names the member and the field."""


def _where(loc: tuple) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else f".{part}" if out else str(part)
    return out or "(the whole file)"


def _problem(name: str, exc: ValidationError) -> SchemaError:
    first = exc.errors(include_url=False)[0]
    extra = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    return SchemaError(f"{name}: {printable(_where(tuple(first['loc'])))[:120]}: {first['msg']}{extra}")


def _validated(model: type[BaseModel], value: Any, name: str) -> BaseModel:
    try:
        return model.model_validate(value)
    except ValidationError as exc:
        raise _problem(name, exc) from None


def _list_of(model: type[BaseModel], value: Any, name: str) -> list[dict]:
    """Each item validated by `model`; the value kept as written (the readers take plain mappings)."""
    if not isinstance(value, list):
        raise SchemaError(f"{name}: a {type(value).__name__}, not a list")
    for i, item in enumerate(value):
        try:
            model.model_validate(item)
        except ValidationError as exc:
            first = exc.errors(include_url=False)[0]
            raise SchemaError(f"{name}: {printable(_where((i, *first['loc'])))[:120]}: {first['msg']}") from None
    return value


def _long_text(value: Any, limit: int, path: str = "") -> str | None:
    """The path of the first string (or key) longer than `limit` in a parsed JSON value."""
    stack = [(value, path)]
    while stack:
        item, at = stack.pop()
        if isinstance(item, str) and len(item) > limit:
            return at or "(the value)"
        if isinstance(item, dict):
            for key, inner in item.items():
                if len(key) > limit:
                    return f"{at}.(a key)"
                stack.append((inner, f"{at}.{key}" if at else key))
        elif isinstance(item, list):
            stack.extend((inner, f"{at}[{i}]") for i, inner in enumerate(item))
    return None


def check_text(value: Any, name: str, limits: Limits) -> None:
    found = _long_text(value, limits.text_chars)
    if found is not None:
        raise SchemaError(f"{name}: {printable(found)[:80]}: text longer than the {limits.text_chars}-character limit")


def manifest(value: Any, limits: Limits) -> dict:
    """The manifest, once it is the model of its format version (the version itself is checked first)."""
    if not isinstance(value, dict) or value.get("format") != FORMAT:
        raise SchemaError(f"not a {FORMAT} manifest")
    model = MANIFESTS[value["format_version"]]
    check_text(value, "manifest.json", limits)
    _validated(model, value, "manifest.json")
    return value


def runs(value: Any, limits: Limits) -> list[dict]:
    check_text(value, "runs.json", limits)
    return _list_of(Run, value, "runs.json")


def datasets(value: Any, limits: Limits) -> list[dict]:
    check_text(value, "datasets.json", limits)
    return _list_of(Dataset, value, "datasets.json")


def encoders(value: Any, limits: Limits) -> list[dict]:
    check_text(value, "encoders.json", limits)
    _list_of(Encoder, value, "encoders.json")
    if len(value) > limits.encoders:
        raise SchemaError(f"encoders.json: {len(value)} encoders, more than the {limits.encoders} a bundle may hold")
    return value


def suites(value: Any, limits: Limits) -> list[dict]:
    """Each suite by the bundle's suite schema, its `crs:` block by CRSConfig and `probe:` by ProbeSpec."""
    from crsbench.crs.definition import CRSConfig
    from crsbench.plan.suite import ProbeSpec

    check_text(value, "suites.json", limits)
    _list_of(Suite, value, "suites.json")
    for i, entry in enumerate(value):
        suite = entry["suite"]
        if len(suite.get("encoders") or ()) > limits.encoders:
            raise SchemaError(f"suites.json: [{i}].suite.encoders: more than the {limits.encoders} a bundle may hold")
        for j, encoder in enumerate(suite.get("encoders") or ()):
            if not isinstance(encoder, str):
                try:
                    SuiteEncoder.model_validate(encoder)
                except ValidationError as exc:
                    first = exc.errors(include_url=False)[0]
                    raise SchemaError(f"suites.json: [{i}].suite.encoders[{j}].{printable(_where(tuple(first['loc'])))[:80]}: "
                                      f"{first['msg']}") from None
        for field, model in (("crs", CRSConfig), ("probe", ProbeSpec)):
            if suite.get(field) is not None:
                try:
                    model.model_validate(suite[field])
                except ValidationError as exc:
                    first = exc.errors(include_url=False)[0]
                    raise SchemaError(f"suites.json: [{i}].suite.{field}.{printable(_where(tuple(first['loc'])))[:80]}: "
                                      f"{first['msg']}") from None
    return value


def bounded_crs(crs: dict, limits: Limits, source: str) -> tuple[dict, list[str]]:
    """The bundle's `crs:` block with each setting that sizes an allocation capped at the reader's limit,
    and one line for each capped (the bundle's value shown)."""
    capped, notes = dict(crs), []
    for field in ("n_weight_draws", "n_boot"):
        value, limit = crs.get(field), getattr(limits, field)
        if isinstance(value, int) and value > limit:
            capped[field] = limit
            notes.append(f"{source}: crs {field} {value} is over this reader's limit; {limit} used "
                         f"(raise it for a trusted source: {field}=N in CRSBENCH_BUNDLE_LIMITS)")
    return capped, notes
