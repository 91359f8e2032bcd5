"""Label text as a table gives it: class names normalised, missing labels recognised, near-duplicates found.

A class name is compared in its NFC form with surrounding whitespace stripped, so `Mélanome` typed on two
keyboards (composed or decomposed accent) or with a trailing space is one class. Two names that still
differ but read alike would split one class in two: names equal once case is folded, invisible (Unicode
format, category Cf) characters are removed, or look-alike letters are mapped to Latin are refused,
naming both spellings.
"""

from __future__ import annotations

import unicodedata
from collections import Counter
from dataclasses import dataclass
from typing import Iterable, Sequence

from crsbench.errors import DataError

# How a missing value is written by the tools that make label tables (spreadsheets, pandas, R).
MISSING_LABELS = frozenset({"", "nan", "na", "n/a", "#n/a", "null", "<na>"})

# Letters that render like Latin ones in common fonts, from the Cyrillic and Greek entries of the Unicode
# Consortium's confusables list (UTS #39); a small subset, enough for names typed on a mixed keyboard.
CONFUSABLES = str.maketrans({
    "а": "a", "е": "e", "о": "o", "р": "p", "с": "c", "х": "x", "у": "y", "і": "i", "ј": "j", "ѕ": "s",
    "ԁ": "d", "һ": "h", "ԛ": "q", "ԝ": "w",
    "А": "A", "В": "B", "Е": "E", "К": "K", "М": "M", "Н": "H", "О": "O", "Р": "P", "С": "C", "Т": "T",
    "Х": "X", "І": "I", "Ј": "J", "Ѕ": "S",
    "ο": "o", "ι": "i", "ν": "v", "Α": "A", "Β": "B", "Ε": "E", "Ζ": "Z", "Η": "H", "Ι": "I", "Κ": "K",
    "Μ": "M", "Ν": "N", "Ο": "O", "Ρ": "P", "Τ": "T", "Υ": "Y", "Χ": "X",
})  # fmt: skip


def normal_label(value: str) -> str:
    """A label as it is compared and stored: NFC, surrounding whitespace stripped."""
    return unicodedata.normalize("NFC", str(value)).strip()


def is_missing(value: str) -> bool:
    """An empty cell or a spreadsheet's NA (`nan`, `NA`, `N/A`, `null`, ...), in any case."""
    return normal_label(value).casefold() in MISSING_LABELS


def _visible(name: str) -> str:
    return "".join(c for c in name if unicodedata.category(c) != "Cf")


def skeleton(name: str) -> str:
    """What two names that read alike share: no format characters, Latin look-alikes, case folded."""
    return _visible(name).translate(CONFUSABLES).casefold()


@dataclass(frozen=True)
class Clash:
    """Two class names that differ but read alike."""

    first: str
    second: str

    @property
    def how(self) -> str:
        """`differ only by case`, `... by invisible characters (U+200B ZERO WIDTH SPACE)`, and so on."""
        both = list(dict.fromkeys(self.first + self.second))
        kinds = [(what, [c for c in both if test(c)]) for what, test in _UNUSUAL]
        ways = [f"{what} ({', '.join(_named(c) for c in chars)})" for what, chars in kinds if chars]
        if _plain(self.first) != _plain(self.second):
            ways.insert(0, "case")
        return "differ only by " + (", ".join(ways[:-1]) + " and " if len(ways) > 1 else "") + ways[-1]


_CONFUSABLE_LETTERS = frozenset(chr(code) for code in CONFUSABLES)
_UNUSUAL = (("invisible characters", lambda c: unicodedata.category(c) == "Cf"),
            ("look-alike letters", lambda c: c in _CONFUSABLE_LETTERS))


def _plain(name: str) -> str:
    return _visible(name).translate(CONFUSABLES)


def _named(char: str) -> str:
    return f"U+{ord(char):04X} {unicodedata.name(char, 'unnamed')}"


def find_clash(names: Iterable[str]) -> Clash | None:
    """The first two distinct names (in the order given) that share a skeleton."""
    seen: dict[str, str] = {}
    for name in names:
        earlier = seen.setdefault(skeleton(name), name)
        if earlier != name:
            return Clash(earlier, name)
    return None


def alike_rows(values: Sequence[str]) -> tuple[Clash, int, int] | None:
    """For a label column's values: the first two spellings that read alike and the rows (from 0) that
    first carry each; None when there are none."""
    first_row: dict[str, int] = {}
    for row, value in enumerate(values):
        first_row.setdefault(value, row)
    clash = find_clash(first_row)
    return None if clash is None else (clash, first_row[clash.first], first_row[clash.second])


def repeated(names: Sequence[str]) -> list[str]:
    """Names given more than once, in the order first given."""
    return [name for name, n in Counter(names).items() if n > 1]


def declared_names(names: Iterable[str], where: str) -> tuple[str, ...]:
    """Declared class names, normalised; two alike (or equal) names are a ValueError naming `where`."""
    normal = tuple(normal_label(n) for n in names)
    twice = repeated(normal)
    if twice:
        raise ValueError(f"{where}: class name {twice[0]!r} is given more than once")
    clash = find_clash(normal)
    if clash is not None:
        raise ValueError(f"{where}: class names {clash.first!r} and {clash.second!r} {clash.how}; "
                         "they would count as two classes")
    return normal


def refuse_repeated_columns(path, header: Sequence[str]) -> None:
    """A header naming a column twice is refused: a CSV reader keeps one of them (csv the last, pandas the
    first), so labels would pair with the wrong image or class counts change without a word. Blank names
    (a spreadsheet's trailing commas) name no column and may repeat."""
    named = [str(c).strip() for c in header]
    twice = [c for c in repeated(named) if c]
    if twice:
        positions = [str(i + 1) for i, c in enumerate(named) if c == twice[0]]
        raise DataError(f"{path}: column '{twice[0]}' appears {len(positions)} times in the header (columns "
                        f"{', '.join(positions)}); rename or remove all but one")
