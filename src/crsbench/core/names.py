"""Whether names a reader tells apart by eye are really different: the rules a name from an untrusted
source (an encoder label, a task) must pass before it is shown beside others.

Written after Unicode Technical Standard #39 (Unicode Security Mechanisms), in a reduced form this
project keeps itself: a name's *skeleton* is its NFKC form, case-folded, with invisible characters and
combining marks removed and the Cyrillic and Greek letters that are drawn like Latin ones mapped to
those; two names with one skeleton are confusable. A name on its own is refused when it holds an
invisible or control character (format characters, default-ignorable fillers such as the Hangul ones),
a run of combining marks (they stack into a tall smear), or letters of Latin mixed with Cyrillic or
Greek (the single-script rule of UTS #39's restriction levels). Every problem names its code points.
"""

from __future__ import annotations

import unicodedata
from collections import defaultdict
from collections.abc import Iterable

from crsbench.core.printable import BLANK

MAX_COMBINING = 2  # marks on one base letter: enough for Vietnamese, not for a stack that stretches a row


# Cyrillic and Greek letters drawn like a Latin letter (lower case; names are case-folded first)
_LIKE_LATIN = str.maketrans({
    "а": "a", "в": "b", "е": "e", "ё": "e", "һ": "h", "і": "i", "ї": "i", "ј": "j", "к": "k", "ӏ": "l",
    "м": "m", "н": "h", "о": "o", "р": "p", "с": "c", "т": "t", "у": "y", "х": "x", "ѕ": "s", "ԁ": "d",
    "ԛ": "q", "ԝ": "w", "ү": "y", "ɡ": "g", "ʏ": "y",
    "α": "a", "β": "b", "ε": "e", "η": "n", "ι": "i", "κ": "k", "ν": "v", "ο": "o", "ρ": "p", "τ": "t",
    "υ": "u", "χ": "x", "ω": "w", "ϲ": "c", "ϳ": "j",
})
_SCRIPTS = ("LATIN", "CYRILLIC", "GREEK")


def code_point(char: str) -> str:
    fallback = "<control>" if unicodedata.category(char) == "Cc" else "unnamed"
    return f"U+{ord(char):04X} {unicodedata.name(char, fallback)}"


def shown(name: str, length: int = 48) -> str:
    """A name as a message quotes it: every character beyond ASCII written as its escape (so a message about
    a name that looks like another shows how they differ), cut to about `length` characters of that, never
    inside an escape."""
    out, used = [], 0
    for char in name:
        piece = char if char.isascii() and char.isprintable() else \
            (f"\\x{ord(char):02x}" if ord(char) < 0x100 else f"\\u{ord(char):04x}" if ord(char) < 0x10000 else f"\\U{ord(char):08x}")
        if used + len(piece) > length:
            return "'" + "".join(out) + "'..."
        out.append(piece)
        used += len(piece)
    return "'" + "".join(out) + "'"


def _invisible(char: str) -> bool:
    return unicodedata.category(char) in ("Cc", "Cf", "Zl", "Zp") or ord(char) in BLANK or (
        unicodedata.category(char) == "Zs" and char != " ")


def _script(char: str) -> str | None:
    if not char.isalpha():
        return None
    name = unicodedata.name(char, "")
    return next((s for s in _SCRIPTS if name.startswith(s)), None)


def skeleton(name: str) -> str:
    """The form two names share when a reader cannot tell them apart (UTS #39, reduced: see above)."""
    folded = unicodedata.normalize("NFKC", name).casefold()
    bare = "".join(c for c in unicodedata.normalize("NFD", folded)
                   if not _invisible(c) and not unicodedata.combining(c))
    return unicodedata.normalize("NFC", bare.translate(_LIKE_LATIN)).strip()


def problems(name: str) -> list[str]:
    """What makes `name` unsafe to show on its own, each naming its code points; empty when none."""
    found = []
    hidden = sorted({c for c in name if _invisible(c)})
    if hidden:
        found.append("invisible or control character(s) " + ", ".join(map(code_point, hidden[:4])))
    run, longest, marks = 0, 0, set()
    for char in unicodedata.normalize("NFD", name):
        run = run + 1 if unicodedata.combining(char) else 0
        longest = max(longest, run)
        if run:
            marks.add(char)
    if longest > MAX_COMBINING:
        found.append(f"{longest} combining marks on one letter ({', '.join(map(code_point, sorted(marks)[:3]))})")
    scripts = defaultdict(list)
    for char in name:
        script = _script(char)
        if script:
            scripts[script].append(char)
    if len(scripts) > 1:
        minority = sorted(scripts, key=lambda s: len(scripts[s]))[0]
        found.append(f"letters of {' and '.join(sorted(scripts))} mixed ({', '.join(map(code_point, sorted(set(scripts[minority]))[:3]))})")
    if not skeleton(name):
        found.append("nothing visible")
    return found


def confusable_groups(names: Iterable[str]) -> list[list[str]]:
    """The sets of different names that share a skeleton, each sorted, in the order of their skeletons."""
    by_skeleton: dict[str, set[str]] = defaultdict(set)
    for name in names:
        by_skeleton[skeleton(name)].add(name)
    return [sorted(group) for _, group in sorted(by_skeleton.items()) if len(group) > 1]


def differing_code_points(group: list[str]) -> str:
    """The code points that set the names of a confusable group apart, for the message."""
    shared = set.intersection(*(set(n) for n in group))
    apart = sorted(set().union(*(set(n) for n in group)) - shared)
    return ", ".join(map(code_point, apart[:4])) or "the same letters in another order or form"
