"""User strings made safe to print: control and invisible formatting characters shown, not obeyed.

A suite, encoder or class name is user input, and it reaches terminals, HTML, Markdown and SVG. An ESC
rewrites a terminal, a BEL rings it, a right-to-left override reverses what a reader sees, and a
zero-width space makes two different names print alike. Each becomes a visible escape (`\\x1b`,
`\\u202e`); newlines and tabs are kept where the output allows them.
"""

from __future__ import annotations

import re
import unicodedata

KEPT = frozenset("\n\t")
# default-ignorable code points outside Cc and Cf that draw nothing (Hangul fillers, the combining grapheme
# joiner, variation selectors, the Mongolian free variation selectors, the braille blank)
BLANK = frozenset([0x034F, 0x115F, 0x1160, 0x17B4, 0x17B5, 0x2800, 0x3164, 0xFFA0, *range(0x180B, 0x1810),
                   *range(0xFE00, 0xFE10), *range(0xE0100, 0xE01F0)])


def _escape(char: str) -> str:
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def _hidden(char: str) -> bool:
    # Cc: control characters; Cf: invisible formatting (bidi overrides, zero-width spaces and joiners)
    return char not in KEPT and (unicodedata.category(char) in ("Cc", "Cf") or ord(char) in BLANK)


def printable(text: object) -> str:
    """`str(text)` with every control or invisible formatting character written as an escape."""
    value = str(text)
    if not any(_hidden(c) for c in value):
        return value
    return "".join(_escape(c) if _hidden(c) else c for c in value)


def same_length(text: str) -> str:
    """For styled text whose spans index characters: each hidden character becomes one U+FFFD."""
    return "".join("\ufffd" if _hidden(c) else c for c in text)


def prose_html(text: object):
    """A sentence of ours for an HTML page: made printable and escaped as every user string is, then its
    `code spans` (notes and captions quote option and field names so, as the terminal prints them) set as
    <code>. Marked safe for an autoescaping template: nothing in it is left unescaped."""
    from markupsafe import Markup, escape

    return Markup(re.sub(r"`([^`\n]+)`", r"<code>\1</code>", str(escape(printable(str(text))))))
