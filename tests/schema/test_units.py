"""The one byte formatter: automatic unit, a fixed unit (the CLI's KiB column, the plots' unit);
the one way a count meets its noun; places counted from 1."""

from __future__ import annotations

import pytest

from gradviz.schema.units import KIB, UNITS, choose_unit, counted, format_bytes, ordinal


@pytest.mark.parametrize(
    ("n", "text"),
    [(0, "0 B"), (768, "768 B"), (1023, "1,023 B"), (1536, "1.5 KiB"), (5 * 2**20, "5.0 MiB"), (3 * 2**40, "3.0 TiB")],
)
def test_the_unit_is_the_largest_that_keeps_the_number_at_least_one(n, text):
    assert format_bytes(n) == text


def test_a_fixed_unit_is_kept_whatever_the_size_and_thousands_are_separated():
    assert format_bytes(512, KIB) == "0.5 KiB"
    assert format_bytes(3 * 2**20, KIB) == "3,072.0 KiB"
    assert format_bytes(2048, UNITS[0]) == "2,048 B"


@pytest.mark.parametrize(
    ("n", "unit", "text"),
    [(1536, KIB, "1.50 KiB"), (17.1 * 2**20, UNITS[2], "17.1 MiB"), (300 * 2**10, KIB, "300 KiB"), (384, None, "384 B")],
)
def test_three_figures_for_the_plots(n, unit, text):
    assert format_bytes(n, unit, three_figures=True) == text


def test_choose_unit_reads_the_size_not_its_sign():
    assert choose_unit(-2048) == KIB and choose_unit(0) == UNITS[0]
    assert format_bytes(-1536) == "-1.5 KiB"


@pytest.mark.parametrize(
    ("n", "noun", "plural", "text"),
    [(1, "leaf", "leaves", "1 leaf"), (2, "leaf", "leaves", "2 leaves"), (0, "node", None, "0 nodes"),
     (1, "node", None, "1 node"), (1234, "failing cell", None, "1,234 failing cells")],
)
def test_a_count_takes_the_noun_in_its_number(n, noun, plural, text):
    assert counted(n, noun, plural) == text


@pytest.mark.parametrize(
    ("n", "text"),
    [(1, "1st"), (2, "2nd"), (3, "3rd"), (4, "4th"), (11, "11th"), (12, "12th"), (13, "13th"), (21, "21st"), (112, "112th")],
)
def test_places_counted_from_one(n, text):
    assert ordinal(n) == text
