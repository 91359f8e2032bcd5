"""The name rules (a reduced form of Unicode TS #39): what two names share when a reader cannot tell them
apart, and what makes one name unsafe to show on its own."""

from __future__ import annotations

import pytest

from crsbench.core.names import confusable_groups, problems, shown, skeleton
from crsbench.core.printable import printable


@pytest.mark.parametrize("a, b", [
    ("pixels-8", "pixels-\uff18"),  # fullwidth digit: NFKC
    ("colour", "c\u043elour"),  # Cyrillic o
    ("colour", "c\u03bflour"),  # Greek omicron
    ("Derm", "derm"),  # case
    ("derm", "de\u200brm"),  # zero-width space
    ("derm", "derm\u3164"),  # Hangul filler
    ("cafe", "cafe\u0301"),  # a combining mark
])
def test_names_a_reader_cannot_tell_apart_share_a_skeleton(a, b):
    assert skeleton(a) == skeleton(b)
    assert confusable_groups([a, b, "other"]) == [sorted([a, b])]


@pytest.mark.parametrize("name", ["pixels-8", "dinov2-vitb14", "biomedclip", "caf\u00e9", "Vi\u1ec7t", "\u0434\u0435\u0440\u043c"])
def test_plain_names_of_one_script_have_no_problem(name):
    assert problems(name) == []


@pytest.mark.parametrize("name, said", [
    ("pi\u0445els", "letters of CYRILLIC and LATIN mixed (U+0445 CYRILLIC SMALL LETTER HA)"),
    ("derm\u3164", "invisible or control character(s) U+3164 HANGUL FILLER"),
    ("derm\x1b[2J", "invisible or control character(s) U+001B <control>"),
    ("derm\u202e", "invisible or control character(s) U+202E RIGHT-TO-LEFT OVERRIDE"),
    ("derm" + "\u0301" * 3, "3 combining marks on one letter (U+0301 COMBINING ACUTE ACCENT)"),
    ("\u200b", "nothing visible"),
])
def test_an_unsafe_name_is_named_by_its_code_points(name, said):
    assert any(said in p for p in problems(name)), problems(name)


def test_a_name_is_quoted_escaped_and_cut_never_inside_an_escape():
    assert shown("pixels-\uff18") == "'pixels-\\uff18'"
    assert shown("derm\x1b[2J") == "'derm\\x1b[2J'"
    cut = shown("d" + "\u0301" * 100)
    assert cut.endswith("\\u0301'...") and len(cut) <= 48 + 5


def test_printable_escapes_the_blank_letters_too():
    assert printable("a\u3164b\u115fc") == "a\\u3164b\\u115fc"
