"""YAML read with limits: a suite file is user input, and YAML can be made to explode.

PyYAML's safe loader builds no objects of its own choosing, but it will compose a file of nested
anchors whose expansion is exponential (a few hundred bytes naming a billion nodes: harmless while the
nodes are shared, fatal when a label or a hash walks them), nest a document deep enough to exhaust the
stack, and let a repeated key silently replace the first. `load_yaml` measures the composed document
before anything is built: its size as expanded (aliases counted as often as they are used, without
expanding them) and its depth, and it refuses a repeated mapping key naming it and its line.
"""

from __future__ import annotations

from typing import Any

import yaml

from crsbench.errors import SuiteError

MAX_BYTES = 1 << 20  # a suite is a page of settings; a megabyte is already generous
MAX_NODES = 100_000  # scalars, lists and mappings after expanding every alias
MAX_DEPTH = 64


class _UniqueKeyLoader(yaml.SafeLoader):
    def construct_mapping(self, node, deep=False):
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + 1
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"key {key!r} appears twice (lines {seen[key]} and {line}); keep one", key_node.start_mark
                )
            seen[key] = line
        return super().construct_mapping(node, deep)


def _measure(root: yaml.Node, source: str) -> tuple[int, int]:
    """(nodes as expanded, depth) of a composed document; an alias is the same node object, so a memo by
    identity counts its expansion without performing it."""
    sizes: dict[int, tuple[int, int]] = {}
    stack, visiting = [root], set()
    while stack:  # post-order without recursion: deep documents must not exhaust the stack here either
        node = stack[-1]
        if id(node) in sizes:
            stack.pop()
            continue
        children = _children(node)
        if id(node) not in visiting:
            visiting.add(id(node))
            stack.extend(child for child in children if id(child) not in sizes)
            continue
        stack.pop()
        if any(id(c) not in sizes for c in children):  # a child still open above us: an alias to itself
            raise SuiteError(f"{source}: line {node.start_mark.line + 1}: an alias refers to a node that holds it")
        total = 1 + sum(sizes[id(c)][0] for c in children)
        depth = 1 + max((sizes[id(c)][1] for c in children), default=0)
        sizes[id(node)] = (min(total, 10 * MAX_NODES), depth)
    return sizes[id(root)]


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def read_bounded(path) -> str:
    """A suite file's text, reading at most MAX_BYTES + 1 bytes: `/dev/zero` or a runaway file is refused,
    not read until memory runs out."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_BYTES + 1)
    except OSError as exc:
        raise SuiteError(f"{path}: cannot read suite file ({exc.strerror})") from None
    if len(data) > MAX_BYTES:
        raise SuiteError(f"{path}: more than {MAX_BYTES:,} bytes; a suite file is at most that")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SuiteError(f"{path}: not UTF-8 text (byte {exc.start}); a suite file is YAML text") from None


def load_yaml(text: str, source: str) -> Any:
    """The document in `text`, or a SuiteError naming `source` and what is wrong (line where known)."""
    if len(text.encode("utf-8", "replace")) > MAX_BYTES:
        raise SuiteError(f"{source}: {len(text):,} characters; a suite file is at most {MAX_BYTES:,} bytes")
    try:
        loader = _UniqueKeyLoader(text)
        try:
            root = loader.get_single_node()
            if root is None:
                return None
            nodes, depth = _measure(root, source)
            if depth > MAX_DEPTH:
                raise SuiteError(f"{source}: nested {depth} levels deep; at most {MAX_DEPTH} are accepted")
            if nodes > MAX_NODES:
                raise SuiteError(f"{source}: expands to more than {MAX_NODES:,} values (anchors and aliases "
                                 "multiply); write the settings out instead")
            return loader.construct_document(root)
        finally:
            loader.dispose()
    except RecursionError:
        raise SuiteError(f"{source}: nested too deeply to read") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark else ""
        raise SuiteError(f"{source}:{where} not valid YAML ({getattr(exc, 'problem', exc)})") from None
