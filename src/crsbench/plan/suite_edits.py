"""A suite changed from the command line or the Python API: another executor, more (or other) encoders."""

from __future__ import annotations

from pydantic import ValidationError

from crsbench.errors import SuiteError
from crsbench.plan.suite import EncoderChoice, ExecutorSpec, Suite


def with_executor(suite: Suite, kind: str | None = None, address: str | None = None) -> Suite:
    """The suite run by another executor (its hash and records do not change); None keeps the suite's."""
    if kind is None and address is None:
        return suite
    chosen = {**suite.executor.model_dump(exclude_unset=True), **({"kind": kind} if kind else {})}
    if address is not None:
        chosen["address"] = address
    elif kind and kind != suite.executor.kind:
        chosen.pop("address", None)  # the suite's address belonged to its own executor
    try:
        spec = ExecutorSpec.model_validate(chosen)
    except ValidationError as exc:
        raise SuiteError(f"--executor: {exc.errors()[0]['msg'].removeprefix('Value error, ')}") from None
    return suite.model_copy(update={"executor": spec})


def with_encoders(suite: Suite, encoders, *, replace: bool = False) -> Suite:
    """The suite with more encoders (or only these, with `replace`). Each item is a registry name or
    `module:factory`, a suite entry mapping, an EncoderSpec, or an object of this process, registered
    for this process as encoders.registry.register_object does."""
    added = [encoder_choice(item) for item in encoders]
    chosen = added if replace else [*suite.encoders, *added]
    # the suite's own values as they are (not dumped and re-read), with the encoders changed
    data = {**{field: getattr(suite, field) for field in suite.model_fields_set}, "encoders": chosen}
    if replace and suite.reference is not None and suite.reference not in [c.label for c in chosen]:
        data["reference"] = None
    try:
        return Suite.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"]) or "(suite)"
        raise SuiteError(f"encoders: {field}: {first['msg'].removeprefix('Value error, ')}") from None


def encoder_choice(item) -> EncoderChoice:
    """One item of `with_encoders` as the suite's encoder entry."""
    from crsbench.encoders import registry
    from crsbench.encoders.spec import EncoderSpec

    if isinstance(item, EncoderChoice):
        return item
    if isinstance(item, str):
        return EncoderChoice(name=item)
    if isinstance(item, dict):
        return EncoderChoice.model_validate(item)
    if isinstance(item, EncoderSpec):
        return EncoderChoice(spec=item)
    return EncoderChoice(name=registry.register_object(item))
